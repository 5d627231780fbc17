// The ceiling of lab 05's branch comparison, shared by the grader (test_branch.cu) and the
// benchmark (bench_divergence.cu). It lives in grader/, not in the student's files, so that no
// edit of a student file can make the comparison easier.
#pragma once

#include "divergence.h"
#include "kit/check.h"

namespace lab05_grader {
namespace {  // one copy per translation unit: a kernel defined in a header

// The seeds' per-lane branch (`tid % 2`): thread t handles element t, so every full warp holds
// 16 even and 16 odd elements and runs both paths, one after the other.
__global__ void branch_per_lane_kernel(unsigned n, const float* x, float* out) {
  const unsigned t = threadIdx.x + blockIdx.x * blockDim.x;
  if (t < n) out[t] = lab05::element_value(t, x[t]);
}

kit::Launch branch_per_lane(unsigned n, const float* d_x, float* d_out, cudaStream_t stream) {
  const kit::Launch launch{dim3((n + lab05::kBranchBlock - 1) / lab05::kBranchBlock),
                           dim3(lab05::kBranchBlock)};
  branch_per_lane_kernel<<<launch.grid, launch.block, 0, stream>>>(n, d_x, d_out);
  KIT_CHECK_LAUNCH("branch_per_lane_kernel");
  return launch;
}

}  // namespace
}  // namespace lab05_grader
