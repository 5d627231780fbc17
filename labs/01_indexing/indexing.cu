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
  // TODO(indexing.1): find this thread's element; threads past the end of the array do nothing.
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

// TODO(indexing.perf): optional. saxpy() with one thread per element already earns the
// performance points; a kernel whose threads each handle several elements gets closer to the copy
// bandwidth. Write it here and launch it from saxpy_fast().
// END(indexing.perf)

kit::Launch saxpy_fast(unsigned n, float a, const float* d_x, const float* d_y, float* d_out,
                       cudaStream_t stream) {
  // TODO(indexing.perf): optional. Launch your faster kernel here, with its own grid.
  return saxpy(n, a, d_x, d_y, d_out, stream);
  // END(indexing.perf)
}

// ---- Step 2: a matrix, threads along x covering columns ----------------------------------------

__global__ void add_biases_2d_kernel(unsigned rows, unsigned cols, const float* in,
                                     const float* row_bias, const float* col_bias, float* out) {
  // TODO(indexing.2): row from the y axis, column from the x axis; guard both edges.
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
  // TODO(indexing.3): one coordinate per axis, guard all three, flatten with flatten_3d.
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
