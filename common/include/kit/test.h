/// @file test.h
/// @brief The grading vocabulary: tests that declare their lab step, kind, points and title where
/// they are defined, fixtures that report "not run: no CUDA device", and output checks whose
/// failure messages tell a student what to fix.
///
/// @code
/// KIT_TEST(IndexingHost, GridSizeRoundsUp, "indexing.1", host, 2,
///          "grid_size_1d rounds up: 1000 elements in blocks of 256 need 4 blocks") {
///   EXPECT_EQ(lab01::grid_size_1d(1000, 256), 4u);
/// }
/// @endcode
///
/// Each test runs in its own process under the runner (grader/kit.py), which reads the declared
/// points with `--kit_list` before running anything, so a test that crashes still has a verdict.
///
/// A hidden test (`KIT_HIDDEN_TEST`, `KIT_HIDDEN_TEST_P`) is an instructor-only test kept in
/// grader/NN_name/hidden/, a folder a student edition does not have: it is graded in the
/// instructor's copy only, and reported with the lab's `hidden_visibility` (lab.json).
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "kit/buffers.h"
#include "kit/compare.h"
#include "kit/device_info.h"
#include "kit/diagnose.h"
#include "kit/launch.h"
#include "kit/random.h"
#include "kit/staged.h"
#include "kit/thresholds.h"
#include "kit/timing.h"

namespace kit {

/// What a test needs: `host` runs anywhere; `gpu` checks correctness on a GPU; `timed` checks
/// correctness on a GPU by comparing durations (e.g. a stage is as long as its work needs), so the
/// runner runs it on its own, after the host and gpu tests, never beside another test; `perf`
/// measures against a ceiling, also on its own, and scores only when every correctness test
/// (every kind but perf and counter) of its lab passed.
///
/// `memcheck`, `racecheck`, `synccheck` and `initcheck` are gpu tests that the runner runs, each in
/// a process of its own, under compute-sanitizer's tool of that name: one passes only when its own
/// checks pass and the tool reports nothing (docs/grading.md, "Sanitizer steps"). Without
/// compute-sanitizer or a GPU they are not run, never passed. Keep them small: the tool starts in
/// seconds and slows every kernel many times over.
///
/// `counter`: a CounterTest, whose run the runner watches with Nsight Compute (ncu), alone and
/// after the timed tests; it passes only when its own checks pass and ncu's readings of the
/// student's kernels keep within their bars (docs/grading.md, "Counter checks"). Without ncu or
/// permission to read the GPU's counters it is not run, never passed. A counter test neither
/// gates the perf tests nor is gated by them.
enum class Kind { host, gpu, timed, perf, memcheck, racecheck, synccheck, initcheck, counter };

/// The grading metadata of one test (or one parameterized test pattern).
struct TestMeta {
  std::string suite;
  std::string name;
  std::string step;
  Kind kind;
  int points;
  std::string title;
  bool hidden = false;  ///< declared with KIT_HIDDEN_TEST: an instructor-only test
};

/// Adds `meta` to the registry that `--kit_list` prints; returns true so it can initialise a static.
bool register_test(const TestMeta& meta);

/// Everything registered in this binary.
const std::vector<TestMeta>& registered_tests();

/// A random generator for the running test, from the run's seed and the test's full name.
Random test_random();

/// True when compute-sanitizer has loaded its library into this process (Linux), or the runner
/// said it started this process under the tool (set_sanitized). Under it, kernels
/// and copies take many times longer, so a check that compares durations means nothing there: a
/// test may leave such a check out, and must then end skipped (never passed), so that a process
/// that only looks sanitized earns nothing by it.
bool under_compute_sanitizer();
/// Marks this process as started by the runner under compute-sanitizer (the judge's
/// --kit_sanitized flag): under_compute_sanitizer() is then true, also where the tool follows the
/// worker alone and leaves no library in the judge.
void set_sanitized(bool sanitized);

/// Base fixture for tests that need no GPU.
class HostTest : public ::testing::Test {};

/// Base fixture for GPU tests: skipped as "not run: no CUDA device" without one (the runner reports
/// that, never a pass); afterwards any error the test left on the device fails the test.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
};

/// GpuTest for value-parameterized tests.
template <class Param>
class GpuTestWithParam : public GpuTest, public ::testing::WithParamInterface<Param> {};

/// Base fixture for performance tests: a GpuTest that records the GPU it measured on.
class PerfTest : public GpuTest {
 protected:
  void SetUp() override;

