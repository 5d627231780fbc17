/// @file coalescing_math.cuh
/// @brief Lab 03, memory coalescing: which thread touches which element, in every kernel of the lab.
///
/// Each kernel in coalescing.cu asks these small `__host__ __device__` functions where its thread
/// reads and writes. The grader calls the very same functions on the CPU and replays one warp's
/// accesses through a model of the memory system, so it can tell you, without a GPU, how many
/// 32-byte sectors each of your loads and stores touches ("your store touches 32 sectors per
/// request; ideal 4"). Grade with `python3 grader/kit.py grade 03`; the handout is
/// docs/labs/03_coalescing.md.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace lab03 {

/// A position in a row-major matrix.
struct MatIndex {
  unsigned row;
  unsigned col;
};

// ---- Step 1: array of structs to struct of arrays ------------------------------------------------

/// Floats per particle: x, y, vx, vy (see Particle in coalescing.h).
constexpr unsigned kParticleFields = 4;

/// aos_to_soa_kernel runs one thread per *float* of the AoS array, which holds
/// kParticleFields * n floats (n particles). This is the float the thread copies. Any one-to-one
/// assignment gives the right answer; the grader also checks that a warp's 32 loads land on
/// neighbouring addresses.
__host__ __device__ inline std::size_t aos_to_soa_source(uint3 block_idx, dim3 block_dim,
                                                         uint3 thread_idx, unsigned n) {
  // TODO(coalescing.1): which float of the 4n-float AoS array does this thread copy? Think about
  // what lanes 0..31 of one warp should read together.
  return 0;
  // END(coalescing.1)
}

/// The field (0 x, 1 y, 2 vx, 3 vy) that float `f` of the AoS array belongs to.
__host__ __device__ inline unsigned aos_field(std::size_t f) {
  // TODO(coalescing.1): the AoS array stores particle 0's four fields, then particle 1's, ...
  return 0;
  // END(coalescing.1)
}

/// The particle that float `f` of the AoS array belongs to.
__host__ __device__ inline std::size_t aos_particle(std::size_t f) {
  // TODO(coalescing.1): the same layout, seen from the other side.
  return 0;
  // END(coalescing.1)
}

/// The particle that a thread of integrate_soa_kernel updates (one thread per particle).
__host__ __device__ inline std::size_t particle_of_thread(uint3 block_idx, dim3 block_dim,
                                                          uint3 thread_idx) {
  // TODO(coalescing.1): one thread per particle, neighbouring threads on neighbouring particles.
  return 0;
  // END(coalescing.1)
}

// ---- Step 2: the thread mapping of a matrix multiply ---------------------------------------------

/// The mapping matmul_bad_mapping_kernel uses (given, do not change): the row of C comes from the x
/// axis, so the 32 lanes of a warp compute 32 different rows of one column.
__host__ __device__ inline MatIndex matmul_element_bad(uint3 block_idx, dim3 block_dim,
                                                       uint3 thread_idx) {
  return {block_idx.x * block_dim.x + thread_idx.x, block_idx.y * block_dim.y + thread_idx.y};
}

/// The grid that goes with matmul_element_bad: x counts blocks down the m rows of C, y across the n
/// columns.
__host__ __device__ inline dim3 matmul_grid_bad(unsigned m, unsigned n, dim3 block) {
  return dim3((m + block.x - 1) / block.x, (n + block.y - 1) / block.y, 1);
}

/// The element of C (m x n) that a thread of matmul_kernel computes.
__host__ __device__ inline MatIndex matmul_element(uint3 block_idx, dim3 block_dim,
                                                   uint3 thread_idx) {
  // TODO(coalescing.2): which axis of the block do the 32 lanes of a warp run along, and which
  // index of C should change from one lane to the next so that B and C are read and written in
  // neighbouring addresses?
  return {~0u, ~0u};
  // END(coalescing.2)
}

