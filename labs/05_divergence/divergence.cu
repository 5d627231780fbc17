// Lab 05, warp divergence: a branch that splits no warp, and a sum reduction taken from a
// divergent tree to one that runs near memory bandwidth.
//
//   Step 1  branch_warp_aligned_kernel: each warp runs one path of an if/else (see branch_map.cuh)
//   Step 2  four reductions, one rung of the ladder each:
//             1 interleaved addressing   t % (2 * s) == 0: divergent in almost every round
//             2 sequential addressing    t < s: whole warps drop out together
//             3 warp shuffles            __shfl_down_sync: the last rounds leave shared memory
//             4 grid-stride              many elements per thread, then one block reduction
//   Perf    reduce_best: the reduction the grader times against cub::DeviceReduce::Sum
//
// Edit the TODO regions here, in branch_map.cuh and in divergence_model.cpp, then grade:
//     python3 grader/kit.py grade 05
// The handout (docs/labs/05_divergence.md) explains each step; `python3 grader/kit.py hint 05 2`
// gives hints one at a time.
#include "divergence.h"
#include "kit/check.h"

namespace lab05 {

// ---- Step 1: a branch at warp granularity ------------------------------------------------------

__global__ void branch_warp_aligned_kernel(unsigned n, const float* x, float* out) {
  // TODO(divergence.1): find this thread's element through warp_aligned_element, then write
  // element_value for it. Threads past the end do nothing.
  // END(divergence.1)
}

kit::Launch branch_warp_aligned(unsigned n, const float* d_x, float* d_out, cudaStream_t stream) {
  const kit::Launch launch{dim3((n + kBranchBlock - 1) / kBranchBlock), dim3(kBranchBlock)};
  branch_warp_aligned_kernel<<<launch.grid, launch.block, 0, stream>>>(n, d_x, d_out);
  KIT_CHECK_LAUNCH("branch_warp_aligned_kernel");
  return launch;
}

// ---- Step 2: four reductions -------------------------------------------------------------------
//
// Each kernel sums the values of one block's share of `in` and writes that block's total to
// block_sums[blockIdx.x]. The launchers below (already written) run a kernel again over the block
// totals until one block is left, whose total lands in d_out[0]. Every kernel runs with
// kReduceBlock threads per block. Values past the end of the input count as 0, the identity of +.

// Version 1: interleaved addressing, one element per thread.
template <class T>
__global__ void reduce_interleaved_kernel(const T* in, T* block_sums, unsigned n) {
  __shared__ T partial[kReduceBlock];
  // TODO(divergence.2): load one element per thread into partial[], then in rounds
  // s = 1, 2, 4, ... let thread t add partial[t + s] into partial[t] when t % (2 * s) == 0.
  // Every round must see the previous round complete.
  (void)partial;
  // END(divergence.2)
}

// Version 2: sequential addressing, one element per thread.
template <class T>
__global__ void reduce_sequential_kernel(const T* in, T* block_sums, unsigned n) {
  __shared__ T partial[kReduceBlock];
  // TODO(divergence.2): the same tree, folded the other way: in rounds s = blockDim.x / 2, ...,
  // 2, 1 the first s threads add partial[t + s] into partial[t].
  (void)partial;
  // END(divergence.2)
}

// Version 3: warp shuffles. warp_sum and block_sum are reused by versions 4 and up.

/// The sum of `v` over the 32 lanes of the calling warp, valid in lane 0. Every lane must call it.
template <class T>
__device__ T warp_sum(T v) {
  // TODO(divergence.2): halve the distance each round: 16, 8, 4, 2, 1, adding the value
  // __shfl_down_sync fetches from the lane that far above.
  return v;
  // END(divergence.2)
}

/// The sum of `v` over the whole block, valid in thread 0. Every thread must call it;
/// `warp_sums` is shared memory for one value per warp of the block.
template <class T>
__device__ T block_sum(T v, T* warp_sums) {
  // TODO(divergence.2): each warp sums its own values; lane 0 of each warp leaves the warp's
  // total in warp_sums; then the first warp sums those totals.
  (void)warp_sums;
  return v;
  // END(divergence.2)
}

template <class T>
__global__ void reduce_shuffle_kernel(const T* in, T* block_sums, unsigned n) {
  __shared__ T warp_sums[kReduceWarps];
  // TODO(divergence.2): one element per thread, summed over the block with block_sum.
  (void)warp_sums;
  // END(divergence.2)
}

// Version 4: a grid of a fixed size, many elements per thread.
template <class T>
__global__ void reduce_grid_stride_kernel(const T* in, T* block_sums, unsigned n) {
  __shared__ T warp_sums[kReduceWarps];
  // TODO(divergence.2): each thread first adds up elements i, i + G, i + 2G, ... where G is the
  // number of threads in the whole grid (a grid-stride loop), four at a time into four separate
  // sums, so that four loads are in flight at once; then the block sums with block_sum.
  (void)warp_sums;
  // END(divergence.2)
}

// ---- Launchers of Step 2 (already written) -------------------------------------------------------

template <class T>
using ReduceKernel = void (*)(const T*, T*, unsigned);

unsigned blocks_for(unsigned count) { return (count + kReduceBlock - 1) / kReduceBlock; }

// Runs `kernel` over the n inputs, one element per thread, then over the block totals it left,
// and so on until a single block writes the total to d_out[0]. Each pass writes its block totals
// to fresh scratch, so no pass overwrites what it reads.
template <class T>
kit::Launch reduce_in_passes(ReduceKernel<T> kernel, const char* name, const T* d_in, unsigned n,
                             T* d_out, T* d_scratch, cudaStream_t stream) {
  const kit::Launch first{dim3(blocks_for(n)), dim3(kReduceBlock)};
  const T* src = d_in;
  T* free_scratch = d_scratch;
  for (unsigned count = n;;) {
    const unsigned blocks = blocks_for(count);
    T* dst = blocks == 1 ? d_out : free_scratch;
    kernel<<<blocks, kReduceBlock, 0, stream>>>(src, dst, count);
    KIT_CHECK_LAUNCH(name);
    if (blocks == 1) return first;
    src = dst;
    free_scratch += blocks;
    count = blocks;
  }
}

// Blocks of kReduceBlock threads that fit on the GPU at once: one full wave.
unsigned resident_blocks() {
  static const unsigned blocks = [] {
    int device = 0, sms = 0, threads_per_sm = 0;
    KIT_CUDA_CHECK(cudaGetDevice(&device));
    KIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    KIT_CUDA_CHECK(
        cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device));
    return static_cast<unsigned>(sms) * (static_cast<unsigned>(threads_per_sm) / kReduceBlock);
  }();
  return blocks;
}

