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
  // DONE(tiling.2): declare the two tiles in shared memory, walk the phases (copy one element of
  // each tile per thread with a_tile_element, b_tile_element and load_or_zero, then add this
  // phase's kTile products), and store the sum if the element lies inside C. Two barriers per
  // phase: say in a comment why each one is needed.
  __shared__ float a_tile[kTile][kTile];  // (kTile rows of A, kTile columns of k)
  __shared__ float b_tile[kTile][kTile];  // (kTile rows of k, kTile columns of B)
  const unsigned ty = threadIdx.y, tx = threadIdx.x;
  const unsigned row0 = blockIdx.y * kTile, col0 = blockIdx.x * kTile;
  float sum = 0.0f;
  // One phase's arithmetic, once this thread has copied its element of each tile.
  auto add_phase = [&] {
    // Barrier 1 (read after write): the loop below reads a whole row of a_tile and a whole column
    // of b_tile, elements that other threads, in other warps, copied. Wait until all are there.
    __syncthreads();
#pragma unroll
    for (unsigned j = 0; j < kTile; ++j) sum += a_tile[ty][j] * b_tile[j][tx];
    // Barrier 2 (write after read): the next phase overwrites both tiles. A fast warp must not do
    // that while a slow warp is still reading this phase's values.
    __syncthreads();
  };
  const unsigned phases = phase_count(k, kTile);
  unsigned phase = 0;
  // Optional speed-up: when the block's tile of C lies wholly inside C, its full phases (all but a
  // partial last one) read only elements inside A and B, so they can skip the bounds checks: same
  // values, about 3% faster at 4096^3 on an H100. Every block and phase reaches the same
  // barriers either way.
  const unsigned unchecked = row0 + kTile <= m && col0 + kTile <= n ? k / kTile : 0;
  for (; phase < unchecked; ++phase) {
    const MatIndex ea = a_tile_element(row0, phase, ty, tx, kTile);
    const MatIndex eb = b_tile_element(col0, phase, ty, tx, kTile);
    a_tile[ty][tx] = a[static_cast<std::size_t>(ea.row) * k + ea.col];
    b_tile[ty][tx] = b[static_cast<std::size_t>(eb.row) * n + eb.col];
    add_phase();
  }
  for (; phase < phases; ++phase) {
    a_tile[ty][tx] = load_or_zero(a, m, k, a_tile_element(row0, phase, ty, tx, kTile));
    b_tile[ty][tx] = load_or_zero(b, k, n, b_tile_element(col0, phase, ty, tx, kTile));
    add_phase();
  }
  const unsigned row = row0 + ty, col = col0 + tx;
  if (row < m && col < n) c[static_cast<std::size_t>(row) * n + col] = sum;
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

// DONE(tiling.3): helpers for matmul_blocked_kernel, if you want any (device functions, a struct
// for the shared-memory tiles, constants).
//
// The reference's design, for a 128 x 128 tile of C, k in tiles of 16, 256 threads of 8 x 8:
//  - A's tile is stored transposed, a_tile[k][row], so that one thread's 8 rows of A for one k
//    are contiguous and come out of shared memory as two float4 reads;
//  - thread (ty, tx) = (t / 16, t % 16) owns rows {4ty..4ty+3, 64+4ty..64+4ty+3} and the same
//    columns from tx. In a warp (ty two values, tx 0..15) the A reads are 2 distinct float4
//    (a broadcast) and the B reads 16 neighbouring float4: no bank conflict, and C is stored as
//    float4s that a half-warp writes 256 contiguous bytes of;
//  - two copies of each tile: the next phase's floats are fetched from device memory into
//    registers before this phase's arithmetic, and stored into the other copy after it, so the
//    loads' latency hides behind 64 FMAs per k and one barrier per phase suffices;
//  - float4 loads and stores when every row starts 16-byte aligned (k and n multiples of 4),
//    one float at a time otherwise; either way zeros outside the matrices, as in step 2.
constexpr unsigned kAPitch = kBlockM + 4;  // +4 floats: fewer bank conflicts on the transposed store
constexpr unsigned kHalfM = kBlockM / 2, kHalfN = kBlockN / 2;
constexpr unsigned kThreadsN = kBlockN / kThreadN;  // 16 threads across a tile's columns
constexpr unsigned kALoads = kBlockM * kBlockK / 4 / kBlockThreads;  // float4s per thread per tile
constexpr unsigned kBLoads = kBlockK * kBlockN / 4 / kBlockThreads;
static_assert(kThreadM == 8 && kThreadN == 8 && kBlockThreads == 256 && kBlockK % 4 == 0,
              "the reference kernel is written for 128 x 128 x 16 tiles and 8 x 8 per thread");

