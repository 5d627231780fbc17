// Lab 03's student functions as the judge calls them (kit/remote.h): every function of
// coalescing.h and coalescing_math.cuh that a test calls, with its exact signature, the codec of
// ParticlesSoA (a struct of device pointers), and the grader's probes that run beside the student's
// code (probes.cu).
#pragma once

#include <cstdint>
#include <vector>

#include "coalescing.h"
#include "kit/remote.h"

namespace lab03_probe {

/// The student's kPaddedPitch (coalescing_math.cuh): the constant the student sets in step 3, so
/// the judge asks the worker for it rather than trusting a copy of its own.
unsigned padded_pitch(int unused);

/// What the student's matmul_element says for the threads of blocks first_block ..
/// first_block + blocks - 1 (fewer at the end of the grid) of a grid of `grid` blocks of `block`
/// threads; blocks are numbered bx fastest, then by, then bz, and each block's threads follow in
/// the order tz, ty, tx (tx fastest). The judge asks for a grid in slices: a 1000 x 1100 C has
/// over a million threads, too many for one remote call each.
std::vector<lab03::MatIndex> matmul_elements(dim3 grid, dim3 block, std::uint64_t first_block,
                                             std::uint64_t blocks);

/// What the student's aos_to_soa_source says for the threads 0 .. block.x - 1 of blocks
/// first_block .. first_block + blocks - 1 (x only; fewer at the end of a grid of grid_x), block
/// after block, for n particles. In slices, as matmul_elements.
std::vector<std::uint64_t> aos_to_soa_sources(unsigned grid_x, dim3 block, unsigned n,
                                              std::uint64_t first_block, std::uint64_t blocks);

/// What the student's tile_load (store false) or tile_store says for every thread (tx, ty) of
/// `threads` in block `block`, each pass below `passes`: pass after pass, then ty, tx fastest.
/// One call per block and direction, where the judge made one per thread and pass.
std::vector<lab03::TileMove> tile_moves(uint3 block, dim3 threads, unsigned passes, bool store);

}  // namespace lab03_probe

namespace kit::remote {

/// ParticlesSoA holds four device pointers: each travels as a pointer (an IPC handle and an
/// offset), so the worker's copy points into the judge's buffers.
template <>
struct Codec<lab03::ParticlesSoA> {
  static void put(Writer& w, const lab03::ParticlesSoA& soa) {
    for (const float* p : {soa.x, soa.y, soa.vx, soa.vy}) Codec<const float*>::put(w, p);
  }
  static lab03::ParticlesSoA get(Reader& r) {
    // Braced initialisation decodes the four pointers left to right, in the order put wrote them.
    return lab03::ParticlesSoA{Codec<float*>::get(r), Codec<float*>::get(r), Codec<float*>::get(r),
                               Codec<float*>::get(r)};
  }
};

}  // namespace kit::remote

#define KIT_LAB_REMOTE(X)                                                                        \
  X(lab03, aos_to_soa, kit::Launch,                                                              \
    (unsigned, const lab03::Particle*, lab03::ParticlesSoA, cudaStream_t))                        \
  X(lab03, integrate_soa, kit::Launch, (unsigned, float, lab03::ParticlesSoA, cudaStream_t))      \
  X(lab03, matmul, kit::Launch,                                                                  \
    (unsigned, unsigned, unsigned, const float*, const float*, float*, cudaStream_t))             \
  X(lab03, transpose_naive, kit::Launch, (unsigned, unsigned, const float*, float*, cudaStream_t)) \
  X(lab03, transpose_tiled, kit::Launch, (unsigned, unsigned, const float*, float*, cudaStream_t)) \
  X(lab03, transpose_padded, kit::Launch,                                                        \
    (unsigned, unsigned, const float*, float*, cudaStream_t))                                     \
  X(lab03, aos_to_soa_source, std::size_t, (uint3, dim3, uint3, unsigned))                        \
  X(lab03, aos_field, unsigned, (std::size_t))                                                   \
  X(lab03, aos_particle, std::size_t, (std::size_t))                                             \
  X(lab03, particle_of_thread, std::size_t, (uint3, dim3, uint3))                                \
  X(lab03, matmul_element, lab03::MatIndex, (uint3, dim3, uint3))                                \
  X(lab03, matmul_grid, dim3, (unsigned, unsigned, dim3))                                        \
  X(lab03, transposed_offset, std::size_t, (unsigned, unsigned, unsigned, unsigned))              \
  X(lab03, naive_transpose_element, lab03::MatIndex, (uint3, dim3, uint3))                       \
  X(lab03, tile_load, lab03::TileMove, (uint3, uint3, unsigned))                                 \
  X(lab03, tile_store, lab03::TileMove, (uint3, uint3, unsigned))                                \
  X(lab03_probe, padded_pitch, unsigned, (int))                                                  \
  X(lab03_probe, matmul_elements, std::vector<lab03::MatIndex>,                                 \
    (dim3, dim3, std::uint64_t, std::uint64_t))                                                   \
  X(lab03_probe, aos_to_soa_sources, std::vector<std::uint64_t>,                                 \
    (unsigned, dim3, unsigned, std::uint64_t, std::uint64_t))                                     \
  X(lab03_probe, tile_moves, std::vector<lab03::TileMove>, (uint3, dim3, unsigned, bool))
