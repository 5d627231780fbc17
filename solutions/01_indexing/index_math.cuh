/// @file index_math.cuh
/// @brief Lab 01, thread indexing: the index arithmetic every kernel starts with.
///
/// These functions are `__host__ __device__`: the kernels in indexing.cu call them on the GPU, and
/// the grader calls the very same code on the CPU, so the host-side steps are graded without a GPU.
/// Grade with `python3 grader/kit.py grade 01`; the handout is docs/labs/01_indexing.md.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace lab01 {

// ---- Step 1: one dimension -------------------------------------------------------------------

/// Number of blocks of `block_size` threads needed to give each of `n` elements a thread.
/// 1000 elements in blocks of 256 need 4 blocks (the last one has 24 idle threads).
__host__ __device__ inline unsigned grid_size_1d(unsigned n, unsigned block_size) {
  // DONE(indexing.1): round up, so the last partial block still gets launched.
  return (n + block_size - 1) / block_size;
  // END(indexing.1)
}

/// Position of a thread across the whole 1D grid: all the threads of the blocks before it, plus
/// its own place within its block.
__host__ __device__ inline unsigned global_index_1d(uint3 block_idx, dim3 block_dim,
                                                    uint3 thread_idx) {
  // DONE(indexing.1): skip the earlier blocks, then add the thread's offset in its block.
  return block_idx.x * block_dim.x + thread_idx.x;
  // END(indexing.1)
}

// ---- Step 2: two dimensions ------------------------------------------------------------------

/// Grid that covers a rows x cols matrix with `block`: x counts blocks across the columns,
/// y counts blocks down the rows.
__host__ __device__ inline dim3 grid_size_2d(unsigned rows, unsigned cols, dim3 block) {
  // DONE(indexing.2): x covers the columns, y covers the rows; round up in both.
  return dim3(grid_size_1d(cols, block.x), grid_size_1d(rows, block.y), 1);
  // END(indexing.2)
}

/// Offset of (row, col) in a row-major matrix with `cols` columns.
__host__ __device__ inline std::size_t flatten_2d(unsigned row, unsigned col, unsigned cols) {
  // DONE(indexing.2): a whole row of `cols` elements precedes each row.
  return static_cast<std::size_t>(row) * cols + col;
  // END(indexing.2)
}

// ---- Step 3: three dimensions ----------------------------------------------------------------

/// Grid that covers a depth x rows x cols volume with `block` (x: columns, y: rows, z: depth).
__host__ __device__ inline dim3 grid_size_3d(unsigned depth, unsigned rows, unsigned cols,
                                             dim3 block) {
  // DONE(indexing.3): one rounded-up block count per axis.
  return dim3(grid_size_1d(cols, block.x), grid_size_1d(rows, block.y),
              grid_size_1d(depth, block.z));
  // END(indexing.3)
}

/// Offset of (z, y, x) in a row-major volume of `rows` x `cols` planes.
__host__ __device__ inline std::size_t flatten_3d(unsigned z, unsigned y, unsigned x, unsigned rows,
                                                  unsigned cols) {
  // DONE(indexing.3): a plane is rows * cols elements; inside it, the 2D rule.
  return (static_cast<std::size_t>(z) * rows + y) * cols + x;
  // END(indexing.3)
}

// ---- Step 4: warps inside a block ------------------------------------------------------------

/// Number of threads per warp on every NVIDIA GPU so far.
constexpr unsigned kWarpSize = 32;

/// Position of a thread in its block when the block is laid out in one line: x fastest,
/// then y, then z. This is the order in which the hardware cuts a block into warps.
__host__ __device__ inline unsigned linear_thread_index(uint3 thread_idx, dim3 block_dim) {
  // DONE(indexing.4): x moves fastest, then y, then z.
  return thread_idx.x + thread_idx.y * block_dim.x + thread_idx.z * block_dim.x * block_dim.y;
  // END(indexing.4)
}

/// Which warp of its block a thread belongs to.
__host__ __device__ inline unsigned warp_index(uint3 thread_idx, dim3 block_dim) {
  // DONE(indexing.4): consecutive runs of 32 linear positions form one warp.
  return linear_thread_index(thread_idx, block_dim) / kWarpSize;
  // END(indexing.4)
}

/// The thread's lane (0..31) within its warp.
__host__ __device__ inline unsigned lane_index(uint3 thread_idx, dim3 block_dim) {
  // DONE(indexing.4): the position inside the warp's run of 32.
  return linear_thread_index(thread_idx, block_dim) % kWarpSize;
  // END(indexing.4)
}

}  // namespace lab01
