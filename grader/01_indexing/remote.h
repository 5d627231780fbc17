// Lab 01's student functions as the judge calls them (kit/remote.h): every function of
// indexing.h and index_math.cuh that a test calls, with its exact signature, plus the grader's
// probe that must run beside the student's device functions (probes.cu).
#pragma once

#include "indexing.h"

namespace lab01_probe {
/// Runs one block of shape `block` in which every thread stores what lab01::warp_index and
/// lab01::lane_index say about it, at its linear position in the block.
void record_said_warps(dim3 block, unsigned* said_warp, unsigned* said_lane);
}  // namespace lab01_probe

#define KIT_LAB_REMOTE(X)                                                                         \
  X(lab01, saxpy, kit::Launch, (unsigned, float, const float*, const float*, float*, cudaStream_t)) \
  X(lab01, saxpy_fast, kit::Launch,                                                               \
    (unsigned, float, const float*, const float*, float*, cudaStream_t))                          \
  X(lab01, add_biases_2d, kit::Launch,                                                            \
    (unsigned, unsigned, const float*, const float*, const float*, float*, cudaStream_t))          \
  X(lab01, add_biases_3d, kit::Launch,                                                            \
    (unsigned, unsigned, unsigned, const float*, const float*, const float*, const float*, float*, \
     cudaStream_t))                                                                               \
  X(lab01, grid_size_1d, unsigned, (unsigned, unsigned))                                          \
  X(lab01, global_index_1d, unsigned, (uint3, dim3, uint3))                                       \
  X(lab01, grid_size_2d, dim3, (unsigned, unsigned, dim3))                                        \
  X(lab01, flatten_2d, std::size_t, (unsigned, unsigned, unsigned))                               \
  X(lab01, grid_size_3d, dim3, (unsigned, unsigned, unsigned, dim3))                              \
  X(lab01, flatten_3d, std::size_t, (unsigned, unsigned, unsigned, unsigned, unsigned))           \
  X(lab01, linear_thread_index, unsigned, (uint3, dim3))                                          \
  X(lab01, warp_index, unsigned, (uint3, dim3))                                                   \
  X(lab01, lane_index, unsigned, (uint3, dim3))                                                   \
  X(lab01_probe, record_said_warps, void, (dim3, unsigned*, unsigned*))
