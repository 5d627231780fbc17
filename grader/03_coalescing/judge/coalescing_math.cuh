// What the judge sees of lab 03's coalescing_math.cuh (kit/remote.h): the types, the given
// constants that coalescing.h's launch configurations use, and the declarations of the functions
// the tests call (the student's definitions run in the worker; grader/03_coalescing/remote.h lists
// them).
//
// kPaddedPitch is deliberately absent: the student sets it in step 3, so the judge must not use a
// copy of its own; it asks the worker for the student's (lab03_probe::padded_pitch, remote.h).
// The given constants below are the lab's: the judge models the launches the kit defines with
// them, while the student's own launchers, in the worker, use the student's header.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace lab03 {

struct MatIndex {
  unsigned row;
  unsigned col;
};

// ---- Step 1 ----
constexpr unsigned kParticleFields = 4;
std::size_t aos_to_soa_source(uint3 block_idx, dim3 block_dim, uint3 thread_idx, unsigned n);
unsigned aos_field(std::size_t f);
std::size_t aos_particle(std::size_t f);
std::size_t particle_of_thread(uint3 block_idx, dim3 block_dim, uint3 thread_idx);

// ---- Step 2 ----
// Given; declared for coalescing.h's matmul_bad_config, which no test calls (so it is not in
// remote.h: the judge uses its own copy of the bad mapping).
dim3 matmul_grid_bad(unsigned m, unsigned n, dim3 block);
MatIndex matmul_element(uint3 block_idx, dim3 block_dim, uint3 thread_idx);
dim3 matmul_grid(unsigned m, unsigned n, dim3 block);

// ---- Step 3 ----
constexpr unsigned kTile = 32;
constexpr unsigned kTileRows = 8;
constexpr unsigned kTilePasses = kTile / kTileRows;
std::size_t transposed_offset(unsigned row, unsigned col, unsigned rows, unsigned cols);
MatIndex naive_transpose_element(uint3 block_idx, dim3 block_dim, uint3 thread_idx);

struct TileMove {
  MatIndex global;
  MatIndex tile;
};

TileMove tile_load(uint3 block_idx, uint3 thread_idx, unsigned pass);
TileMove tile_store(uint3 block_idx, uint3 thread_idx, unsigned pass);

constexpr unsigned kUnpaddedPitch = kTile;

}  // namespace lab03