// A grid-stride kernel in two launches: a grid of at most one wave of blocks over the input,
// then one block over their totals. `elements_per_thread` only sizes the grid for small inputs.
template <class T>
kit::Launch reduce_two_passes(ReduceKernel<T> kernel, const char* name, unsigned elements_per_thread,
                              const T* d_in, unsigned n, T* d_out, T* d_scratch,
                              cudaStream_t stream) {
  unsigned blocks = (n + kReduceBlock * elements_per_thread - 1) / (kReduceBlock * elements_per_thread);
  blocks = blocks < resident_blocks() ? blocks : resident_blocks();
  blocks = blocks < kMaxReduceGrid ? blocks : kMaxReduceGrid;
  const kit::Launch launch{dim3(blocks), dim3(kReduceBlock)};
  kernel<<<blocks, kReduceBlock, 0, stream>>>(d_in, blocks == 1 ? d_out : d_scratch, n);
  KIT_CHECK_LAUNCH(name);
  if (blocks > 1) {
    kernel<<<1, kReduceBlock, 0, stream>>>(d_scratch, d_out, blocks);
    KIT_CHECK_LAUNCH(name);
  }
  return launch;
}

kit::Launch reduce_interleaved(const int* d_in, unsigned n, int* d_out, int* d_scratch,
                               cudaStream_t stream) {
  return reduce_in_passes<int>(reduce_interleaved_kernel<int>, "reduce_interleaved_kernel", d_in,
                               n, d_out, d_scratch, stream);
}
kit::Launch reduce_interleaved(const float* d_in, unsigned n, float* d_out, float* d_scratch,
                               cudaStream_t stream) {
  return reduce_in_passes<float>(reduce_interleaved_kernel<float>, "reduce_interleaved_kernel",
                                 d_in, n, d_out, d_scratch, stream);
}

