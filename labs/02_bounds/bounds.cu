// Lab 02, bounds checks: kernels whose grids do not match their data. The last block of a 1D
// launch runs past the end of the array (step 1), a 2D grid overhangs both edges of a matrix
// (step 2), a grid smaller than the data must loop to cover it (step 3), and a launch the GPU
// refuses must be reported instead of silently doing nothing (step 4).
//
// Edit the TODO regions, then grade:
//     python3 grader/kit.py grade 02
//     python3 grader/kit.py sanitize 02 --tool memcheck     (any access outside an allocation)
// The handout (docs/labs/02_bounds.md) explains each step; `python3 grader/kit.py hint 02 1`
// gives hints one at a time.
#include <sstream>
#include <stdexcept>
#include <string>

#include "bounds.h"
#include "kit/check.h"

namespace lab02 {

// ---- Step 1: the 1D tail ------------------------------------------------------------------------

__global__ void scale_shift_kernel(unsigned n, float a, float b, const float* in, float* out) {
  // TODO(bounds.1): one element per thread; the threads past the end of the array must not touch
  // memory at all, neither in nor out.
  // END(bounds.1)
}

kit::Launch scale_shift(unsigned n, float a, float b, const float* d_in, float* d_out,
                        cudaStream_t stream) {
  const kit::Launch launch{dim3(ceil_div(n, kBlock1d)), dim3(kBlock1d)};
  scale_shift_kernel<<<launch.grid, launch.block, 0, stream>>>(n, a, b, d_in, d_out);
  KIT_CHECK_LAUNCH("scale_shift_kernel");
  return launch;
}

// ---- Step 2: both ragged edges of a 2D grid ----------------------------------------------------

__global__ void rank1_update_kernel(unsigned rows, unsigned cols, const float* in, const float* u,
                                    const float* v, float* out) {
  // TODO(bounds.2): row from y, column from x. The grid overhangs the matrix on the right AND at
  // the bottom; a thread outside it on either axis must not touch memory.
  // END(bounds.2)
}

kit::Launch rank1_update(unsigned rows, unsigned cols, const float* d_in, const float* d_u,
                         const float* d_v, float* d_out, cudaStream_t stream) {
  const dim3 block(kBlock2dX, kBlock2dY);
  const kit::Launch launch{dim3(ceil_div(cols, block.x), ceil_div(rows, block.y)), block};
  rank1_update_kernel<<<launch.grid, launch.block, 0, stream>>>(rows, cols, d_in, d_u, d_v, d_out);
  KIT_CHECK_LAUNCH("rank1_update_kernel");
  return launch;
}

// ---- Step 3: a grid smaller than the data -------------------------------------------------------

// Blocks of `block_size` threads of `kernel` that the whole GPU holds at once: the blocks one SM
// can keep resident (limited by its threads, registers and shared memory; lab 06 works this out by
// hand) times the number of SMs. A larger grid only queues blocks until an SM frees up.
template <class Kernel>
unsigned resident_blocks(Kernel kernel, unsigned block_size) {
  int device = 0, sms = 0, per_sm = 0;
  KIT_CUDA_CHECK(cudaGetDevice(&device));
  KIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  KIT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block_size, 0));
  return static_cast<unsigned>(sms * per_sm);
}

unsigned grid_stride_blocks(unsigned n, unsigned block_size, unsigned max_blocks) {
  // TODO(bounds.3): one thread per element if that fits in max_blocks blocks; otherwise the cap.
  return 0;
  // END(bounds.3)
}

// `in` and `out` may be the same array (see scale_shift_grid_stride in bounds.h).
__global__ void scale_shift_grid_stride_kernel(unsigned n, float a, float b, const float* in,
                                               float* out) {
  // TODO(bounds.3): start at this thread's global index and step by the number of threads in the
  // whole grid until you pass n, so that every element gets exactly one thread whatever the grid
  // size. Beware: the index can pass 2^32 - 1 before the loop ends.
  // END(bounds.3)
}

kit::Launch scale_shift_grid_stride(unsigned n, float a, float b, const float* d_in, float* d_out,
                                    unsigned blocks, cudaStream_t stream) {
  // Asked once: the answer does not change, and the launcher should cost microseconds at most.
  static const unsigned resident = resident_blocks(scale_shift_grid_stride_kernel, kBlock1d);
  const unsigned grid = blocks > 0 ? blocks : grid_stride_blocks(n, kBlock1d, resident);
  const kit::Launch launch{dim3(grid), dim3(kBlock1d)};
  scale_shift_grid_stride_kernel<<<launch.grid, launch.block, 0, stream>>>(n, a, b, d_in, d_out);
  KIT_CHECK_LAUNCH("scale_shift_grid_stride_kernel");
  return launch;
}

// ---- Step 4: refuse a launch the GPU would refuse ----------------------------------------------

// "(2048,1,1)", the way dim3 values appear in messages.
std::string dims(dim3 d) {
  std::ostringstream out;
  out << "(" << d.x << "," << d.y << "," << d.z << ")";
  return out.str();
}

void validate_launch(dim3 grid, dim3 block) {
  // TODO(bounds.4): throw std::invalid_argument, with a message that names the problem, the
  // value and the limit (see bounds.h), for every limit the launch breaks. A block's limit on
  // threads is on the product of its three dimensions.
  throw std::logic_error("validate_launch is not written yet: TODO(bounds.4) in bounds.cu");
  // END(bounds.4)
}

kit::Launch scale_shift_with_config(unsigned n, float a, float b, const float* d_in, float* d_out,
                                    dim3 grid, dim3 block, std::size_t shared_bytes,
                                    cudaStream_t stream) {
  // TODO(bounds.4): refuse an invalid configuration before anything is launched.
  // END(bounds.4)
  scale_shift_kernel<<<grid, block, shared_bytes, stream>>>(n, a, b, d_in, d_out);
  // TODO(bounds.4): a launch returns nothing, and a refused one does nothing; ask whether this one
  // was accepted, and throw if not.
  // END(bounds.4)
  return kit::Launch{grid, block};
}

// ---- Performance (optional): more bytes in flight per thread -----------------------------------

// TODO(bounds.perf): optional. scale_shift_grid_stride() with its default grid already earns the
// performance points on most GPUs; a grid-stride kernel whose threads each keep several loads in
// flight gets closer to the copy bandwidth. Write it here and launch it from scale_shift_fast().
// END(bounds.perf)

kit::Launch scale_shift_fast(unsigned n, float a, float b, const float* d_in, float* d_out,
                             cudaStream_t stream) {
  // TODO(bounds.perf): optional. Launch your faster kernel here, with its own grid.
  return scale_shift_grid_stride(n, a, b, d_in, d_out, 0, stream);
  // END(bounds.perf)
}

}  // namespace lab02
