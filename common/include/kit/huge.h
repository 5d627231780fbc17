/// @file huge.h
/// @brief Tests on arrays of more than 2^32 elements: inputs that a kernel of the judge fills and
/// checks from their index alone, and the not-run reason of a GPU without the memory for them.
///
/// An index kept in 32 bits (`unsigned i = blockIdx.x * blockDim.x + threadIdx.x`) is right until
/// the array passes 2^32 elements, so only an array that large shows it. Copying 16 GiB to the
/// host and back would take seconds, so such a test fills its input on the GPU with
/// index_value(i, seed), and checks the output on the GPU by recomputing each expected value from
/// its index. Such a test is of kind `timed` (it runs alone: beside other tests its memory may not
/// be free) and starts with KIT_NEEDS_DEVICE_MEMORY.
#pragma once

#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kit/buffers.h"
#include "kit/check.h"
#include "kit/device_info.h"

namespace kit {

/// A value in [-0.5, 0.5), a multiple of 2^-16, that only element `i` of an input drawn with `seed`
/// has (a 64-bit mix of both): the sum or product of a few of them is exact in float.
__host__ __device__ inline float index_value(std::size_t i, std::uint32_t seed) {
  std::uint64_t h = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 29;
  return static_cast<float>(h & 0xffffu) / 65536.0f - 0.5f;
}

/// The grid of the kit's fill and check kernels over such arrays (grid-stride loops).
inline constexpr unsigned kHugeBlocks = 8192, kHugeThreads = 256;

namespace detail {
static __global__ void fill_index_values(float* p, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    p[i] = index_value(i, seed);
}
}  // namespace detail

/// Fills n floats with index_value(i, seed) and waits.
inline void fill_index_values(float* p, std::size_t n, std::uint32_t seed) {
  detail::fill_index_values<<<kHugeBlocks, kHugeThreads>>>(p, n, seed);
  KIT_CHECK_LAUNCH("the grader's fill kernel");
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
}

/// Fills n floats with NaN (never written) and waits.
inline void poison_floats(float* p, std::size_t n) {
  KIT_CUDA_CHECK(cudaMemset(p, 0xff, n * sizeof(float)));
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
}

/// What a check kernel found: how many elements were wrong, and the first of them.
struct WrongCount {
  unsigned long long count = 0, first = ~0ull;
};

/// In a check kernel: element i is wrong (`wrong` is the counter count_wrong() passes). The
/// threads of a warp that call it together add their count and their smallest i in one atomic
/// pair: a stub that writes nothing has 2^32 wrong elements, and an atomic each on one counter
/// took seconds a test (lab 03's three huge transposes, 9.8 s on an H100).
__device__ inline void note_wrong(unsigned long long* wrong, std::size_t i) {
  namespace cg = cooperative_groups;
  const cg::coalesced_group together = cg::coalesced_threads();
  const unsigned long long first = cg::reduce(together, static_cast<unsigned long long>(i),
                                              cg::less<unsigned long long>());
  if (together.thread_rank() == 0) {
    atomicAdd(&wrong[0], static_cast<unsigned long long>(together.size()));
    atomicMin(&wrong[1], first);
  }
}

/// Waits for the student's work, then runs `check(counter)` (a launch of a check kernel that
/// calls note_wrong) and returns what it found.
template <class Check>
WrongCount count_wrong(Check check) {
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  DeviceBuffer<unsigned long long> counter(std::vector<unsigned long long>{0, ~0ull});
  check(counter.data());
  KIT_CHECK_LAUNCH("the grader's check kernel");
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  const auto got = counter.download();
  return {got[0], got[1]};
}

/// When the GPU has less than `bytes` (plus 1 GiB for the rest) free: the test's not-run reason,
/// which starts with kNoMemoryReason (excused like a missing GPU). Otherwise nothing.
inline std::optional<std::string> too_little_memory(std::size_t bytes) {
  // A judge's worker still maps the buffers of the test before until its next call: on an H100 a
  // huge test right after another in one process found 32 GiB free of 80 without this.
  detail::device_settle();
  std::size_t free_bytes = 0, total_bytes = 0;
  KIT_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (free_bytes >= bytes + (std::size_t{1} << 30)) return std::nullopt;
  return std::string(kNoMemoryReason) + ": needs " + std::to_string((bytes >> 30) + 1) +
         " GiB free, this GPU has " + std::to_string(free_bytes >> 30) + " GiB free";
}

}  // namespace kit

/// The first lines of a test body that needs `bytes` of device memory: on a GPU without them
/// free, records the reason and skips the test (not run, never passed).
#define KIT_NEEDS_DEVICE_MEMORY(bytes)                         \
  do {                                                         \
    if (const auto kit_why_ = ::kit::too_little_memory(bytes)) { \
      RecordProperty("not_run", *kit_why_);                    \
      GTEST_SKIP() << "not run: " << *kit_why_;                \
    }                                                          \
  } while (0)
