// Lab 05's student functions as the judge calls them (kit/remote.h): every function of
// divergence.h, branch_map.cuh and divergence_model.h that a test calls, with its exact signature
// (the reduction launchers once per overload, int and float), plus the grader's probes that must
// run beside the student's code (probes.cu).
//
// Not listed: lab05::analyze_branch. Its condition is a std::function, a callback into the test's
// own code, which cannot travel to another process. The tests describe each condition as data
// instead (lab05_probe::Condition), and the probe lab05_probe::analyze hands the student's
// analyze_branch a std::function that evaluates it in the worker, with the same code the judge
// evaluates for its own count, so every call the student's code makes gets the answer the test's
// lambda gave before.
//
// The CUB ceiling (cub_sum.cuh) and the per-lane baseline (per_lane.cuh) are grader code of the
// judge only: nothing of them is in the worker (the lab bans CUB in the student's code).
#pragma once

#include <cstdint>
#include <vector>

#include "divergence.h"
#include "divergence_model.h"
#include "kit/random.h"

namespace lab05_probe {

/// What lab05::warp_aligned_element(t, n) says for every thread t of [0, n), in order (host code
/// of the worker, as the tests called it on the host before).
std::vector<unsigned> aligned_elements(unsigned n);

/// A branch condition of the Step 3 tests, as data: (block, thread) -> path A. Evaluated by the
/// same inline code in the judge (its own count) and in the worker (the student's analyze_branch).
struct Condition {
  enum class Kind : std::uint8_t {
    thread_below,        ///< thread < k
    thread_multiple_of,  ///< thread % k == 0
    run_parity,          ///< (block * threads + thread) / k % 2 == 0
    block_multiple_of,   ///< block % k == 0
    block_below,         ///< block < k
    random_bit,          ///< kit::Random(salt ^ (block << 32 | thread)).next_u64() % 7 == 0
  };
  Kind kind = Kind::thread_below;
  unsigned k = 1;
  unsigned threads = 0;    ///< run_parity: threads per block
  std::uint64_t salt = 0;  ///< random_bit

  bool operator()(unsigned b, unsigned t) const {
    switch (kind) {
      case Kind::thread_below: return t < k;
      case Kind::thread_multiple_of: return t % k == 0;
      case Kind::run_parity: return (b * threads + t) / k % 2 == 0;
      case Kind::block_multiple_of: return b % k == 0;
      case Kind::block_below: return b < k;
      case Kind::random_bit:
        return kit::Random(salt ^ (std::uint64_t(b) << 32 | t)).next_u64() % 7 == 0;
    }
    return false;
  }
};

inline Condition thread_below(unsigned k) { return {Condition::Kind::thread_below, k, 0, 0}; }
inline Condition thread_multiple_of(unsigned k) {
  return {Condition::Kind::thread_multiple_of, k, 0, 0};
}
inline Condition run_parity(unsigned threads, unsigned k) {
  return {Condition::Kind::run_parity, k, threads, 0};
}
inline Condition block_multiple_of(unsigned k) {
  return {Condition::Kind::block_multiple_of, k, 0, 0};
}
inline Condition block_below(unsigned k) { return {Condition::Kind::block_below, k, 0, 0}; }
inline Condition random_bit(std::uint64_t salt) {
  return {Condition::Kind::random_bit, 1, 0, salt};
}

/// lab05::analyze_branch(blocks, threads_per_block, condition), with `condition` wrapped in a
/// lab05::BranchCondition in the worker.
lab05::BranchStats analyze(unsigned blocks, unsigned threads_per_block, const Condition& condition);

}  // namespace lab05_probe

#define KIT_LAB_REMOTE(X)                                                                     \
  X(lab05, warp_aligned_element, unsigned, (unsigned, unsigned))                              \
  X(lab05, branch_warp_aligned, kit::Launch, (unsigned, const float*, float*, cudaStream_t))  \
  X(lab05, reduce_interleaved, kit::Launch, (const int*, unsigned, int*, int*, cudaStream_t)) \
  X(lab05, reduce_interleaved, kit::Launch,                                                   \
    (const float*, unsigned, float*, float*, cudaStream_t))                                   \
  X(lab05, reduce_sequential, kit::Launch, (const int*, unsigned, int*, int*, cudaStream_t))  \
  X(lab05, reduce_sequential, kit::Launch,                                                    \
    (const float*, unsigned, float*, float*, cudaStream_t))                                   \
  X(lab05, reduce_shuffle, kit::Launch, (const int*, unsigned, int*, int*, cudaStream_t))     \
  X(lab05, reduce_shuffle, kit::Launch, (const float*, unsigned, float*, float*, cudaStream_t)) \
  X(lab05, reduce_grid_stride, kit::Launch, (const int*, unsigned, int*, int*, cudaStream_t)) \
  X(lab05, reduce_grid_stride, kit::Launch,                                                   \
    (const float*, unsigned, float*, float*, cudaStream_t))                                   \
  X(lab05, reduce_best, kit::Launch, (const int*, unsigned, int*, int*, cudaStream_t))        \
  X(lab05, reduce_best, kit::Launch, (const float*, unsigned, float*, float*, cudaStream_t))  \
  X(lab05, warps_per_block, unsigned, (unsigned))                                             \
  X(lab05, branch_efficiency, double, (const lab05::BranchStats&))                            \
  X(lab05, simt_efficiency, double, (const lab05::BranchStats&))                              \
  X(lab05_probe, aligned_elements, std::vector<unsigned>, (unsigned))                         \
  X(lab05_probe, analyze, lab05::BranchStats, (unsigned, unsigned, const lab05_probe::Condition&))
