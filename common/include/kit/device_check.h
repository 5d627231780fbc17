/// @file device_check.h
/// @brief Large inputs drawn, expected values kept, and outputs checked on the GPU, in the judge.
///
/// A perf test checks its kernel on hundreds of MiB before timing and after it. Drawing those
/// inputs on the CPU, copying them up, computing the expected values on the CPU and reading the
/// output back cost a second or more per check, against milliseconds of timing. Here the judge
/// does it on the GPU, in its own context and its own buffers:
/// - draw_floats() fills a device buffer with exactly the values Random::floats() would draw (the
///   same generator, `Random::value_after`, run on the device), so a seed replays the run, and
///   Drawn::at() gives any element on the host;
/// - the test computes its expected values with a kernel of its own into a judge-only buffer
///   (DeviceBuffer::judge_only: the worker can never map it), *before* the student's call (so a call that rewrites its inputs cannot move
///   them), and spot_check() compares a sample of them with the CPU's rule on every run;
/// - output_matches() and input_unchanged() compare on the GPU by compare_values()'s rule
///   (outside_tolerance, poison marks unwritten elements). Only when something is wrong do they
///   read both arrays back and hand them to the CPU comparison, which writes the same message as
///   before.
///
/// Include it from a grader's .cu file only: it holds kernels.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kit/buffers.h"
#include "kit/check.h"
#include "kit/compare.h"
#include "kit/huge.h"
#include "kit/launch.h"
#include "kit/poison.h"
#include "kit/random.h"
#include "kit/test.h"
#include "kit/timing.h"