  /// Times `student` against `ceiling`, records the ratio, threshold, spread, rates and GPU as
  /// test properties (the runner reports them), prints a summary line, and fails the test when the
  /// ratio misses `threshold(threshold_key)`. `unit` names the rate unit (e.g. "GB/s") and
  /// `unit_scale` converts work/s to it.
  void expect_ratio_at_least(const Timed& student, const Timed& ceiling,
                             const std::string& threshold_key, const char* unit, double unit_scale);
};

/// Base fixture for counter tests (kind `counter`): a GpuTest that calls the student's code on
/// small fixed shapes, checks its results as any gpu test does (so a stub, or code that is wrong,
/// fails here and earns nothing), then names with expect_counters() the keys of
/// grader/thresholds.conf whose counters every launch of the student's kernels in the test must
/// keep within their bars. The process cannot read its own counters (ncu reports them once it
/// ends): each key's bar goes into the signed verdict, and the runner, which started the process
/// under ncu, compares (grader/kitgrade/counters.py). Run any other way, the test is skipped.
///
/// Every kernel profiled in the test is held to the bars, so a counter test launches none of the
/// judge's own, and calls nothing that updates its data in place (ncu may replay a kernel).
class CounterTest : public GpuTest {
 protected:
  void SetUp() override;

  /// Records each key's bar (this build's, on this GPU) and section for the runner. A key is
  /// `<lab>.<counter>`, the counter one of grader/kitgrade/counters.py (e.g.
  /// "coalescing.global_sectors_vs_ideal"); its bars are the most the counter may read.
  void expect_counters(std::initializer_list<const char*> keys);
};

/// Marks this process as started by the runner under Nsight Compute for its counter tests (the
/// judge's --kit_counters flag); CounterTest skips itself otherwise.
void set_counters_profiled(bool profiled);
/// True after set_counters_profiled(true): the judge then starts its worker so that Nsight Compute
/// can profile it (remote_worker.cu).
bool counters_profiled();

/// Setup a test suite may do ahead of its turn. A process the runner starts early for its timed or
/// perf tests (kitgrade.protocol.StartSignal) makes its CUDA contexts, then calls `prepare` of each
/// suite that has a test in its --gtest_filter, and only then reports itself ready and waits,
/// while other tests run on the GPU. So `prepare` must launch nothing and time nothing, call no
/// student code (that runs inside a test, which gets its verdict), and do only what the suite's
/// first test would do anyway (allocate and fill the judge's own host buffers, say). An
/// exception it throws is dropped, and the test then does the work itself. Returns true so it can
/// initialise a static (KIT_BEFORE_TURN).
bool register_before_turn(const char* suite, void (*prepare)());
/// Calls the `prepare` of each suite named in `filter` (a --gtest_filter of exact test names,
/// as the runner gives) and returns how many ran; none where KIT_BEFORE_TURN is 0.
int run_before_turn(const std::string& filter);

namespace detail {
/// Whether every element of the device array `device` (expected.size() elements) is within `tol`
/// of `expected`, by the rule of compare_values(), read chunk by chunk through pinned memory
/// (download_staged) and compared on several cores: the pass path of a large output or input,
/// which needs no host copy of it. It stops at the first chunk with a mismatch.
template <class T>
bool device_values_within(const std::vector<T>& expected, const T* device, const Tolerance& tol) {
  bool ok = true;
  const auto compare_chunk = [&](const void* chunk, std::size_t offset, std::size_t bytes) {
    const T* got = static_cast<const T*>(chunk);
    const T* want = expected.data() + offset / sizeof(T);
    const std::size_t count = bytes / sizeof(T);
    std::vector<char> bad(part_count(count), 0);
    parallel_parts(count, bad.size(), [&](std::size_t k, std::size_t begin, std::size_t end) {
      bad[k] = compare_range(want, got, begin, end, tol, 0).mismatches != 0;
    });
    ok = std::find(bad.begin(), bad.end(), 1) == bad.end();
    return ok;
  };
  download_staged(device, expected.size() * sizeof(T), compare_chunk);
  return ok;
}
}  // namespace detail

