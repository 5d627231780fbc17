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
  // DONE(bounds.1): one element per thread; the threads past the end of the array must not touch
  // memory at all, neither in nor out.
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * in[i] + b;
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
  // DONE(bounds.2): row from y, column from x. The grid overhangs the matrix on the right AND at
  // the bottom; a thread outside it on either axis must not touch memory.
  const unsigned row = blockIdx.y * blockDim.y + threadIdx.y;
  const unsigned col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < rows && col < cols) {
    const std::size_t i = static_cast<std::size_t>(row) * cols + col;
    out[i] = in[i] + u[row] * v[col];
  }
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
  // DONE(bounds.3): one thread per element if that fits in max_blocks blocks; otherwise the cap.
  const unsigned needed = ceil_div(n, block_size);
  return needed < max_blocks ? needed : max_blocks;
  // END(bounds.3)
}

// `in` and `out` may be the same array (see scale_shift_grid_stride in bounds.h).
__global__ void scale_shift_grid_stride_kernel(unsigned n, float a, float b, const float* in,
                                               float* out) {
  // DONE(bounds.3): start at this thread's global index and step by the number of threads in the
  // whole grid until you pass n, so that every element gets exactly one thread whatever the grid
  // size. Beware: the index can pass 2^32 - 1 before the loop ends.
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    out[i] = a * in[i] + b;
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
  // DONE(bounds.4): throw std::invalid_argument, with a message that names the problem, the
  // value and the limit (see bounds.h), for every limit the launch breaks. A block's limit on
  // threads is on the product of its three dimensions.
  const auto fail = [](const std::string& message) { throw std::invalid_argument(message); };
  if (grid.x == 0 || grid.y == 0 || grid.z == 0)
    fail("grid " + dims(grid) + " has a zero dimension; every dimension must be at least 1");
  if (block.x == 0 || block.y == 0 || block.z == 0)
    fail("block " + dims(block) + " has a zero dimension; every dimension must be at least 1");
  // 64 bits overflow only for absurd blocks (three dimensions near 2^22), which the per-axis
  // checks below reject anyway.
  const unsigned long long threads = 1ull * block.x * block.y * block.z;
  if (threads > kMaxThreadsPerBlock)
    fail("block " + dims(block) + " has " + std::to_string(threads) + " threads; the limit is " +
         std::to_string(kMaxThreadsPerBlock));
  const unsigned block_dim[] = {block.x, block.y, block.z}, grid_dim[] = {grid.x, grid.y, grid.z};
  const char* const axes[] = {"x", "y", "z"};
  for (int axis = 0; axis < 3; ++axis) {
    const std::string name = axes[axis];
    if (block_dim[axis] > kMaxBlockDim[axis])
      fail("block." + name + " is " + std::to_string(block_dim[axis]) + "; the limit is " +
           std::to_string(kMaxBlockDim[axis]));
    if (grid_dim[axis] > kMaxGridDim[axis])
      fail("grid." + name + " is " + std::to_string(grid_dim[axis]) + "; the limit is " +
           std::to_string(kMaxGridDim[axis]));
  }
  // END(bounds.4)
}

kit::Launch scale_shift_with_config(unsigned n, float a, float b, const float* d_in, float* d_out,
                                    dim3 grid, dim3 block, std::size_t shared_bytes,
                                    cudaStream_t stream) {
  // DONE(bounds.4): refuse an invalid configuration before anything is launched.
  validate_launch(grid, block);
  // END(bounds.4)
  scale_shift_kernel<<<grid, block, shared_bytes, stream>>>(n, a, b, d_in, d_out);
  // DONE(bounds.4): a launch returns nothing, and a refused one does nothing; ask whether this one
  // was accepted, and throw if not.
  KIT_CHECK_LAUNCH("scale_shift_kernel");
  // END(bounds.4)
  return kit::Launch{grid, block};
}

// ---- Performance (optional): more bytes in flight per thread -----------------------------------

// DONE(bounds.perf): optional. scale_shift_grid_stride() with its default grid already earns the
// performance points on most GPUs; a grid-stride kernel whose threads each keep several loads in
// flight gets closer to the copy bandwidth. Write it here and launch it from scale_shift_fast().
//
// The grid-stride loop walks over tiles of kBlock1d * kItems elements: block b takes tiles b,
// b + gridDim.x, ..., and thread t of a tile handles t, t + blockDim.x, t + 2 * blockDim.x, ...
// Each of a warp's loads still covers 32 neighbouring floats, and each thread issues kItems
// independent loads before it needs the first one, instead of one: the memory system sees four
// times as many bytes requested at once. __restrict__ promises that in and out do not overlap, so
// the compiler may issue every load before the first store.
constexpr unsigned kItems = 4;

__global__ void scale_shift_unrolled_kernel(unsigned n, float a, float b,
                                            const float* __restrict__ in, float* __restrict__ out) {
  const std::size_t tile = static_cast<std::size_t>(blockDim.x) * kItems;
  const std::size_t step = tile * gridDim.x;
  for (std::size_t first = blockIdx.x * tile + threadIdx.x; first < n; first += step) {
    float x[kItems];
#pragma unroll
    for (unsigned k = 0; k < kItems; ++k) {
      const std::size_t i = first + k * blockDim.x;
      if (i < n) x[k] = in[i];
    }
#pragma unroll
    for (unsigned j = 0; j < kItems; ++j) {
      const std::size_t i = first + j * blockDim.x;
      if (i < n) out[i] = a * x[j] + b;
    }
  }
}
// END(bounds.perf)

kit::Launch scale_shift_fast(unsigned n, float a, float b, const float* d_in, float* d_out,
                             cudaStream_t stream) {
  // DONE(bounds.perf): optional. Launch your faster kernel here, with its own grid.
  // A few waves of resident blocks: one wave already keeps four loads in flight per thread on a
  // full GPU; with four, the blocks that finish their share early are followed by others, so the
  // GPU is not left waiting on the slowest block of a single wave.
  constexpr unsigned kWaves = 4;
  static const unsigned resident = resident_blocks(scale_shift_unrolled_kernel, kBlock1d);
  kit::Launch launch{dim3(grid_stride_blocks(n, kBlock1d * kItems, kWaves * resident)),
                     dim3(kBlock1d)};
  launch.items_per_thread = kItems;
  scale_shift_unrolled_kernel<<<launch.grid, launch.block, 0, stream>>>(n, a, b, d_in, d_out);
  KIT_CHECK_LAUNCH("scale_shift_unrolled_kernel");
  return launch;
  // END(bounds.perf)
}

}  // namespace lab02
