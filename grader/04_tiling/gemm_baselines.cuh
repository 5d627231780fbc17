// The yardsticks of lab 04, shared by the grader (test_tiling.cu) and the benchmark
// (bench_tiling.cu). They live here, in grader/, so nothing a student edits can change them:
//  - naive_matmul: the coalesced one-thread-per-element product of lab 03 (column of C from
//    threadIdx.x), the in-run baseline that step 2's tiles must beat;
//  - Cublas::sgemm: cuBLAS FP32 with pedantic math (no TF32 tensor cores, no reduced-precision
//    shortcuts), the ceiling of both steps and the reference result for large sizes;
//  - Cublas::abs_product: |A| |B|, the sums of |a_ij b_jk| that bound the rounding error of any
//    FP32 evaluation of each element of A B.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>

#include "kit/buffers.h"
#include "kit/check.h"

namespace lab04_grader {

inline void cublas_check(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(call) + " failed: " + cublasGetStatusString(status));
}
#define LAB04_CUBLAS_CHECK(call) ::lab04_grader::cublas_check((call), #call)

// One thread per element of C, 32 x 8 blocks, column from x: a warp reads 32 neighbouring floats
// of B and one float of A (a broadcast), and writes 32 neighbouring floats of C.
__global__ void naive_matmul_kernel(unsigned m, unsigned n, unsigned k, const float* __restrict__ a,
                                    const float* __restrict__ b, float* __restrict__ c) {
  const unsigned row = threadIdx.y + blockIdx.y * blockDim.y;
  const unsigned col = threadIdx.x + blockIdx.x * blockDim.x;
  if (row >= m || col >= n) return;
  float sum = 0.0f;
  for (unsigned j = 0; j < k; ++j) sum += a[std::size_t(row) * k + j] * b[std::size_t(j) * n + col];
  c[std::size_t(row) * n + col] = sum;
}

inline void naive_matmul(unsigned m, unsigned n, unsigned k, const float* d_a, const float* d_b,
                         float* d_c, cudaStream_t stream) {
  const dim3 block(32, 8);
  const dim3 grid((n + block.x - 1) / block.x, (m + block.y - 1) / block.y);
  naive_matmul_kernel<<<grid, block, 0, stream>>>(m, n, k, d_a, d_b, d_c);
  KIT_CHECK_LAUNCH("naive_matmul_kernel");
}

__global__ void abs_kernel(std::size_t count, const float* __restrict__ src, float* __restrict__ dst) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count;
       i += std::size_t(gridDim.x) * blockDim.x)
    dst[i] = fabsf(src[i]);
}

// A cuBLAS handle in pedantic FP32 mode, for row-major products.
class Cublas {
 public:
  Cublas() {
    LAB04_CUBLAS_CHECK(cublasCreate(&handle_));
    LAB04_CUBLAS_CHECK(cublasSetMathMode(handle_, CUBLAS_PEDANTIC_MATH));
  }
  ~Cublas() { cublasDestroy(handle_); }
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;

  // Row-major C (m x n) = A (m x k) B (k x n). cuBLAS is column-major, where the same memory
  // holds C^T = B^T A^T: so ask it for B^T A^T with the operands swapped.
  void sgemm(unsigned m, unsigned n, unsigned k, const float* d_a, const float* d_b, float* d_c,
             cudaStream_t stream) {
    const float one = 1.0f, zero = 0.0f;
    LAB04_CUBLAS_CHECK(cublasSetStream(handle_, stream));
    LAB04_CUBLAS_CHECK(cublasSgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, int(n), int(m), int(k), &one,
                                   d_b, int(n), d_a, int(k), &zero, d_c, int(n)));
  }

  // d_out (m x n) = |A| |B|, element-wise absolute values.
  void abs_product(unsigned m, unsigned n, unsigned k, const float* d_a, const float* d_b,
                   float* d_out) {
    kit::DeviceBuffer<float> abs_a(std::size_t(m) * k), abs_b(std::size_t(k) * n);
    abs_kernel<<<1024, 256>>>(abs_a.size(), d_a, abs_a.data());
    KIT_CHECK_LAUNCH("abs_kernel");
    abs_kernel<<<1024, 256>>>(abs_b.size(), d_b, abs_b.data());
    KIT_CHECK_LAUNCH("abs_kernel");
    sgemm(m, n, k, abs_a.data(), abs_b.data(), d_out, 0);
    KIT_CUDA_CHECK(cudaDeviceSynchronize());
  }

 private:
  cublasHandle_t handle_ = nullptr;
};

}  // namespace lab04_grader