/// The grid of matmul_kernel: it must give every element of the m x n matrix C a thread, with
/// blocks of `block` threads, under your matmul_element.
__host__ __device__ inline dim3 matmul_grid(unsigned m, unsigned n, dim3 block) {
  // TODO(coalescing.2): the grid must agree with matmul_element: which axis covers the columns?
  return dim3(1, 1, 1);
  // END(coalescing.2)
}

// ---- Step 3: matrix transpose --------------------------------------------------------------------

/// Edge of the square tile one block of the tiled transposes moves.
constexpr unsigned kTile = 32;
/// Rows of threads in a block of the transposes: blocks are kTile x kTileRows = 32 x 8 threads.
constexpr unsigned kTileRows = 8;
/// Elements each thread of a tiled transpose moves: a 32 x 8 block moves a 32 x 32 tile in 4 passes.
constexpr unsigned kTilePasses = kTile / kTileRows;

/// Offset in the transposed matrix (cols x rows, row-major) where element (row, col) of the
/// rows x cols input goes.
__host__ __device__ inline std::size_t transposed_offset(unsigned row, unsigned col, unsigned rows,
                                                         unsigned cols) {
  // TODO(coalescing.3): element (row, col) of the input is element (col, row) of the output.
  // How long is one row of the output?
  return 0;
  // END(coalescing.3)
}

/// The input element a thread of transpose_naive_kernel moves (blocks of 32 x 8, one element per
/// thread, grid given by transpose_naive_config in coalescing.h).
__host__ __device__ inline MatIndex naive_transpose_element(uint3 block_idx, dim3 block_dim,
                                                            uint3 thread_idx) {
  // TODO(coalescing.3): the lab 01 mapping: the read should be the coalesced side.
  return {~0u, ~0u};
  // END(coalescing.3)
}

/// One move of a tiled transpose: an element of global memory and a position in the shared tile
/// (row and column inside the kTile x kTile tile).
struct TileMove {
  MatIndex global;
  MatIndex tile;
};

/// Phase 1 of the tiled transpose, pass `pass` (0 .. kTilePasses - 1): the element of the input
/// (rows x cols) that thread `thread_idx` of block `block_idx` loads, and the tile position where it
/// puts it. Block (bx, by) handles the input tile whose top-left corner is (by * 32, bx * 32).
__host__ __device__ inline TileMove tile_load(uint3 block_idx, uint3 thread_idx, unsigned pass) {
  // TODO(coalescing.3): the 32 lanes of a warp share threadIdx.y. Which of them should walk along
  // a row of the input? Where in the tile does each element go?
  return {{~0u, ~0u}, {0, 0}};
  // END(coalescing.3)
}

/// Phase 2, pass `pass`: the element of the output (cols x rows) that the thread stores, and the
/// tile position it takes the value from. The same block writes the output tile whose top-left
/// corner is (bx * 32, by * 32).
__host__ __device__ inline TileMove tile_store(uint3 block_idx, uint3 thread_idx, unsigned pass) {
  // TODO(coalescing.3): lanes should walk along a row of the *output* now; which tile position
  // holds the input element that belongs there?
  return {{~0u, ~0u}, {0, 0}};
  // END(coalescing.3)
}

/// Floats per row of the shared tile in transpose_tiled: exactly kTile, no padding (given).
constexpr unsigned kUnpaddedPitch = kTile;

/// Floats per row of the shared tile in transpose_padded.
// TODO(coalescing.3): pad the tile so that reading one column of it hits 32 different banks.
constexpr unsigned kPaddedPitch = kTile;
// END(coalescing.3)

/// Offset of tile position `t` in a shared array with `pitch` floats per row, as in
/// `__shared__ float tile[kTile][pitch]` (given).
__host__ __device__ inline unsigned tile_offset(MatIndex t, unsigned pitch) {
  return t.row * pitch + t.col;
}

}  // namespace lab03