struct BlockedTiles {
  float a[2][kBlockK][kAPitch];  // A's tile transposed: (kBlockK, kBlockM), two copies
  float b[2][kBlockK][kBlockN];  // B's tile: (kBlockK, kBlockN), two copies
};

// Four neighbouring floats of a row-major rows x cols matrix, from (row, col) on; zeros outside.
template <bool kVector>
__device__ __forceinline__ float4 load4(const float* __restrict__ m, unsigned rows, unsigned cols,
                                        unsigned row, unsigned col) {
  if constexpr (kVector) {  // cols % 4 == 0 and col % 4 == 0: all four inside or all outside
    if (row < rows && col < cols)
      return *reinterpret_cast<const float4*>(m + static_cast<std::size_t>(row) * cols + col);
    return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  } else {
    return make_float4(load_or_zero(m, rows, cols, {row, col}),
                       load_or_zero(m, rows, cols, {row, col + 1}),
                       load_or_zero(m, rows, cols, {row, col + 2}),
                       load_or_zero(m, rows, cols, {row, col + 3}));
  }
}

template <bool kVector>
__device__ __forceinline__ void blocked_body(unsigned m, unsigned n, unsigned k,
                                             const float* __restrict__ a,
                                             const float* __restrict__ b, float* __restrict__ c,
                                             BlockedTiles& tiles) {
  const unsigned t = threadIdx.x;
  const unsigned ty = t / kThreadsN, tx = t % kThreadsN;
  const unsigned row0 = blockIdx.y * kBlockM, col0 = blockIdx.x * kBlockN;

  // Which float4s of a phase's tiles this thread fetches: A by rows of kBlockK / 4 float4s,
  // B by rows of kBlockN / 4.
  float4 a_next[kALoads], b_next[kBLoads];
  auto fetch = [&](unsigned phase) {
#pragma unroll
    for (unsigned i = 0; i < kALoads; ++i) {
      const unsigned f = t + i * kBlockThreads;
      a_next[i] = load4<kVector>(a, m, k, row0 + f / (kBlockK / 4), phase * kBlockK + 4 * (f % (kBlockK / 4)));
    }
#pragma unroll
    for (unsigned i = 0; i < kBLoads; ++i) {
      const unsigned f = t + i * kBlockThreads;
      b_next[i] = load4<kVector>(b, k, n, phase * kBlockK + f / (kBlockN / 4), col0 + 4 * (f % (kBlockN / 4)));
    }
  };
  auto stash = [&](unsigned copy) {
#pragma unroll
    for (unsigned i = 0; i < kALoads; ++i) {
      const unsigned f = t + i * kBlockThreads;
      const unsigned row = f / (kBlockK / 4), kk = 4 * (f % (kBlockK / 4));
      tiles.a[copy][kk + 0][row] = a_next[i].x;
      tiles.a[copy][kk + 1][row] = a_next[i].y;
      tiles.a[copy][kk + 2][row] = a_next[i].z;
      tiles.a[copy][kk + 3][row] = a_next[i].w;
    }
#pragma unroll
    for (unsigned i = 0; i < kBLoads; ++i) {
      const unsigned f = t + i * kBlockThreads;
      *reinterpret_cast<float4*>(&tiles.b[copy][f / (kBlockN / 4)][4 * (f % (kBlockN / 4))]) = b_next[i];
    }
  };

  float acc[kThreadM][kThreadN] = {};
  const unsigned phases = phase_count(k, kBlockK);
  fetch(0);
  stash(0);
  // The first tiles are complete before anyone reads them.
  __syncthreads();
  for (unsigned phase = 0; phase < phases; ++phase) {
    const unsigned copy = phase & 1;
    const bool more = phase + 1 < phases;
    if (more) fetch(phase + 1);  // in flight during the arithmetic below
#pragma unroll
    for (unsigned j = 0; j < kBlockK; ++j) {
      const float4 a0 = *reinterpret_cast<const float4*>(&tiles.a[copy][j][4 * ty]);
      const float4 a1 = *reinterpret_cast<const float4*>(&tiles.a[copy][j][kHalfM + 4 * ty]);
      const float4 b0 = *reinterpret_cast<const float4*>(&tiles.b[copy][j][4 * tx]);
      const float4 b1 = *reinterpret_cast<const float4*>(&tiles.b[copy][j][kHalfN + 4 * tx]);
      const float ar[kThreadM] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float br[kThreadN] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (unsigned i = 0; i < kThreadM; ++i)
#pragma unroll
        for (unsigned jj = 0; jj < kThreadN; ++jj) acc[i][jj] += ar[i] * br[jj];
    }
    // Writes go to the other copy, which nobody reads in this phase: every thread finished
    // reading it before the barrier that ended the previous phase.
    if (more) stash(copy ^ 1);
    // One barrier per phase, for both hazards: the next phase reads the copy just written (read
    // after write), and the phase after it overwrites the copy just read (write after read).
    __syncthreads();
  }

#pragma unroll
  for (unsigned i = 0; i < kThreadM; ++i) {
    const unsigned row = row0 + (i < 4 ? 4 * ty + i : kHalfM + 4 * ty + i - 4);
    if (row >= m) continue;
#pragma unroll
    for (unsigned half = 0; half < 2; ++half) {
      const unsigned col = col0 + half * kHalfN + 4 * tx;
      float* out = c + static_cast<std::size_t>(row) * n + col;
      if constexpr (kVector) {
        if (col < n)
          *reinterpret_cast<float4*>(out) = make_float4(acc[i][4 * half], acc[i][4 * half + 1],
                                                        acc[i][4 * half + 2], acc[i][4 * half + 3]);
      } else {
#pragma unroll
        for (unsigned q = 0; q < 4; ++q)
          if (col + q < n) out[q] = acc[i][4 * half + q];
      }
    }
  }
}
// END(tiling.3)

