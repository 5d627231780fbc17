// Lab 01's probe: grader code that runs in the worker (kit/remote.h), because it calls the
// student's device functions. It only records what they say; the judge compares that with what
// the hardware does, which it observes in its own process (test_indexing.cu).
#include "remote.h"

#include "kit/check.h"

namespace {

__global__ void record_said_warps_kernel(unsigned* said_warp, unsigned* said_lane) {
  const unsigned slot =
      threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;
  said_warp[slot] = lab01::warp_index(threadIdx, blockDim);
  said_lane[slot] = lab01::lane_index(threadIdx, blockDim);
}

}  // namespace

void lab01_probe::record_said_warps(dim3 block, unsigned* said_warp, unsigned* said_lane) {
  record_said_warps_kernel<<<1, block>>>(said_warp, said_lane);
  KIT_CHECK_LAUNCH("record_said_warps_kernel");
}