/// Checks a guarded device output against `expected`: no write outside it, every element written,
/// every element within `tol`. The failure message names elements, owners under `launch`, and the
/// seed. `what` names the output ("y", "out").
template <class T>
::testing::AssertionResult output_matches(const std::string& what, const std::vector<T>& expected,
                                          const GuardedBuffer<T>& out, const Tolerance& tol,
                                          const Shape& shape, const Launch& launch) {
  // KIT_TRACE: what came before (expected values, poison, the kernel), the download, the compare.
  const bool large = expected.size() >= (1u << 20);
  if (large) trace("checking " + std::to_string(expected.size()) + " " + what);
  std::string problems;
  const auto hits = out.guard_writes();
  if (!hits.empty()) problems += what + ": " + describe_guard_writes(hits, out.size()) + "\n";
  // A large output that passes is compared as it comes through pinned memory; any other is
  // downloaded whole, and its comparison (the same rule, element by element) writes the message.
  if (large && hits.empty() && expected.size() == out.size() &&
      detail::device_values_within(expected, out.data(), tol)) {
    trace("checked " + std::to_string(expected.size()) + " " + what + " (staged)");
    return ::testing::AssertionSuccess();
  }
  const std::vector<T> got = out.download();
  if (large) trace("downloaded " + std::to_string(expected.size()) + " " + what);
  const Comparison cmp = compare_values(expected, got, tol);
  if (!cmp.ok()) {
    problems += describe_mismatches(what, cmp, tol, shape, &launch) + "\n";
    problems += likely_mistake(expected, got, tol, shape, &launch);
  }
  if (large) trace("checked " + std::to_string(expected.size()) + " " + what);
  if (problems.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << problems << seed_note();
}

/// Checks that a kernel left its input `what` unchanged (a kernel must not use it as scratch).
template <class T>
::testing::AssertionResult input_unchanged(const std::string& what, const DeviceBuffer<T>& input,
                                           const std::vector<T>& original) {
  const Tolerance exact = Tolerance::exact("inputs are read-only");
  if (original.size() >= (1u << 20) && original.size() == input.size() &&
      detail::device_values_within(original, input.data(), exact))
    return ::testing::AssertionSuccess();
  const Comparison cmp = compare_values(original, input.download(), exact);
  if (cmp.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "input " << what << " was modified by the kernel: " << cmp.mismatches
         << " elements changed, first at index " << cmp.first.front().index
         << " (inputs are read-only)\n"
         << seed_note();
}

}  // namespace kit

/// Prints a dim3 as (x,y,z) in GoogleTest messages (it must live in dim3's namespace).
inline void PrintTo(const dim3& d, std::ostream* os) {
  *os << "(" << d.x << "," << d.y << "," << d.z << ")";
}

#define KIT_TEST_REGISTER_(Fixture, Name, step, kind, points, title, hidden)                 \
  [[maybe_unused]] static const bool kit_registered_##Fixture##_##Name =                        \
      ::kit::register_test({#Fixture, #Name, step, ::kit::Kind::kind, points, title, hidden})

/// A graded test: `TEST_F(Fixture, Name)` plus its lab step, kind (host, gpu, timed, perf, a
/// compute-sanitizer tool: memcheck, racecheck, synccheck, initcheck, or counter), points and a
/// human title, declared together.
#define KIT_TEST(Fixture, Name, step, kind, points, title)             \
  KIT_TEST_REGISTER_(Fixture, Name, step, kind, points, title, false); \
  TEST_F(Fixture, Name)

/// A graded value-parameterized test: each instance is worth `points`.
#define KIT_TEST_P(Fixture, Name, step, kind, points, title)           \
  KIT_TEST_REGISTER_(Fixture, Name, step, kind, points, title, false); \
  TEST_P(Fixture, Name)

/// Registers `prepare` as `Fixture`'s setup ahead of its turn (kit::register_before_turn).
#define KIT_BEFORE_TURN(Fixture, prepare)                                    \
  [[maybe_unused]] static const bool kit_before_turn_##Fixture =             \
      ::kit::register_before_turn(#Fixture, prepare)

/// KIT_TEST for a hidden test: written in grader/NN_name/hidden/ (instructor only), listed with
/// `"hidden": true`, reported with the lab's `hidden_visibility`.
#define KIT_HIDDEN_TEST(Fixture, Name, step, kind, points, title)     \
  KIT_TEST_REGISTER_(Fixture, Name, step, kind, points, title, true); \
  TEST_F(Fixture, Name)

/// KIT_TEST_P for a hidden test: each instance is worth `points`.
#define KIT_HIDDEN_TEST_P(Fixture, Name, step, kind, points, title)   \
  KIT_TEST_REGISTER_(Fixture, Name, step, kind, points, title, true); \
  TEST_P(Fixture, Name)
