/// @file random.h
/// @brief Seeded random inputs: fresh for every run, reproducible on demand.
///
/// Every run draws a new seed (so a kernel cannot pass by matching one fixed input) and prints it
/// with every failure; setting the environment variable KIT_SEED to that number replays the run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kit/host_device.h"

namespace kit {

/// The seed of this run: KIT_SEED when set (a decimal number), otherwise drawn once per process
/// from std::random_device. Throws std::invalid_argument when KIT_SEED is not a number.
std::uint64_t run_seed();

/// Parses a seed string as run_seed() does; exposed for tests.
std::uint64_t parse_seed(const std::string& text);

/// "seed 1234 (rerun with KIT_SEED=1234)".
std::string seed_note();

/// A small, fast generator (splitmix64): good statistical quality for test data, and cheap enough
/// to fill hundreds of millions of elements.
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}

  /// A generator for the test called `name`, derived from run_seed(), so each test gets its own
  /// stream and the whole run is replayed by one seed.
  static Random for_name(const std::string& name);

  /// The k-th value (k from 1) after a generator state `base`: the generator's whole rule, on
  /// the host and on the device (kit/device_check.h draws large inputs there, the same values).
  KIT_HOST_DEVICE static std::uint64_t value_after(std::uint64_t base, std::uint64_t k) {
    std::uint64_t z = base + k * kStep;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// uniform(lo, hi) from a value's bits. On the device without a fused multiply-add, so that
  /// both sides round alike.
  KIT_HOST_DEVICE static float to_uniform(std::uint64_t bits, float lo, float hi) {
    const float unit = static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);
#ifdef __CUDA_ARCH__
    return __fadd_rn(lo, __fmul_rn(hi - lo, unit));
#else
    return lo + (hi - lo) * unit;
#endif
  }
  /// Skips the next n values (a device draw computes them) and returns the state before them.
  std::uint64_t advance(std::size_t n) {
    const std::uint64_t base = state_;
    state_ += n * kStep;
    return base;
  }

  std::uint64_t next_u64() { return value_after(advance(1), 1); }
  /// Uniform in [lo, hi).
  float uniform(float lo, float hi) { return to_uniform(next_u64(), lo, hi); }
  /// Uniform integer in [lo, hi].
  long long uniform_int(long long lo, long long hi) { return to_int(next_u64(), lo, hi); }
  /// n values of uniform(lo, hi), the same as n calls would draw; large n on several cores
  /// (the generator's k-th value needs only its state plus k steps).
  std::vector<float> floats(std::size_t n, float lo, float hi);
  /// n values of uniform_int(lo, hi), the same as n calls would draw.
  std::vector<int> ints(std::size_t n, int lo, int hi);

 private:
  static constexpr std::uint64_t kStep = 0x9E3779B97F4A7C15ull;
  static long long to_int(std::uint64_t bits, long long lo, long long hi) {
    const auto span = static_cast<std::uint64_t>(hi - lo) + 1;
    return lo + static_cast<long long>(bits % span);
  }
  /// Fills `values` with the next values.size() draws of `draw(bits)`.
  template <class T, class Draw>
  void fill(std::vector<T>& values, const Draw& draw);

  std::uint64_t state_;
};

/// Values drawn elsewhere by the generator's rule (on the device: kit/device_check.h; in a worker:
/// lab 07's fill_input), known here by the state they started from: element i is at(i), the
/// value Random::floats() would have put there, computed without reading them.
struct Drawn {
  std::uint64_t base = 0;
  float lo = 0, hi = 0;
  float at(std::size_t i) const { return Random::to_uniform(Random::value_after(base, i + 1), lo, hi); }
};

#if defined(__CUDACC__)
namespace detail {
/// p[i] = Drawn{base, lo, hi}.at(i) for i < n, on the device (a grid-stride loop): the judge's
/// large inputs (kit/device_check.h) and a worker's fill of a pinned buffer (lab 07's probes).
static __global__ void draw_floats_kernel(float* p, std::size_t n, std::uint64_t base, float lo,
                                          float hi) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    p[i] = Random::to_uniform(Random::value_after(base, i + 1), lo, hi);
}
}  // namespace detail
#endif

}  // namespace kit
