// Reporting a ratio threshold decided from repeated samples (kit::sample_ratio, in kit/timing.h),
// for perf tests whose ratio is not one student kernel timed against one ceiling
// (kit::compare_throughput's case): here each sample is a whole round of measurements, e.g. an
// ideal pipeline time computed from three stages timed alone, divided by the time the student's
// pipeline took in the same round.
//
// Generic on purpose (nothing in it is about streams): a candidate for common/ (kit/test.h, next
// to PerfTest) once a second lab needs it.
#pragma once

#include <gtest/gtest.h>

#include <iomanip>
#include <sstream>
#include <string>

#include "kit/thresholds.h"
#include "kit/timing.h"

namespace kit {

/// `value` with `digits` decimals.
inline std::string format_fixed(double value, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << value;
  return out.str();
}

/// Records the properties PerfTest::expect_ratio_at_least records (ratio, threshold, its section,
/// spread, samples, batches, pairs, how the sampling stopped), so the reports show this result
/// like any other perf result; PerfTest::SetUp has already recorded the GPU. `student` and
/// `ceiling` fill the reports' "X vs ceiling Y" slot; `unit` names one sample in "stopped"
/// (describe_stop()).
inline void record_sampled_ratio(const SampledRatio& result, double threshold,
                                 const std::string& threshold_key, const std::string& student,
                                 const std::string& ceiling, const std::string& unit = "pairs") {
  ::testing::Test::RecordProperty("ratio", format_fixed(result.ratio.median, 3));
  ::testing::Test::RecordProperty("threshold", format_fixed(threshold, 3));
  ::testing::Test::RecordProperty("threshold_key", threshold_key);
  ::testing::Test::RecordProperty("threshold_section", threshold_section(threshold_key));
  ::testing::Test::RecordProperty("spread", format_fixed(result.ratio.spread(), 3));
  ::testing::Test::RecordProperty("samples", std::to_string(result.ratio.n));
  ::testing::Test::RecordProperty("batches", std::to_string(result.batches));
  ::testing::Test::RecordProperty("pairs", std::to_string(result.pairs));
  ::testing::Test::RecordProperty("stopped", describe_stop(result, unit));
  ::testing::Test::RecordProperty("student_rate", student);
  ::testing::Test::RecordProperty("ceiling_rate", ceiling);
}

}  // namespace kit
