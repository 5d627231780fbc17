/// @file branch_map.cuh
/// @brief Lab 05, warp divergence, Step 1: which element each thread handles, so that whole warps
/// take the same branch.
///
/// This function is `__host__ __device__`: your kernel calls it on the GPU, and the grader calls
/// the very same code on the CPU to check that it is a permutation and that its warps do not
/// split. Grade with `python3 grader/kit.py grade 05`; the handout is docs/labs/05_divergence.md.
#pragma once

#include <cuda_runtime.h>

namespace lab05 {

/// The element that thread `t` (its global index, 0 <= t < n) handles in the warp-aligned
/// kernel. Even elements take one path of the branch and odd elements the other, so:
///
/// - it must be a permutation of [0, n): every element handled by exactly one thread, for every
///   n >= 1, odd n included;
/// - the 32 threads of a warp (t = 32w .. 32w + 31) must get elements of the same parity, except
///   in at most one warp, and in none when n is a multiple of 64.
///
/// The identity `return t;` is a permutation, but every warp then gets 16 even and 16 odd
/// elements: the per-lane branch of the seeds' `tid % 2` example.
__host__ __device__ inline unsigned warp_aligned_element(unsigned t, unsigned n) {
  // DONE(divergence.1): give whole warps elements of one parity, and every element one thread.
  // Threads come in chunks of 64 (two warps) and so do elements: in a full chunk the first warp
  // takes the 32 even elements and the second warp the 32 odd ones. The last chunk may be short
  // (n - base < 64 elements): its first (n - base + 1) / 2 threads take its even elements, the
  // rest its odd ones, which splits at most that one warp.
  const unsigned base = t / 64 * 64;      // this thread's chunk starts at element base
  const unsigned last = n / 64 * 64;      // the short last chunk, if any, starts here
  const unsigned evens = base < last ? 32 : (n - base + 1) / 2;  // even elements of the chunk
  const unsigned u = t - base;
  return u < evens ? base + 2 * u : base + 2 * (u - evens) + 1;
  // END(divergence.1)
}

}  // namespace lab05