kit::Launch reduce_sequential(const int* d_in, unsigned n, int* d_out, int* d_scratch,
                              cudaStream_t stream) {
  return reduce_in_passes<int>(reduce_sequential_kernel<int>, "reduce_sequential_kernel", d_in, n,
                               d_out, d_scratch, stream);
}
kit::Launch reduce_sequential(const float* d_in, unsigned n, float* d_out, float* d_scratch,
                              cudaStream_t stream) {
  return reduce_in_passes<float>(reduce_sequential_kernel<float>, "reduce_sequential_kernel", d_in,
                                 n, d_out, d_scratch, stream);
}

kit::Launch reduce_shuffle(const int* d_in, unsigned n, int* d_out, int* d_scratch,
                           cudaStream_t stream) {
  return reduce_in_passes<int>(reduce_shuffle_kernel<int>, "reduce_shuffle_kernel", d_in, n, d_out,
                               d_scratch, stream);
}
kit::Launch reduce_shuffle(const float* d_in, unsigned n, float* d_out, float* d_scratch,
                           cudaStream_t stream) {
  return reduce_in_passes<float>(reduce_shuffle_kernel<float>, "reduce_shuffle_kernel", d_in, n,
                                 d_out, d_scratch, stream);
}

kit::Launch reduce_grid_stride(const int* d_in, unsigned n, int* d_out, int* d_scratch,
                               cudaStream_t stream) {
  return reduce_two_passes<int>(reduce_grid_stride_kernel<int>, "reduce_grid_stride_kernel", 4,
                                d_in, n, d_out, d_scratch, stream);
}
kit::Launch reduce_grid_stride(const float* d_in, unsigned n, float* d_out, float* d_scratch,
                               cudaStream_t stream) {
  return reduce_two_passes<float>(reduce_grid_stride_kernel<float>, "reduce_grid_stride_kernel", 4,
                                  d_in, n, d_out, d_scratch, stream);
}

// ---- Performance step (optional) -----------------------------------------------------------------

// TODO(divergence.perf): optional. reduce_grid_stride() already earns the performance points; a
// kernel that keeps more bytes in flight per thread gets closer to CUB. Write it here, launch it
// from reduce_best() below (reduce_two_passes() can launch it), and say how many elements each
// thread handles per loop iteration.
// END(divergence.perf)

template <class T>
kit::Launch reduce_best_of(const T* d_in, unsigned n, T* d_out, T* d_scratch, cudaStream_t stream) {
  // TODO(divergence.perf): optional. Launch your faster reduction here.
  return reduce_grid_stride(d_in, n, d_out, d_scratch, stream);
  // END(divergence.perf)
}

kit::Launch reduce_best(const int* d_in, unsigned n, int* d_out, int* d_scratch,
                        cudaStream_t stream) {
  return reduce_best_of<int>(d_in, n, d_out, d_scratch, stream);
}
kit::Launch reduce_best(const float* d_in, unsigned n, float* d_out, float* d_scratch,
                        cudaStream_t stream) {
  return reduce_best_of<float>(d_in, n, d_out, d_scratch, stream);
}

}  // namespace lab05
