// Grader of lab 05, Step 2 (four sum reductions) and the reduction half of the performance step.
//
//   python3 grader/kit.py grade 05            every test, each in its own process, with a score
//   build/bin/grade_05_divergence --gtest_filter='*Reduce*'   these tests in one process
//
// Inputs are generated on the GPU by a kernel of this file from the run's seed (2^28 values are
// 1 GiB: copying them from the host would dominate the test), and the CPU computes the reference
// sum from the same formula, value by value, without storing the input.
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "cub_sum.cuh"
#include "divergence.h"
#include "kit/check.h"
#include "kit/remote.h"
#include "kit/test.h"

namespace {

using kit::Tolerance;

// ---- Inputs ------------------------------------------------------------------------------------

// Value i of an input drawn from `seed`: a splitmix64 hash of (seed, i), the same on both sides.
__host__ __device__ inline std::uint64_t hash(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Floats uniform in [0, 1) on a grid of 2^-24: positive, so the sum is as large as the sum of
// magnitudes and a relative error bound means something. Ints uniform in [1, int_max].
__host__ __device__ inline float float_value(std::uint64_t seed, std::uint64_t i) {
  return static_cast<float>(hash(seed, i) >> 40) * (1.0f / 16777216.0f);
}
__host__ __device__ inline int int_value(std::uint64_t seed, std::uint64_t i, int int_max) {
  return 1 + static_cast<int>(hash(seed, i) % static_cast<std::uint64_t>(int_max));
}

template <class T>
__host__ __device__ inline T value_at(std::uint64_t seed, std::uint64_t i, int int_max);
template <>
__host__ __device__ inline float value_at<float>(std::uint64_t seed, std::uint64_t i, int) {
  return float_value(seed, i);
}
template <>
__host__ __device__ inline int value_at<int>(std::uint64_t seed, std::uint64_t i, int int_max) {
  return int_value(seed, i, int_max);
}

template <class T>
__global__ void fill_kernel(T* out, unsigned n, std::uint64_t seed, int int_max) {
  for (unsigned i = threadIdx.x + blockIdx.x * blockDim.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = value_at<T>(seed, i, int_max);
}

// The largest int value such that no sum of n of them, in any order, leaves the int range:
// every partial sum is at most n * int_max <= 2^31 - 1. Capped at 1000 so values stay varied.
int int_max_for(unsigned n) {
  const long long cap = 2147483647LL / static_cast<long long>(n);
  return static_cast<int>(cap < 1000 ? cap : 1000);
}

// An input of n values on the device and what the CPU knows about it.
template <class T>
struct Input {
  std::uint64_t seed = 0;
  int int_max = 0;
  unsigned n = 0;
  double sum = 0;      ///< exact for int; in double (53-bit) for float
  double abs_sum = 0;  ///< sum of |x|

  void fill(T* d_data, unsigned count, std::uint64_t new_seed) {
    seed = new_seed;
    n = count;
    int_max = int_max_for(n);
    fill_kernel<T><<<1024, 256>>>(d_data, n, seed, int_max);
    KIT_CHECK_LAUNCH("fill_kernel");
    // On several cores for the perf test's 2^28 values: partial sums per part, added in order
    // (exact for int; for float, double sums whose rounding is far below the tolerance).
    const std::size_t parts = kit::part_count(n);
    std::vector<long long> int_part(parts, 0);
    std::vector<double> float_part(parts, 0), abs_part(parts, 0);
    kit::parallel_parts(n, parts, [&](std::size_t k, std::size_t begin, std::size_t end) {
      long long ints = 0;  // in registers: parts side by side in memory would share cache lines
      double floats = 0, abs = 0;
      for (std::size_t i = begin; i < end; ++i) {
        const T v = value_at<T>(seed, static_cast<unsigned>(i), int_max);
        if constexpr (std::is_same_v<T, int>) {
          ints += v;
        } else {
          floats += v;
          abs += std::fabs(v);
        }
      }
      int_part[k] = ints;
      float_part[k] = floats;
      abs_part[k] = abs;
    });
    long long int_sum = 0;
    double float_sum = 0, float_abs = 0;
    for (std::size_t k = 0; k < parts; ++k) {
      int_sum += int_part[k];
      float_sum += float_part[k];
      float_abs += abs_part[k];
    }
    if constexpr (std::is_same_v<T, int>) {
      sum = abs_sum = static_cast<double>(int_sum);
    } else {
      sum = float_sum;
      abs_sum = float_abs;
    }
    KIT_CUDA_CHECK(cudaDeviceSynchronize());
  }

  // Empty when d_data[0 .. n) still holds the input (checked for inputs of up to 2^21 values).
  std::string changed(const T* d_data) const {
    if (n > (1u << 21)) return "";
    std::vector<T> got(n);
    KIT_CUDA_CHECK(cudaMemcpy(got.data(), d_data, n * sizeof(T), cudaMemcpyDeviceToHost));
    for (unsigned i = 0; i < n; ++i)
      if (!kit::same_bits(got[i], value_at<T>(seed, i, int_max)))
        return "input element " + std::to_string(i) + " was modified by the reduction (inputs are "
               "read-only; use the scratch buffer for partial sums)";
    return "";
  }
};

// ---- Tolerances ----------------------------------------------------------------------------------

constexpr double kUnitRoundoff = 1.0 / 16777216.0;  // 2^-24: float's relative rounding error

// The most float additions any one input value may pass through on its way into the total, in
// the bound below: enough for a few thousand values summed in one accumulator, then a tree.
constexpr double kMaxRoundings = 4096;

template <class T>
Tolerance sum_tolerance(const Input<T>& input) {
  if constexpr (std::is_same_v<T, int>) {
    return Tolerance::exact(
        "integers: every value is in [1, " + std::to_string(input.int_max) + "] and n * " +
        std::to_string(input.int_max) + " < 2^31, so no partial sum overflows in any order, and "
        "integer addition is exact and associative: every order gives the same bits");
  } else {
    // A float sum in which no value goes through more than h roundings is within
    // gamma_h * sum|x| of the exact sum, gamma_h = h u / (1 - h u) (Higham, Accuracy and
    // Stability of Numerical Algorithms, 4.2). Any order is a tree of n - 1 additions, so
    // h = n - 1 always holds; for large n, h = 4096 holds for tree and grid-stride reductions.
    // Two more terms: rounding the reference to float (u |sum|) and the error of the double
    // reference itself (n 2^-53 sum|x|).
    const double h = input.n - 1 < kMaxRoundings ? input.n - 1 : kMaxRoundings;
    const double gamma = h * kUnitRoundoff / (1 - h * kUnitRoundoff);
    const double abs = gamma * input.abs_sum + kUnitRoundoff * std::fabs(input.sum) +
                       input.n * std::ldexp(1.0, -53) * input.abs_sum;
    std::ostringstream reason;
    reason << "float sum of " << input.n << " values in [0, 1): any order that rounds each value at "
           << "most h = " << h << " times is within gamma_h * sum|x| = " << gamma
           << " * sum|x| of the exact sum (Higham 4.2), plus rounding the reference to float";
    return {abs, 0.0, reason.str()};
  }
}

// ---- Step 2: each version, each type ------------------------------------------------------------

template <class T>
using Reducer = kit::Launch (*)(const T*, unsigned, T*, T*, cudaStream_t);

struct Version {
  const char* name;
  Reducer<int> for_int;
  Reducer<float> for_float;
};

const unsigned kSizes[] = {1u, 31u, 32u, 33u, 1000u, (1u << 20) + 7, 1u << 28};

// Runs `reduce` on inputs of every size in kSizes and checks each sum; a failure names the size.
template <class T>
void check_sums(Reducer<T> reduce, const char* version) {
  const unsigned largest = 1u << 28;
  kit::DeviceBuffer<T> d_in(largest), d_scratch(lab05::reduce_scratch_elements(largest));
  kit::GuardedBuffer<T> d_out(1);
  auto rng = kit::test_random();
  Input<T> input;
  // Under compute-sanitizer (the selftest's racecheck of a missing barrier, kit.py sanitize) the
  // sizes stop below 2^28: every kernel and both passes already run at 2^20 + 7, and racecheck
  // makes 2^28 take a minute.
  const bool sanitized = kit::under_compute_sanitizer();
  for (const unsigned n : kSizes) {
    if (sanitized && n > (1u << 21)) continue;
    input.fill(d_in.data(), n, rng.next_u64());
    d_out.poison();
    // The stream it is given is busy when it is called: its kernels must queue behind that work.
    const std::string what = std::string(version) + " sum of n = " + std::to_string(n) +
                             (std::is_same_v<T, int> ? " ints" : " floats");
    kit::Launch launch;
    kit::remote::expect_queued_on_stream(
        d_out.data(), sizeof(T), [&](cudaStream_t stream) {
          launch = reduce(d_in.data(), n, d_out.data(), d_scratch.data(), stream);
        }, what);
    const std::vector<T> expected{static_cast<T>(input.sum)};
    EXPECT_TRUE(kit::output_matches(what, expected, d_out, sum_tolerance(input), kit::Shape::d1(1),
                                    launch));
    const std::string changed = input.changed(d_in.data());
    EXPECT_TRUE(changed.empty()) << what << ": " << changed << "\n" << kit::seed_note();
  }
}

std::string version_name(const ::testing::TestParamInfo<Version>& info) { return info.param.name; }

class ReduceInt : public kit::GpuTestWithParam<Version> {};
class ReduceFloat : public kit::GpuTestWithParam<Version> {};

KIT_TEST_P(ReduceInt, SumIsExact, "divergence.2", gpu, 2,
           "the reduction returns the exact sum of 1, 31, 32, 33, 1000, 2^20+7 and 2^28 ints") {
  check_sums<int>(GetParam().for_int, GetParam().name);
}

KIT_TEST_P(ReduceFloat, SumIsWithinTheRoundingBound, "divergence.2", gpu, 2,
           "the reduction sums 1 to 2^28 floats within the rounding bound of a float sum") {
  check_sums<float>(GetParam().for_float, GetParam().name);
}

const Version kLadder[] = {
    {"interleaved", lab05::reduce_interleaved, lab05::reduce_interleaved},
    {"sequential", lab05::reduce_sequential, lab05::reduce_sequential},
    {"shuffle", lab05::reduce_shuffle, lab05::reduce_shuffle},
    {"grid_stride", lab05::reduce_grid_stride, lab05::reduce_grid_stride},
};

INSTANTIATE_TEST_SUITE_P(Versions, ReduceInt, ::testing::ValuesIn(kLadder), version_name);
INSTANTIATE_TEST_SUITE_P(Versions, ReduceFloat, ::testing::ValuesIn(kLadder), version_name);

// Every version once more under memcheck, on the sizes up to 2^20 + 7 (check_sums leaves 2^28 out
// under a sanitizer): a read past the end of a shared array (warp_sums[lane] for a lane with no
// warp behind it) can still give the right sum when that memory happens to hold zeros; memcheck
// reports it whatever the memory holds.
class ReduceMemcheck : public kit::GpuTest {};

KIT_TEST(ReduceMemcheck, NoVersionTouchesMemoryOutsideItsArrays, "divergence.2", memcheck, 1,
         "under memcheck, every version sums 1 to 2^20 + 7 ints reading and writing nothing "
         "outside its buffers and its shared arrays") {
  for (const Version& version : kLadder) {
    SCOPED_TRACE(version.name);
    check_sums<int>(version.for_int, version.name);
  }
}

// ---- Performance: reduce_best against CUB ---------------------------------------------------------

class ReduceBestInt : public kit::GpuTest {};
class ReduceBestFloat : public kit::GpuTest {};

KIT_TEST(ReduceBestInt, SumIsExact, "divergence.perf", gpu, 1,
         "reduce_best returns the exact sum of 1, 31, 32, 33, 1000, 2^20+7 and 2^28 ints") {
  check_sums<int>(lab05::reduce_best, "reduce_best");
}

KIT_TEST(ReduceBestFloat, SumIsWithinTheRoundingBound, "divergence.perf", gpu, 1,
         "reduce_best sums 1 to 2^28 floats within the rounding bound of a float sum") {
  check_sums<float>(lab05::reduce_best, "reduce_best");
}

using ReducePerf = kit::PerfTest;

// The elements the perf test raises before each timed run, and by how much.
constexpr int kRaised = 8;
struct Raised {
  unsigned at[kRaised];
  float by[kRaised];
};

// One thread, so that a place drawn twice is raised twice.
__global__ void raise_kernel(float* data, Raised raised) {
  for (int i = 0; i < kRaised; ++i) data[raised.at[i]] += raised.by[i];
}

KIT_TEST(ReducePerf, BestReductionRunsNearCub, "divergence.perf", perf, 8,
         "reduce_best reads 2^28 floats at a large fraction of cub::DeviceReduce::Sum's bandwidth, "
         "same run") {
  // 1 GiB, twenty times the L2 cache of an H100: every run streams from device memory.
  const unsigned n = 1u << 28;
  kit::DeviceBuffer<float> d_in(n), d_scratch(lab05::reduce_scratch_elements(n)), d_cub_out(1);
  kit::GuardedBuffer<float> d_out(1);
  lab05_grader::CubSum cub_sum(d_in.data(), d_cub_out.data(), n);  // the ceiling
  auto rng = kit::test_random();
  Input<float> input;

  // Before and after timing (fresh inputs after): reduce_best's sum must be within the bound,
  // and so must CUB's, so that the ceiling is known to do the same work.
  auto check = [&](const char* when) {
    input.fill(d_in.data(), n, rng.next_u64());
    const Tolerance tol = sum_tolerance(input);
    d_out.poison();
    const kit::Launch launch = lab05::reduce_best(d_in.data(), n, d_out.data(), d_scratch.data());
    cub_sum.run(0);
    KIT_CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float> expected{static_cast<float>(input.sum)};
    EXPECT_TRUE(kit::output_matches(std::string("reduce_best sum (") + when + ")", expected, d_out,
                                    tol, kit::Shape::d1(1), launch));
    const float cub_result = d_cub_out.download()[0];
    ASSERT_LE(std::fabs(cub_result - input.sum), tol.abs)
        << "cub::DeviceReduce::Sum returned " << cub_result << " for a sum of " << input.sum;
  };
  check("before timing");
  if (HasFailure()) return;

  // Every timed run sees an input changed since the run before (kit::Timed::fresh, outside the
  // time): kRaised elements at random places raised by 2^20 to 2^21 each, far beyond the sum's
  // tolerance, and the sum of each run is checked once it has ended (kit::Timed::check). A sum
  // remembered from an earlier call, by any key short of reading every element (the reduction's
  // own cost), is then off by millions.
  Input<float> timed_input = input;  // check("before timing")'s values, raised run by run
  int runs = 0;
  bool reported = false;
  const kit::Timed student{
      "reduce_best", 4.0 * n,
      [&](cudaStream_t stream) {
        lab05::reduce_best(d_in.data(), n, d_out.data(), d_scratch.data(), stream);
      },
      [&](cudaStream_t stream) {
        Raised raised;
        for (int i = 0; i < kRaised; ++i) {
          raised.at[i] = static_cast<unsigned>(rng.uniform_int(0, n - 1));
          raised.by[i] = rng.uniform(1 << 20, 1 << 21);
          timed_input.sum += raised.by[i];
          timed_input.abs_sum += raised.by[i];
        }
        raise_kernel<<<1, 1, 0, stream>>>(d_in.data(), raised);
        KIT_CHECK_LAUNCH("raise_kernel");
        ++runs;
      },
      [&] {
        const double got = d_out.download()[0];
        const Tolerance tol = sum_tolerance(timed_input);
        if (reported || std::fabs(got - timed_input.sum) <= tol.abs) return;
        reported = true;
        ADD_FAILURE() << "reduce_best returned " << got << " in timed run " << runs
                      << " (warm-ups included), during timing, where the sum was "
                      << timed_input.sum << " (within " << tol.abs << "): before that run "
                      << kRaised << " elements at random places were raised by 2^20 to 2^21 each. "
                      << "A result kept from an earlier call is not a sum of this input: every "
                      << "call must read every element.\n"
                      << kit::seed_note();
      }};
  const kit::Timed ceiling{"cub::DeviceReduce::Sum", 4.0 * n,
                           [&](cudaStream_t stream) { cub_sum.run(stream); }};
  expect_ratio_at_least(student, ceiling, "divergence.reduction_vs_cub", "GB/s", 1e-9);

  check("after timing, fresh inputs");
}

}  // namespace
