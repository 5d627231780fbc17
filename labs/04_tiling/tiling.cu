// Lab 04, shared-memory tiling: the matrix multiply C = A B, twice. Step 2 stages tiles of A and
// B in shared memory so that each float fetched from device memory is used kTile times instead of
// once. Step 3 also keeps a block of C in registers, so that each float read from shared memory
// is used kThreadM or kThreadN times: the "2D block tiling" rung of the SGEMM ladder.
//
// Edit the TODO regions here and in tiling_math.cuh, then grade:
//     python3 grader/kit.py grade 04
// The handout (docs/labs/04_tiling.md) explains each step; `python3 grader/kit.py hint 04 2`
// gives hints one at a time. Do not call cuBLAS, CUTLASS or another GEMM library here.
#include <cstddef>
#include <cstdint>

#include "kit/check.h"
#include "tiling.h"

namespace lab04 {

// ---- Step 2: shared-memory tiles ---------------------------------------------------------------

// One thread per element of C: thread (tx, ty) of block (bx, by) computes C(by * kTile + ty,
// bx * kTile + tx). The block walks k in phase_count(k, kTile) phases; in each, its threads copy
// one tile of A and one of B into shared memory, then each thread adds kTile products to its sum.
__global__ void matmul_tiled_kernel(unsigned m, unsigned n, unsigned k, const float* __restrict__ a,
                                    const float* __restrict__ b, float* __restrict__ c) {
  // TODO(tiling.2): declare the two tiles in shared memory, walk the phases (copy one element of
  // each tile per thread with a_tile_element, b_tile_element and load_or_zero, then add this
  // phase's kTile products), and store the sum if the element lies inside C. Two barriers per
  // phase: say in a comment why each one is needed.
  // END(tiling.2)
}

kit::Launch matmul_tiled(unsigned m, unsigned n, unsigned k, const float* d_a, const float* d_b,
                         float* d_c, cudaStream_t stream) {
  const kit::Launch launch = tiled_config(m, n);
  matmul_tiled_kernel<<<launch.grid, launch.block, 0, stream>>>(m, n, k, d_a, d_b, d_c);
  KIT_CHECK_LAUNCH("matmul_tiled_kernel");
  return launch;
}

// ---- Step 3: register blocking -----------------------------------------------------------------

// TODO(tiling.3): helpers for matmul_blocked_kernel, if you want any (device functions, a struct
// for the shared-memory tiles, constants).
//
// END(tiling.3)

// Thread t of the block computes a kThreadM x kThreadN block of the block's kBlockM x kBlockN tile
// of C, starting at (blockIdx.y * kBlockM, blockIdx.x * kBlockN). Which elements a thread owns is
// your choice, as long as every element of the tile has exactly one owner.
__global__ void __launch_bounds__(kBlockThreads, 2)
    matmul_blocked_kernel(unsigned m, unsigned n, unsigned k, const float* __restrict__ a,
                          const float* __restrict__ b, float* __restrict__ c) {
  // TODO(tiling.3): walk k in tiles of kBlockK. In each phase the block's threads copy a
  // kBlockM x kBlockK tile of A and a kBlockK x kBlockN tile of B into shared memory (several
  // elements per thread, zeros outside the matrices), synchronise, and each thread adds the
  // phase's products to kThreadM x kThreadN sums held in a register array: for each j of the
  // tile, read kThreadM values of A's column j and kThreadN values of B's row j once, and use
  // each of them kThreadN or kThreadM times. Store the sums that lie inside C. Comment each
  // barrier.
  // END(tiling.3)
}

kit::Launch matmul_blocked(unsigned m, unsigned n, unsigned k, const float* d_a, const float* d_b,
                           float* d_c, cudaStream_t stream) {
  const kit::Launch launch = blocked_config(m, n);
  matmul_blocked_kernel<<<launch.grid, launch.block, 0, stream>>>(m, n, k, d_a, d_b, d_c);
  KIT_CHECK_LAUNCH("matmul_blocked_kernel");
  return launch;
}

}  // namespace lab04
