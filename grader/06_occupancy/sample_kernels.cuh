// Real kernels of known resource use for lab 06, shared by the grader and the benchmark: register
// pressure, launch bounds, static and dynamic shared memory, carveout preferences. The grader
// never launches them (the driver answers occupancy questions from a kernel's compiled
// attributes); they compute something only so that the compiler keeps their resources.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "kit/check.h"
#include "occupancy.h"

namespace lab06_grader {

// Keeps N values live in registers at once: the compiler needs about N registers per thread.
template <int N>
__device__ __forceinline__ float register_pressure(const float* __restrict__ in, int rounds,
                                                   unsigned mask) {
  float v[N];
#pragma unroll
  for (int k = 0; k < N; ++k) v[k] = in[(threadIdx.x * 13u + k * 7u) & mask];
  for (int r = 0; r < rounds; ++r) {
#pragma unroll
    for (int k = 0; k < N; ++k) v[k] = fmaf(v[k], v[(k + 1) % N], 1.0001f);
  }
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < N; ++k) sum += v[k];
  return sum;
}

template <int N>
__global__ void registers_kernel(const float* in, float* out, int rounds, unsigned mask) {
  out[blockIdx.x * blockDim.x + threadIdx.x] = register_pressure<N>(in, rounds, mask);
}

// __launch_bounds__(MaxThreads, MinBlocks) caps the registers so that MinBlocks blocks of
// MaxThreads fit on an SM, and makes MaxThreads the kernel's largest block.
template <int N, int MaxThreads, int MinBlocks>
__global__ void __launch_bounds__(MaxThreads, MinBlocks)
    bounded_kernel(const float* in, float* out, int rounds, unsigned mask) {
  out[blockIdx.x * blockDim.x + threadIdx.x] = register_pressure<N>(in, rounds, mask);
}

template <int Bytes>
__global__ void static_shared_kernel(const float* in, float* out, unsigned mask) {
  constexpr int kWords = Bytes / 4;
  __shared__ float tile[kWords];
  for (int i = threadIdx.x; i < kWords; i += blockDim.x) tile[i] = in[i & mask];
  __syncthreads();  // the whole tile is written before any thread reads another thread's element
  out[blockIdx.x * blockDim.x + threadIdx.x] = tile[(threadIdx.x * 7u) % kWords];
}

// Tag only makes distinct kernels, so that each can carry its own attributes.
template <int Tag>
__global__ void dynamic_shared_kernel(const float* in, float* out, int words, unsigned mask) {
  extern __shared__ float dynamic_tile[];
  for (int i = threadIdx.x; i < words; i += blockDim.x) dynamic_tile[i] = in[i & mask];
  __syncthreads();  // the whole tile is written before any thread reads another thread's element
  out[blockIdx.x * blockDim.x + threadIdx.x] = dynamic_tile[(threadIdx.x * 7u) % words];
}

template <int N, int Bytes>
__global__ void mixed_kernel(const float* in, float* out, int rounds, unsigned mask, int words) {
  __shared__ float tile[Bytes / 4];
  extern __shared__ float dynamic_tile[];
  for (int i = threadIdx.x; i < Bytes / 4; i += blockDim.x) tile[i] = in[i & mask];
  for (int i = threadIdx.x; i < words; i += blockDim.x) dynamic_tile[i] = in[(i * 3u) & mask];
  __syncthreads();  // both tiles are written before any thread reads another thread's element
  out[blockIdx.x * blockDim.x + threadIdx.x] = register_pressure<N>(in, rounds, mask) +
                                               tile[(threadIdx.x * 7u) % (Bytes / 4)] +
                                               dynamic_tile[threadIdx.x % (words > 0 ? words : 1)];
}

template <int Percent>
__global__ void carveout_kernel(const float* in, float* out, int words, unsigned mask) {
  __shared__ float tile[1024];  // 4 KiB static
  extern __shared__ float dynamic_tile[];
  for (int i = threadIdx.x; i < 1024; i += blockDim.x) tile[i] = in[i & mask];
  for (int i = threadIdx.x; i < words; i += blockDim.x) dynamic_tile[i] = in[(i * 5u) & mask];
  __syncthreads();  // both tiles are written before any thread reads another thread's element
  out[blockIdx.x * blockDim.x + threadIdx.x] =
      tile[(threadIdx.x * 7u) % 1024] + dynamic_tile[threadIdx.x % (words > 0 ? words : 1)];
}

// A compiled kernel and the attributes to set on it before asking the driver about it.
struct SampleKernel {
  std::string name;
  const void* func;
  int carveout_percent;      // set with cudaFuncSetAttribute when >= 0
  bool opt_in;               // raise its dynamic shared memory limit to the device's maximum
};

// Sets the kernel's attributes (once per process is enough; setting them again is harmless) and
// returns what the driver reports about it afterwards.
inline cudaFuncAttributes prepare(const SampleKernel& k, const lab06::DeviceSpec& device) {
  cudaFuncAttributes attr{};
  KIT_CUDA_CHECK(cudaFuncGetAttributes(&attr, k.func));
  if (k.opt_in) {
    const int most = static_cast<int>(device.shared_per_block_optin - attr.sharedSizeBytes);
    KIT_CUDA_CHECK(cudaFuncSetAttribute(k.func, cudaFuncAttributeMaxDynamicSharedMemorySize, most));
  }
  if (k.carveout_percent >= 0)
    KIT_CUDA_CHECK(cudaFuncSetAttribute(k.func, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        k.carveout_percent));
  KIT_CUDA_CHECK(cudaFuncGetAttributes(&attr, k.func));
  return attr;
}

// The driver's answer, or -1 when it refuses the question.
inline int driver_blocks(const void* func, int block, std::size_t dynamic) {
  int blocks = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, func, block, dynamic) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky; clear it so the test ends clean
    return -1;
  }
  return blocks;
}

// Dynamic shared memory as a function of the block size, as a caller of
// cudaOccupancyMaxPotentialBlockSizeVariableSMem would write it (the runtime calls it from a
// __host__ __device__ function, hence the annotation).
struct DynamicBytes {
  std::size_t per_thread, fixed;
  __host__ __device__ std::size_t operator()(int block) const { return per_thread * block + fixed; }
};

}  // namespace lab06_grader
