#include "kit/test.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <set>
#include <sstream>

namespace kit {

namespace {
std::vector<TestMeta>& registry() {
  static std::vector<TestMeta> tests;
  return tests;
}

std::string fixed(double value, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << value;
  return out.str();
}
}  // namespace

bool register_test(const TestMeta& meta) {
  registry().push_back(meta);
  return true;
}

const std::vector<TestMeta>& registered_tests() { return registry(); }

Random test_random() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string name =
      info ? std::string(info->test_suite_name()) + "." + info->name() : std::string("no-test");
  return Random::for_name(name);
}

namespace {
std::vector<std::pair<std::string, void (*)()>>& before_turn() {
  static std::vector<std::pair<std::string, void (*)()>> hooks;
  return hooks;
}

// The fixture of a full test name: "Chunks/EventsTimeline.Times/n_33" is EventsTimeline's.
std::string fixture_of(const std::string& test) {
  const std::string suite = test.substr(0, test.find('.'));
  const std::size_t slash = suite.rfind('/');
  return slash == std::string::npos ? suite : suite.substr(slash + 1);
}
}  // namespace

bool register_before_turn(const char* suite, void (*prepare)()) {
  before_turn().emplace_back(suite, prepare);
  return true;
}

int run_before_turn(const std::string& filter) {
  // KIT_BEFORE_TURN=0 leaves the setup to the tests (bench-grader --versus compares the two).
  const char* setting = std::getenv("KIT_BEFORE_TURN");
  if (setting != nullptr && std::string(setting) == "0") return 0;
  std::set<std::string> fixtures;
  std::size_t begin = 0;
  while (begin <= filter.size()) {
    const std::size_t end = std::min(filter.find(':', begin), filter.size());
    fixtures.insert(fixture_of(filter.substr(begin, end - begin)));
    begin = end + 1;
  }
  int ran = 0;
  for (const auto& [suite, prepare] : before_turn()) {
    if (fixtures.count(suite) == 0) continue;
    try {
      prepare();
      ++ran;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "kit: %s's setup ahead of its turn failed (its test does it): %s\n",
                   suite.c_str(), e.what());
    } catch (...) {
      std::fprintf(stderr, "kit: %s's setup ahead of its turn failed (its test does it)\n",
                   suite.c_str());
    }
  }
  return ran;
}

namespace {
bool sanitized_by_runner = false;
}  // namespace

void set_sanitized(bool sanitized) { sanitized_by_runner = sanitized; }

bool under_compute_sanitizer() {
  if (sanitized_by_runner) return true;
  std::ifstream maps("/proc/self/maps");
  const std::string text{std::istreambuf_iterator<char>(maps), std::istreambuf_iterator<char>()};
  return text.find("libsanitizer-collection") != std::string::npos;
}

void GpuTest::SetUp() {
  static const DeviceInfo device = query_device();
  if (!device.available) {
    // The runner excuses a test whose reason is exactly this on a machine without a GPU; the
    // device's own reason (no driver, an old driver) is in the message and in --kit_device.
    RecordProperty("not_run", kNoDeviceReason);
    GTEST_SKIP() << "not run: " << summary(device);
  }
  RecordProperty("seed", std::to_string(run_seed()));
}

void GpuTest::TearDown() {
  if (IsSkipped()) return;
  // A kernel fault is reported at the next synchronising call; make sure it lands in this test.
  const cudaError_t status = cudaDeviceSynchronize();
  if (status != cudaSuccess)
    ADD_FAILURE() << "the test left a CUDA error on the device: " << cudaGetErrorString(status)
                  << " (" << cudaGetErrorName(status) << ")\n"
                  << seed_note();
}

namespace {
bool& profiled_flag() {
  static bool profiled = false;
  return profiled;
}
}  // namespace

void set_counters_profiled(bool profiled) { profiled_flag() = profiled; }
bool counters_profiled() { return profiled_flag(); }

void CounterTest::SetUp() {
  GpuTest::SetUp();
  if (IsSkipped()) return;
  if (!counters_profiled()) {
    static constexpr char kReason[] = "counters are read only under Nsight Compute, by the runner";
    RecordProperty("not_run", kReason);
    GTEST_SKIP() << "not run: " << kReason << " (python3 grader/kit.py grade runs this test)";
  }
}

void CounterTest::expect_counters(std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    // Read by grader/kitgrade/counters.py, which compares ncu's readings with them.
    RecordProperty(std::string("counter_bar:") + key, fixed(threshold(key), 3));
    RecordProperty(std::string("counter_section:") + key, threshold_section(key));
  }
}

void PerfTest::SetUp() {
  GpuTest::SetUp();
  if (IsSkipped()) return;
  const DeviceInfo device = query_device();
  RecordProperty("gpu", summary(device));
  RecordProperty("sm_clock_mhz", std::to_string(device.current_sm_clock_mhz));
}

void PerfTest::expect_ratio_at_least(const Timed& student, const Timed& ceiling,
                                     const std::string& threshold_key, const char* unit,
                                     double unit_scale) {
  const double bar = threshold(threshold_key);
  const ThroughputComparison result = compare_throughput(student, ceiling, bar);
  RecordProperty("ratio", fixed(result.ratio.median, 3));
  RecordProperty("threshold", fixed(bar, 3));
  RecordProperty("threshold_key", threshold_key);
  const std::string section = threshold_section(threshold_key);
  RecordProperty("threshold_section", section);
  RecordProperty("spread", fixed(result.ratio.spread(), 3));
  RecordProperty("samples", std::to_string(result.ratio.n));
  RecordProperty("batches", std::to_string(result.batches));
  RecordProperty("pairs", std::to_string(result.pairs));
  RecordProperty("stopped", result.stopped);
  RecordProperty("student_rate", fixed(result.student_rate * unit_scale, 1) + " " + unit);
  RecordProperty("ceiling_rate", fixed(result.ceiling_rate * unit_scale, 1) + " " + unit);
  if (result.timing_mismatches > 0) {
    // The worker's clock disagreed with the judge's (kit/remote.h): the judge's times were used.
    RecordProperty("timing_mismatches", std::to_string(result.timing_mismatches));
    RecordProperty("measurements", std::to_string(result.measurements));
    std::printf("[ kit perf ] %d of the student's timed runs took longer by the judge's clock than "
                "the worker reported; the judge's times were used\n",
                result.timing_mismatches);
  }

  std::ostringstream line;
  line << student.name << ": " << fixed(result.student_rate * unit_scale, 1) << " " << unit
       << " vs " << ceiling.name << " " << fixed(result.ceiling_rate * unit_scale, 1) << " " << unit
       << " -> ratio " << fixed(result.ratio.median, 3) << " (quartiles " << fixed(result.ratio.q1, 3)
       << ".." << fixed(result.ratio.q3, 3) << ", " << result.stopped << "), threshold "
       << fixed(bar, 2) << "; " << summary(query_device());
  std::printf("[ kit perf ] %s\n", line.str().c_str());
  const std::string clocks =
      result.timing_mismatches == 0
          ? ""
          : "\n" + std::to_string(result.timing_mismatches) +
                " timed runs took longer by the judge's clock than your process reported (work "
                "on another stream, or a timer that lies?): the judge's times were used" +
                (result.measurements > 1
                     ? " (measured " + std::to_string(result.measurements) + " times, same each time)"
                     : "");
  EXPECT_TRUE(result.passed) << line.str() << clocks << "\nthe median ratio must be at least "
                             << fixed(bar, 2) << " (threshold '" << threshold_key
                             << "' in " << thresholds_path() << ", section " << section << ")";
}

}  // namespace kit
