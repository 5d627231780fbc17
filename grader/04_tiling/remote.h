// Lab 04's student functions as the judge calls them (kit/remote.h), and the grader's probes that
// must run beside the student's code (probes.cu).
#pragma once

#include <vector>

#include "tiling.h"

namespace lab04_probe {

/// The tile sizes the student chose in tiling_math.cuh (they may change them): the judge names the
/// block that owns a wrong element with these, and replays the student's tiles at their kTile.
struct TileSizes {
  unsigned tile, block_m, block_n, block_k, thread_m, thread_n, block_threads;
};
TileSizes tile_sizes(int unused);

/// The tile elements thread (tx, ty) of the block at (row0, col0) multiplies, every phase p <
/// `phases` and position j < `tile`: [2 (p tile + j)] is lab04::a_tile_element(row0, p, ty, j,
/// tile) and [2 (p tile + j) + 1] is lab04::b_tile_element(col0, p, j, tx, tile). One call for
/// what would be 2 phases tile calls of the worker (34 us each on the host tests' path).
std::vector<lab04::MatIndex> tile_elements(unsigned row0, unsigned col0, unsigned ty, unsigned tx,
                                           unsigned tile, unsigned phases);

/// lab04::load_or_zero on a copy of `storage` in the worker's host memory.
float load_or_zero_on_host(std::vector<float> storage, unsigned rows, unsigned cols,
                           lab04::MatIndex e);

/// What lab04::load_or_zero returns for element `e` of a rows x cols matrix whose offset passes
/// 2^32 - 1, without the matrix: its address space is reserved with no access, and only the
/// element's page (holding `value`) and the page where a 32-bit offset wraps to (holding -value)
/// can be read. Any other offset crashes the worker. Throws std::runtime_error if the space cannot
/// be reserved.
float load_or_zero_past_2_to_32(unsigned rows, unsigned cols, lab04::MatIndex e, float value);

}  // namespace lab04_probe

#define KIT_LAB_REMOTE(X)                                                                     \
  X(lab04, matmul_tiled, kit::Launch,                                                         \
    (unsigned, unsigned, unsigned, const float*, const float*, float*, cudaStream_t))          \
  X(lab04, matmul_blocked, kit::Launch,                                                       \
    (unsigned, unsigned, unsigned, const float*, const float*, float*, cudaStream_t))          \
  X(lab04, phase_count, unsigned, (unsigned, unsigned))                                       \
  X(lab04, a_tile_element, lab04::MatIndex, (unsigned, unsigned, unsigned, unsigned, unsigned)) \
  X(lab04, b_tile_element, lab04::MatIndex, (unsigned, unsigned, unsigned, unsigned, unsigned)) \
  X(lab04_probe, tile_sizes, lab04_probe::TileSizes, (int))                                   \
  X(lab04_probe, tile_elements, std::vector<lab04::MatIndex>,                                  \
    (unsigned, unsigned, unsigned, unsigned, unsigned, unsigned))                              \
  X(lab04_probe, load_or_zero_on_host, float,                                                 \
    (std::vector<float>, unsigned, unsigned, lab04::MatIndex))                                \
  X(lab04_probe, load_or_zero_past_2_to_32, float, (unsigned, unsigned, lab04::MatIndex, float))