namespace kit {

/// The grid of the judge's draw, copy and check kernels (grid-stride loops).
inline constexpr unsigned kDeviceCheckBlocks = 2048, kDeviceCheckThreads = 256;

namespace detail {
/// Whether `value` holds T's poison pattern (is_poison(), on the device).
template <class T>
__device__ bool poisoned_on_device(const T& value) {
  static_assert(sizeof(T) == sizeof(Patterns<T>::poison_bits), "pattern width");
  std::remove_const_t<decltype(Patterns<T>::poison_bits)> bits;
  memcpy(&bits, &value, sizeof bits);
  return bits == Patterns<T>::poison_bits;
}

/// Counts the i < n for which wrong(i) holds into count_wrong()'s counter ({count, first}), one
/// atomic pair per thread rather than one per wrong element.
template <class Rule>
static __global__ void count_where_kernel(std::size_t n, Rule wrong, unsigned long long* counter) {
  unsigned long long mine = 0, first = ~0ull;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    if (wrong(i)) {
      if (mine++ == 0) first = i;
    }
  if (mine != 0) {
    atomicAdd(&counter[0], mine);
    atomicMin(&counter[1], first);
  }
}

/// compare_values()'s rule for element i: unwritten, or outside (abs, rel) of the expected value.
template <class E, class G>
struct OutsideTolerance {
  const E* expected;
  const G* got;
  double abs, rel;
  __device__ bool operator()(std::size_t i) const {
    const G g = got[i];
    return poisoned_on_device(g) ||
           outside_tolerance(static_cast<double>(expected[i]), static_cast<double>(g), abs, rel);
  }
};
}  // namespace detail

/// How many i < n satisfy `wrong(i)`, a device functor (a struct whose `__device__ bool
/// operator()(std::size_t i) const` reads the judge's device arrays), counted on the GPU through
/// count_wrong() (kit/huge.h).
template <class Rule>
unsigned long long count_where(std::size_t n, const Rule& wrong) {
  if (n == 0) return 0;
  return count_wrong([&](unsigned long long* counter) {
           detail::count_where_kernel<<<kDeviceCheckBlocks, kDeviceCheckThreads>>>(n, wrong,
                                                                                   counter);
         }).count;
}

/// Whether every one of n elements of `got` is written and within `tol` of `expected` (device
/// arrays of the judge), by compare_values()'s rule, checked on the GPU: the pass path of a
/// grader's own comparison (whose failure path reads the arrays back and writes its message).
template <class E, class G>
bool within_on_device(const E* expected, const G* got, std::size_t n, const Tolerance& tol) {
  return count_where(n, detail::OutsideTolerance<E, G>{expected, got, tol.abs, tol.rel}) == 0;
}

/// Fills `out` with the next out.size() values of rng.uniform(lo, hi) (the values rng.floats()
/// would return), on the device, and advances rng past them.
inline Drawn draw_floats(Random& rng, DeviceBuffer<float>& out, float lo, float hi) {
  const Drawn draw{rng.advance(out.size()), lo, hi};
  if (out.size() == 0) return draw;
  detail::draw_floats_kernel<<<kDeviceCheckBlocks, kDeviceCheckThreads>>>(out.data(), out.size(),
                                                                          draw.base, lo, hi);
  KIT_CHECK_LAUNCH("the grader's draw kernel");
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  trace("drew " + std::to_string(out.size()) + " floats on the device");
  return draw;
}

/// A copy of `from` in a new judge-only buffer (DeviceBuffer::judge_only): the original of an
/// input, to check that the student's call left it unchanged.
template <class T>
DeviceBuffer<T> device_copy(const DeviceBuffer<T>& from) {
  auto to = DeviceBuffer<T>::judge_only(from.size());
  if (from.size() > 0)
    KIT_CUDA_CHECK(cudaMemcpy(to.data(), from.data(), from.bytes(), cudaMemcpyDeviceToDevice));
  return to;
}

/// Compares `count` elements of the judge's device-computed `expected`, at indices drawn from
/// `rng`, with `cpu(i)`, the same rule on the CPU; throws (the test errs: a fault of the grader,
/// not of the student's code) at the first disagreement. The judge's expected-value kernels are
/// so checked on every run.
template <class T, class Cpu>
void spot_check(const DeviceBuffer<T>& expected, Random& rng, const Cpu& cpu, int count = 256) {
  if (expected.size() == 0) return;
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  for (int k = 0; k < count; ++k) {
    const auto i = static_cast<std::size_t>(rng.uniform_int(0, expected.size() - 1));
    T got;
    KIT_CUDA_CHECK(cudaMemcpy(&got, expected.data() + i, sizeof got, cudaMemcpyDeviceToHost));
    const T want = cpu(i);
    if (!same_bits(got, want))
      throw std::logic_error("the grader's expected values disagree with the CPU at element " +
                             std::to_string(i) + ": " + std::to_string(got) + " on the GPU, " +
                             std::to_string(want) + " on the CPU");
  }
}

/// Throws unless `reference` is judge-only: what a check compares against must be memory the
/// worker can never reach (DeviceBuffer::judge_only), or the student's code could write the
/// answer it is checked against.
template <class T>
void require_judge_only(const DeviceBuffer<T>& reference) {
  if (!reference.is_judge_only())
    throw std::logic_error("kit grader: a device check's expected values or original input are "
                           "not in a DeviceBuffer::judge_only buffer");
}

/// Whether `out` passes against `expected` (judge-only) on the device: no write outside it, every
/// element written and within `tol`. The pass path of a check whose failure path reads both back
/// and writes its message on the CPU.
template <class T>
bool passes_on_device(const DeviceBuffer<T>& expected, const GuardedBuffer<T>& out,
                      const Tolerance& tol) {
  require_judge_only(expected);
  return expected.size() == out.size() && out.guard_writes().empty() &&
         within_on_device(expected.data(), out.data(), out.size(), tol);
}

/// output_matches() against expected values the judge computed on the device (judge-only). A
/// passing output is checked there; any other is read back with `expected`, and the CPU
/// comparison writes the message, as the host overload does.
template <class T>
::testing::AssertionResult output_matches(const std::string& what, const DeviceBuffer<T>& expected,
                                          const GuardedBuffer<T>& out, const Tolerance& tol,
                                          const Shape& shape, const Launch& launch) {
  if (passes_on_device(expected, out, tol)) {
    trace("checked " + std::to_string(out.size()) + " " + what + " on the device");
    return ::testing::AssertionSuccess();
  }
  return output_matches(what, expected.download(), out, tol, shape, launch);
}

/// input_unchanged() against a judge-only copy of the original input (device_copy()).
template <class T>
::testing::AssertionResult input_unchanged(const std::string& what, const DeviceBuffer<T>& input,
                                           const DeviceBuffer<T>& original) {
  require_judge_only(original);
  const Tolerance exact = Tolerance::exact("inputs are read-only");
  if (input.size() == original.size() &&
      within_on_device(original.data(), input.data(), input.size(), exact))
    return ::testing::AssertionSuccess();
  return input_unchanged(what, input, original.download());
}

}  // namespace kit
