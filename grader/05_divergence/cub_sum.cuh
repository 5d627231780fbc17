// The ceiling of lab 05's reduction comparison, shared by the grader (test_reduce.cu) and the
// benchmark (bench_divergence.cu): NVIDIA's own reduction, from CUB (header-only, in the CUDA
// toolkit).
#pragma once

#include <cub/cub.cuh>

#include <cstddef>

#include "kit/buffers.h"
#include "kit/check.h"

namespace lab05_grader {

// cub::DeviceReduce::Sum over n floats. Its temporary storage is allocated once, here, so that
// run() times the reduction alone.
class CubSum {
 public:
  CubSum(const float* d_in, float* d_out, unsigned n) : d_in_(d_in), d_out_(d_out), n_(n) {
    KIT_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, temp_bytes_, d_in_, d_out_, n_));
    temp_ = kit::DeviceBuffer<unsigned char>(temp_bytes_);
  }
  void run(cudaStream_t stream) {
    KIT_CUDA_CHECK(cub::DeviceReduce::Sum(temp_.data(), temp_bytes_, d_in_, d_out_, n_, stream));
  }

 private:
  const float* d_in_;
  float* d_out_;
  unsigned n_;
  std::size_t temp_bytes_ = 0;
  kit::DeviceBuffer<unsigned char> temp_;
};

}  // namespace lab05_grader
