// Lab 01, thread indexing: three kernels that each give every element of an array exactly one
// thread, in one, two and three dimensions.
//
// Edit the TODO regions here and in index_math.cuh, then grade:
//     python3 grader/kit.py grade 01
// The handout (docs/labs/01_indexing.md) explains each step; `python3 grader/kit.py hint 01 1`
// gives hints one at a time.
#include "indexing.h"
#include "kit/check.h"

namespace lab01 {

// ---- Step 1: saxpy, one thread per element -----------------------------------------------------

__global__ void saxpy_kernel(unsigned n, float a, const float* x, const float* y, float* out) {
  // DONE(indexing.1): find this thread's element; threads past the end of the array do nothing.
  const unsigned i = global_index_1d(blockIdx, blockDim, threadIdx);
  if (i < n) out[i] = a * x[i] + y[i];
  // END(indexing.1)
}

kit::Launch saxpy(unsigned n, float a, const float* d_x, const float* d_y, float* d_out,
                  cudaStream_t stream) {
  const kit::Launch launch{dim3(grid_size_1d(n, kBlock1d)), dim3(kBlock1d)};
  saxpy_kernel<<<launch.grid, launch.block, 0, stream>>>(n, a, d_x, d_y, d_out);
  KIT_CHECK_LAUNCH("saxpy_kernel");
  return launch;
}

// ---- Performance (optional): several elements per thread ---------------------------------------

// DONE(indexing.perf): optional. saxpy() with one thread per element already earns the
// performance points; a kernel whose threads each handle several elements gets closer to the copy
// bandwidth. Write it here and launch it from saxpy_fast().
// Each block owns a tile of kBlock1d * kSaxpyItems consecutive elements and thread t handles
// t, t + kBlock1d, t + 2 * kBlock1d, ...: every load of a warp still covers 32 neighbouring floats,
// and each thread has 2 * kSaxpyItems independent loads in flight instead of 2, which a GPU with
// several TB/s of bandwidth needs to keep its memory busy. __restrict__ promises x, y and out do
// not overlap, so the compiler may issue all loads before the first store.
constexpr unsigned kSaxpyItems = 4;

__global__ void saxpy_tiled_kernel(unsigned n, float a, const float* __restrict__ x,
                                   const float* __restrict__ y, float* __restrict__ out) {
  const unsigned first = blockIdx.x * blockDim.x * kSaxpyItems + threadIdx.x;
  float xs[kSaxpyItems], ys[kSaxpyItems];
#pragma unroll
  for (unsigned k = 0; k < kSaxpyItems; ++k) {
    const unsigned i = first + k * blockDim.x;
    if (i < n) {
      xs[k] = x[i];
      ys[k] = y[i];
    }
  }
#pragma unroll
  for (unsigned k = 0; k < kSaxpyItems; ++k) {
    const unsigned i = first + k * blockDim.x;
    if (i < n) out[i] = a * xs[k] + ys[k];
  }
}
// END(indexing.perf)

kit::Launch saxpy_fast(unsigned n, float a, const float* d_x, const float* d_y, float* d_out,
                       cudaStream_t stream) {
  // DONE(indexing.perf): optional. Launch your faster kernel here, with its own grid.
  kit::Launch launch{dim3(grid_size_1d(n, kBlock1d * kSaxpyItems)), dim3(kBlock1d)};
  launch.items_per_thread = kSaxpyItems;
  saxpy_tiled_kernel<<<launch.grid, launch.block, 0, stream>>>(n, a, d_x, d_y, d_out);
  KIT_CHECK_LAUNCH("saxpy_tiled_kernel");
  return launch;
  // END(indexing.perf)
}

// ---- Step 2: a matrix, threads along x covering columns ----------------------------------------

__global__ void add_biases_2d_kernel(unsigned rows, unsigned cols, const float* in,
                                     const float* row_bias, const float* col_bias, float* out) {
  // DONE(indexing.2): row from the y axis, column from the x axis; guard both edges.
  const unsigned row = blockIdx.y * blockDim.y + threadIdx.y;
  const unsigned col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < rows && col < cols) {
    const std::size_t i = flatten_2d(row, col, cols);
    out[i] = in[i] + row_bias[row] + col_bias[col];
  }
  // END(indexing.2)
}

kit::Launch add_biases_2d(unsigned rows, unsigned cols, const float* d_in, const float* d_row_bias,
                          const float* d_col_bias, float* d_out, cudaStream_t stream) {
  // 32 threads along x: a warp covers 32 neighbouring columns of one row (lab 03 says why).
  const dim3 block(32, 8);
  const kit::Launch launch{grid_size_2d(rows, cols, block), block};
  add_biases_2d_kernel<<<launch.grid, launch.block, 0, stream>>>(rows, cols, d_in, d_row_bias,
                                                                 d_col_bias, d_out);
  KIT_CHECK_LAUNCH("add_biases_2d_kernel");
  return launch;
}

// ---- Step 3: a volume ------------------------------------------------------------------------

__global__ void add_biases_3d_kernel(unsigned depth, unsigned rows, unsigned cols, const float* in,
                                     const float* z_bias, const float* y_bias, const float* x_bias,
                                     float* out) {
  // DONE(indexing.3): one coordinate per axis, guard all three, flatten with flatten_3d.
  const unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
  const unsigned z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x < cols && y < rows && z < depth) {
    const std::size_t i = flatten_3d(z, y, x, rows, cols);
    out[i] = in[i] + z_bias[z] + y_bias[y] + x_bias[x];
  }
  // END(indexing.3)
}

kit::Launch add_biases_3d(unsigned depth, unsigned rows, unsigned cols, const float* d_in,
                          const float* d_z_bias, const float* d_y_bias, const float* d_x_bias,
                          float* d_out, cudaStream_t stream) {
  const dim3 block(32, 4, 2);
  const kit::Launch launch{grid_size_3d(depth, rows, cols, block), block};
  add_biases_3d_kernel<<<launch.grid, launch.block, 0, stream>>>(depth, rows, cols, d_in, d_z_bias,
                                                                 d_y_bias, d_x_bias, d_out);
  KIT_CHECK_LAUNCH("add_biases_3d_kernel");
  return launch;
}

}  // namespace lab01