// Thread t of the block computes a kThreadM x kThreadN block of the block's kBlockM x kBlockN tile
// of C, starting at (blockIdx.y * kBlockM, blockIdx.x * kBlockN). Which elements a thread owns is
// your choice, as long as every element of the tile has exactly one owner.
__global__ void __launch_bounds__(kBlockThreads, 2)
    matmul_blocked_kernel(unsigned m, unsigned n, unsigned k, const float* __restrict__ a,
                          const float* __restrict__ b, float* __restrict__ c) {
  // DONE(tiling.3): walk k in tiles of kBlockK. In each phase the block's threads copy a
  // kBlockM x kBlockK tile of A and a kBlockK x kBlockN tile of B into shared memory (several
  // elements per thread, zeros outside the matrices), synchronise, and each thread adds the
  // phase's products to kThreadM x kThreadN sums held in a register array: for each j of the
  // tile, read kThreadM values of A's column j and kThreadN values of B's row j once, and use
  // each of them kThreadN or kThreadM times. Store the sums that lie inside C. Comment each
  // barrier.
  __shared__ __align__(16) BlockedTiles tiles;
  const bool vector = k % 4 == 0 && n % 4 == 0 &&
                      (reinterpret_cast<std::uintptr_t>(a) | reinterpret_cast<std::uintptr_t>(b) |
                       reinterpret_cast<std::uintptr_t>(c)) % 16 == 0;
  if (vector)
    blocked_body<true>(m, n, k, a, b, c, tiles);
  else
    blocked_body<false>(m, n, k, a, b, c, tiles);
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
