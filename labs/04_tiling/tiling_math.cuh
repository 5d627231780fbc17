/// @file tiling_math.cuh
/// @brief Lab 04, shared-memory tiling: the tile sizes, and which element of A and B each thread
/// brings into a shared-memory tile.
///
/// A tiled matrix multiply walks along k in *phases*: in each phase a block copies one tile of A
/// and one tile of B into shared memory, every thread reads them many times, and the block moves
/// on to the next pair. The small `__host__ __device__` functions here say which element each
/// thread copies in which phase, and what goes into the tile where the matrix ends. Your kernels
/// call them on the GPU; the grader calls the very same code on the CPU and checks, without a GPU,
/// that every product A(r, j) B(j, c) is summed exactly once. Grade with
/// `python3 grader/kit.py grade 04`; the handout is docs/labs/04_tiling.md.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace lab04 {

/// A position in a row-major matrix.
struct MatIndex {
  unsigned row;
  unsigned col;
};

// ---- Tile sizes ---------------------------------------------------------------------------------
// The grader and the launchers read these, so you may change them (the handout says what to try).

/// Step 2: a block computes a kTile x kTile tile of C with kTile x kTile threads, walking k in
/// tiles of kTile. 16 and 32 both work; 32 x 32 = 1024 threads is the most a block may have.
constexpr unsigned kTile = 32;

/// Step 3: a block computes a kBlockM x kBlockN tile of C, walking k in tiles of kBlockK...
constexpr unsigned kBlockM = 128;
constexpr unsigned kBlockN = 128;
constexpr unsigned kBlockK = 16;
/// ...and each of its threads computes a kThreadM x kThreadN block of that tile.
constexpr unsigned kThreadM = 8;
constexpr unsigned kThreadN = 8;
/// Threads per block of step 3: one per kThreadM x kThreadN block of the C tile.
constexpr unsigned kBlockThreads = (kBlockM / kThreadM) * (kBlockN / kThreadN);

static_assert(kTile * kTile <= 1024, "a block has at most 1024 threads");
static_assert(kBlockM % kThreadM == 0 && kBlockN % kThreadN == 0,
              "the thread blocks must tile the block's tile of C");
static_assert(kBlockThreads % 32 == 0 && kBlockThreads <= 1024,
              "step 3's block must be whole warps, at most 1024 threads");

// ---- Step 1: the index arithmetic of a tiled multiply -------------------------------------------

/// How many phases of `tile` columns of A (rows of B) cover k. The last phase may be partial.
__host__ __device__ inline unsigned phase_count(unsigned k, unsigned tile) {
  // TODO(tiling.1): enough tiles to cover all k columns of A, the last one possibly partial.
  return 0;
  // END(tiling.1)
}

/// The element of A that thread (ty, tx) copies into position [ty][tx] of the A tile in phase
/// `phase`, for the block whose tile of C starts at row `row0`. The tile is `tile` x `tile`.
__host__ __device__ inline MatIndex a_tile_element(unsigned row0, unsigned phase, unsigned ty,
                                                   unsigned tx, unsigned tile) {
  // TODO(tiling.1): the A tile of a phase holds the block's rows of A and the phase's columns.
  return {0, 0};
  // END(tiling.1)
}

/// The element of B that thread (ty, tx) copies into position [ty][tx] of the B tile in phase
/// `phase`, for the block whose tile of C starts at column `col0`.
__host__ __device__ inline MatIndex b_tile_element(unsigned col0, unsigned phase, unsigned ty,
                                                   unsigned tx, unsigned tile) {
  // TODO(tiling.1): the B tile holds the phase's rows of B and the block's columns.
  return {0, 0};
  // END(tiling.1)
}

/// The value a thread puts in a tile for element `e` of the row-major rows x cols matrix `m`:
/// the element itself when it lies inside the matrix, otherwise 0 (and nothing is read).
__host__ __device__ inline float load_or_zero(const float* m, unsigned rows, unsigned cols,
                                              MatIndex e) {
  // TODO(tiling.1): inside the matrix, the element; outside it, a value that adds nothing to a sum.
  return 0.0f;
  // END(tiling.1)
}

}  // namespace lab04
