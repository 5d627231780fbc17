// What the judge sees of lab 01's index_math.cuh (kit/remote.h): the declarations only. The
// student's definitions run in the worker; grader/01_indexing/remote.h lists them.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace lab01 {
unsigned grid_size_1d(unsigned n, unsigned block_size);
unsigned global_index_1d(uint3 block_idx, dim3 block_dim, uint3 thread_idx);
dim3 grid_size_2d(unsigned rows, unsigned cols, dim3 block);
std::size_t flatten_2d(unsigned row, unsigned col, unsigned cols);
dim3 grid_size_3d(unsigned depth, unsigned rows, unsigned cols, dim3 block);
std::size_t flatten_3d(unsigned z, unsigned y, unsigned x, unsigned rows, unsigned cols);
constexpr unsigned kWarpSize = 32;
unsigned linear_thread_index(uint3 thread_idx, dim3 block_dim);
unsigned warp_index(uint3 thread_idx, dim3 block_dim);
unsigned lane_index(uint3 thread_idx, dim3 block_dim);
}  // namespace lab01
