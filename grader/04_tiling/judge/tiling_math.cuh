// What the judge sees of lab 04's tiling_math.cuh (kit/remote.h): the type, the declarations of the
// functions the tests call (the student's definitions run in the worker), and the stub's tile sizes
// so that tiling.h compiles. The judge never relies on these sizes: a student may change them, so
// it asks the worker for the student's own (lab04_probe::tile_sizes, remote.h).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace lab04 {

struct MatIndex {
  unsigned row;
  unsigned col;
};

constexpr unsigned kTile = 32;
constexpr unsigned kBlockM = 128;
constexpr unsigned kBlockN = 128;
constexpr unsigned kBlockK = 16;
constexpr unsigned kThreadM = 8;
constexpr unsigned kThreadN = 8;
constexpr unsigned kBlockThreads = (kBlockM / kThreadM) * (kBlockN / kThreadN);

unsigned phase_count(unsigned k, unsigned tile);
MatIndex a_tile_element(unsigned row0, unsigned phase, unsigned ty, unsigned tx, unsigned tile);
MatIndex b_tile_element(unsigned col0, unsigned phase, unsigned ty, unsigned tx, unsigned tile);

}  // namespace lab04
