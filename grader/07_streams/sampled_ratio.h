// A ratio threshold decided from repeated samples, for perf tests whose ratio is not one student
// kernel timed against one ceiling (kit::compare_throughput's case): here each sample is a whole
// round of measurements, e.g. an ideal pipeline time computed from three stages timed alone,
// divided by the time the student's pipeline took in the same round.
//
// Generic on purpose (nothing in it is about streams): a candidate for common/ (kit/stats.h or
// kit/timing.h, and PerfTest) once a second lab needs it.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "kit/stats.h"
#include "kit/timing.h"

namespace kit {

/// The verdict on "ratio >= threshold" from a sample of ratios.
struct SampledRatio {
  Summary ratio;        ///< the ratios measured, all batches together
  int batches = 0;      ///< batches measured (more than 1 when the first left the verdict open)
  bool passed = false;  ///< by the rule of compare_throughput(): kit::decide(), then the median
};

/// Calls `sample` (one round, one ratio) options.samples times per batch, and measures another
/// batch while kit::decide() leaves the verdict open, up to options.max_batches; then the median
/// decides. Warm-up rounds are the caller's business (options.warmup is not used).
inline SampledRatio sample_ratio(const std::function<double()>& sample, double threshold,
                                 const TimingOptions& options = {}) {
  std::vector<double> ratios;
  SampledRatio result;
  for (result.batches = 1;; ++result.batches) {
    for (int i = 0; i < options.samples; ++i) ratios.push_back(sample());
    result.ratio = summarize(ratios);
    const Decision d = decide(result.ratio, threshold, options.max_spread);
    if (d != Decision::undecided || result.batches >= options.max_batches) {
      result.passed =
          d == Decision::pass || (d == Decision::undecided && result.ratio.median >= threshold);
      return result;
    }
  }
}

/// `value` with `digits` decimals.
inline std::string format_fixed(double value, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << value;
  return out.str();
}

/// Records the properties PerfTest::expect_ratio_at_least records (ratio, threshold, spread,
/// samples), so the reports show this result like any other perf result; PerfTest::SetUp has
/// already recorded the GPU. `student` and `ceiling` fill the reports' "X vs ceiling Y" slot.
inline void record_sampled_ratio(const SampledRatio& result, double threshold,
                                 const std::string& student, const std::string& ceiling) {
  ::testing::Test::RecordProperty("ratio", format_fixed(result.ratio.median, 3));
  ::testing::Test::RecordProperty("threshold", format_fixed(threshold, 3));
  ::testing::Test::RecordProperty("spread", format_fixed(result.ratio.spread(), 3));
  ::testing::Test::RecordProperty("samples", std::to_string(result.ratio.n));
  ::testing::Test::RecordProperty("student_rate", student);
  ::testing::Test::RecordProperty("ceiling_rate", ceiling);
}

}  // namespace kit
