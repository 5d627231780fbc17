// Grader of lab 05, Step 1 (a branch at warp granularity) and the branch half of the performance
// step. The reductions are graded in test_reduce.cu, the divergence model in test_model.cpp.
//
//   python3 grader/kit.py grade 05            every test, each in its own process, with a score
//   build/bin/grade_05_divergence --gtest_filter='Branch*:*/Branch*'    these tests, one process
//
// The per-lane kernel the student's is timed against is the grader's own (per_lane.cuh), so that
// no change to the student's files can make the comparison easier.
//
// The student's code runs in a worker process (kit/remote.h, remote.h): warp_aligned_element is
// asked about every thread of a launch at once (lab05_probe::aligned_elements, probes.cu), and
// every check of what it says is made here.
#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "per_lane.cuh"
#include "divergence.h"
#include "kit/check.h"
#include "kit/device_check.h"
#include "kit/remote.h"
#include "kit/test.h"
#include "remote.h"

namespace {

using kit::Tolerance;
using lab05_grader::branch_per_lane;

const Tolerance kSameBits = Tolerance::exact(
    "the kernel and this reference run the same fmaf operations in the same order, and fmaf rounds "
    "once, as IEEE 754 prescribes, on the CPU and on the GPU alike: every bit must agree");

// ---- Step 1, on the CPU: the mapping -------------------------------------------------------------

using BranchHost = kit::HostTest;

// Every n from 1 to 300 (all the small remainders modulo 64), then sizes around larger chunks.
std::vector<unsigned> mapping_sizes() {
  std::vector<unsigned> sizes;
  for (unsigned n = 1; n <= 300; ++n) sizes.push_back(n);
  for (unsigned n : {1000u, 1001u, 4095u, 4096u, 4097u, 65535u, 65536u, 65537u, (1u << 20) + 7,
                     (1u << 20) + 32, 3u << 20})
    sizes.push_back(n);
  auto rng = kit::test_random();  // and two sizes drawn from the seed, different in every run
  for (int i = 0; i < 2; ++i) sizes.push_back(static_cast<unsigned>(rng.uniform_int(301, 1 << 20)));
  return sizes;
}

// What the student's warp_aligned_element(t, n) says for every thread t < n, asked of the worker
// in one call (one call per thread would be millions of messages).
std::vector<unsigned> aligned_elements(unsigned n) {
  std::vector<unsigned> elements = lab05_probe::aligned_elements(n);
  if (elements.size() != n)
    throw std::runtime_error("the worker answered " + std::to_string(elements.size()) +
                             " elements for the " + std::to_string(n) + " threads of n = " +
                             std::to_string(n));
  return elements;
}

// Empty when warp_aligned_element(., n), whose values are `elements`, is a permutation of [0, n);
// otherwise what is wrong.
std::string permutation_problem(unsigned n, const std::vector<unsigned>& elements) {
  std::vector<long long> owner(n, -1);
  std::ostringstream out;
  for (unsigned t = 0; t < n; ++t) {
    const unsigned e = elements[t];
    if (e >= n) {
      out << "n = " << n << ": warp_aligned_element(" << t << ", " << n << ") = " << e
          << " is outside [0, " << n << ")";
      return out.str();
    }
    if (owner[e] >= 0) {
      out << "n = " << n << ": element " << e << " is given to threads " << owner[e] << " and "
          << t << ", so another element gets no thread";
      return out.str();
    }
    owner[e] = t;
  }
  return "";
}

KIT_TEST(BranchHost, MappingIsAPermutation, "divergence.1", host, 3,
         "warp_aligned_element gives each of the n elements exactly one of the n threads, odd n too") {
  for (const unsigned n : mapping_sizes()) {
    const std::string problem = permutation_problem(n, aligned_elements(n));
    if (!problem.empty()) FAIL() << problem << " (not a permutation of [0, n))";
  }
}

// The warps (runs of 32 threads t = 32w .. 32w + 31, t < n) whose elements mix both parities.
std::vector<unsigned> mixed_warps(unsigned n, const std::vector<unsigned>& elements) {
  std::vector<unsigned> mixed;
  for (unsigned first = 0; first < n; first += lab05::kWarpSize) {
    const unsigned end = std::min(first + lab05::kWarpSize, n);
    unsigned odd = 0;
    for (unsigned t = first; t < end; ++t) odd += elements[t] % 2;
    if (odd != 0 && odd != end - first) mixed.push_back(first / lab05::kWarpSize);
  }
  return mixed;
}

KIT_TEST(BranchHost, WholeWarpsTakeOneBranch, "divergence.1", host, 3,
         "every warp's threads get elements of one parity: none mixed when 64 divides n, at most "
         "one otherwise") {
  for (const unsigned n : mapping_sizes()) {
    // Parities alone prove nothing if elements are skipped (all threads on element 0 never split).
    const std::vector<unsigned> elements = aligned_elements(n);
    const std::string problem = permutation_problem(n, elements);
    if (!problem.empty())
      FAIL() << problem << " (not a permutation of [0, n), so the warps' branches cannot be judged)";
    const std::vector<unsigned> mixed = mixed_warps(n, elements);
    const std::size_t allowed = n % 64 == 0 ? 0 : 1;
    if (mixed.size() <= allowed) continue;
    std::ostringstream out;
    const unsigned w = mixed[0];
    out << "n = " << n << ": " << mixed.size() << " of " << (n + 31) / 32
        << " warps mix even and odd elements (at most " << allowed << " may). Warp " << w
        << " (threads " << 32 * w << " .. " << std::min(32 * w + 32, n) - 1 << ") gets elements";
    for (unsigned t = 32 * w; t < std::min(32 * w + 8, n); ++t)
      out << " " << elements[t];
    out << " ...: its lanes disagree on `i % 2 == 0`, so it runs both paths";
    ADD_FAILURE() << out.str();
    return;
  }
}

// ---- Step 1, on the GPU: the kernel --------------------------------------------------------------

std::string size_name(const ::testing::TestParamInfo<unsigned>& info) {
  return "n_" + std::to_string(info.param);
}

// Compares the output with `expected`, bit for bit. The usual owner of an element (thread i for
// element i) does not hold here, so a failure names the thread your mapping gives the element to.
::testing::AssertionResult branch_output_matches(const std::string& what,
                                                 const std::vector<float>& expected,
                                                 const kit::GuardedBuffer<float>& out,
                                                 const kit::Launch& launch) {
  const std::size_t n = expected.size();
  std::string problems;
  const auto hits = out.guard_writes();
  if (!hits.empty()) problems += what + ": " + kit::describe_guard_writes(hits, n) + "\n";
  const kit::Comparison cmp = kit::compare_values(expected, out.download(), kSameBits);
  if (!cmp.ok()) {
    problems += kit::describe_mismatches(what, cmp, kSameBits, kit::Shape::d1(n), nullptr) + "\n";
    problems += "  launch " + kit::describe_launch(launch) + "\n";
    if (n <= (1u << 22)) {
      std::vector<long long> thread_of(n, -1);
      const std::vector<unsigned> elements = aligned_elements(static_cast<unsigned>(n));
      for (unsigned t = 0; t < n; ++t) {
        const unsigned e = elements[t];
        if (e < n) thread_of[e] = t;
      }
      for (const kit::Mismatch& m : cmp.first) {
        problems += "  element [" + std::to_string(m.index) + "] belongs to ";
        problems += thread_of[m.index] < 0 ? std::string("no thread under warp_aligned_element")
                                           : "thread " + std::to_string(thread_of[m.index]) +
                                                 " under warp_aligned_element";
        problems += m.index % 2 == 0 ? " (even: even_path)\n" : " (odd: odd_path)\n";
      }
    }
  }
  if (problems.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << problems << kit::seed_note();
}

std::vector<float> reference_outputs(const std::vector<float>& x) {
  std::vector<float> expected(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    expected[i] = lab05::element_value(static_cast<unsigned>(i), x[i]);
  return expected;
}

class BranchWarpAligned : public kit::GpuTestWithParam<unsigned> {};

// From this many elements the input is drawn and the expected values computed on the device (the
// judge's per-lane kernel, spot-checked against the CPU): 2^20 elements of 512 dependent fmaf
// each took the CPU 2 s (H100 trace, session 20).
constexpr unsigned kOnDeviceFrom = 1u << 20;

KIT_TEST_P(BranchWarpAligned, WritesEveryElementOnce, "divergence.1", gpu, 1,
           "branch_warp_aligned writes element_value(i, x[i]) to every element, bit for bit") {
  const unsigned n = GetParam();
  auto rng = kit::test_random();
  if (n >= kOnDeviceFrom) {
    kit::DeviceBuffer<float> d_x(n);
    const kit::Drawn x = kit::draw_floats(rng, d_x, -1, 1);
    auto d_expected = kit::DeviceBuffer<float>::judge_only(n);
    branch_per_lane(n, d_x.data(), d_expected.data(), 0);
    kit::spot_check(d_expected, rng, [&](std::size_t i) {
      return lab05::element_value(static_cast<unsigned>(i), x.at(i));
    });
    const kit::DeviceBuffer<float> original = kit::device_copy(d_x);
    kit::GuardedBuffer<float> d_out(n);
    kit::Launch launch;
    kit::remote::expect_queued_on_stream(
        d_out.data(), std::size_t{n} * sizeof(float), [&](cudaStream_t stream) {
          launch = lab05::branch_warp_aligned(n, d_x.data(), d_out.data(), stream);
        });
    if (!kit::passes_on_device(d_expected, d_out, kSameBits))
      EXPECT_TRUE(branch_output_matches("out", d_expected.download(), d_out, launch));
    EXPECT_TRUE(kit::input_unchanged("x", d_x, original));
    return;
  }
  const auto x = rng.floats(n, -1, 1);
  const auto expected = reference_outputs(x);
  kit::DeviceBuffer<float> d_x(x);
  kit::GuardedBuffer<float> d_out(n);
  // The stream it is given is busy when it is called: its kernel must queue behind that work.
  kit::Launch launch;
  kit::remote::expect_queued_on_stream(
      d_out.data(), std::size_t{n} * sizeof(float), [&](cudaStream_t stream) {
        launch = lab05::branch_warp_aligned(n, d_x.data(), d_out.data(), stream);
      });
  EXPECT_TRUE(branch_output_matches("out", expected, d_out, launch));
  EXPECT_TRUE(kit::input_unchanged("x", d_x, x));
}

INSTANTIATE_TEST_SUITE_P(Sizes, BranchWarpAligned,
                         ::testing::Values(1u, 31u, 32u, 33u, 63u, 64u, 65u, 1000u, 1001u,
                                           (1u << 20) + 7),
                         size_name);

// ---- Performance: warp-aligned against per-lane --------------------------------------------------

using BranchPerf = kit::PerfTest;

KIT_TEST(BranchPerf, WarpAlignedBeatsPerLane, "divergence.perf", perf, 8,
         "branch_warp_aligned runs well under the time of the per-lane tid % 2 branch, same run") {
  // 2^25 elements of 512 dependent fmaf per path: close to a millisecond of arithmetic for the
  // per-lane kernel on an H100, against under 0.1 ms to stream the 256 MiB of input and output.
  const unsigned n = 1u << 25;
  auto rng = kit::test_random();
  kit::DeviceBuffer<float> d_x(n);
  kit::Drawn x = kit::draw_floats(rng, d_x, -1, 1);  // on the device: kit/device_check.h
  kit::GuardedBuffer<float> d_out(n);
  auto d_per_lane = kit::DeviceBuffer<float>::judge_only(n);

  // Before and after timing (fresh inputs after): the whole output must equal the per-lane
  // kernel's, bit for bit (compared on the device), and a sample of that the CPU reference.
  auto check = [&](const char* when) {
    branch_per_lane(n, d_x.data(), d_per_lane.data(), 0);
    kit::spot_check(d_per_lane, rng, [&](std::size_t i) {
      return lab05::element_value(static_cast<unsigned>(i), x.at(i));
    }, 4096);
    d_out.poison();
    const kit::Launch launch = lab05::branch_warp_aligned(n, d_x.data(), d_out.data());
    KIT_CUDA_CHECK(cudaDeviceSynchronize());
    if (kit::passes_on_device(d_per_lane, d_out, kSameBits)) return;
    EXPECT_TRUE(branch_output_matches(std::string("out (") + when + ")", d_per_lane.download(),
                                      d_out, launch));
  };
  check("before timing");
  if (HasFailure()) return;

  const kit::Timed student{"branch_warp_aligned", double(n), [&](cudaStream_t stream) {
                             lab05::branch_warp_aligned(n, d_x.data(), d_out.data(), stream);
                           }};
  const kit::Timed per_lane{"per-lane branch (tid % 2)", double(n), [&](cudaStream_t stream) {
                              branch_per_lane(n, d_x.data(), d_per_lane.data(), stream);
                            }};
  expect_ratio_at_least(student, per_lane, "divergence.warp_aligned_vs_per_lane", "Gelem/s", 1e-9);

  x = kit::draw_floats(rng, d_x, -1, 1);
  check("after timing, fresh inputs");
}

}  // namespace
