// The ceiling of lab 05's reduction comparison, shared by the grader (test_reduce.cu) and the
// benchmark (bench_divergence.cu): NVIDIA's own reduction, from CUB (header-only, in the CUDA
// toolkit). CUB is compiled in cub_sum.cu alone: its templates are the slowest part of the lab's
// build, and a file of their own compiles beside the tests instead of after them.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "kit/buffers.h"

namespace lab05_grader {

// cub::DeviceReduce::Sum over n floats. Its temporary storage is allocated once, here, so that
// run() times the reduction alone.
class CubSum {
 public:
  CubSum(const float* d_in, float* d_out, unsigned n);
  void run(cudaStream_t stream);

 private:
  const float* d_in_;
  float* d_out_;
  unsigned n_;
  std::size_t temp_bytes_ = 0;
  kit::DeviceBuffer<unsigned char> temp_;
};

}  // namespace lab05_grader
