// Grader-only ground truth for lab 06: the CUDA toolkit's cuda_occupancy.h on the host. Compiled
// as plain C++ (no nvcc), so the header's calculator runs as ordinary CPU code.
#include "occupancy_oracle.h"

#include <cuda_occupancy.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace oracle {
namespace {

cudaOccDeviceProp device_prop(const lab06::DeviceSpec& d) {
  cudaOccDeviceProp p;
  p.computeMajor = d.cc_major;
  p.computeMinor = d.cc_minor;
  p.maxThreadsPerBlock = d.max_threads_per_block;
  p.maxThreadsPerMultiprocessor = d.max_threads_per_sm;
  p.regsPerBlock = d.registers_per_block;
  p.regsPerMultiprocessor = d.registers_per_sm;
  p.warpSize = d.warp_size;
  p.sharedMemPerBlock = d.shared_per_block;
  p.sharedMemPerMultiprocessor = d.shared_per_sm;
  p.numSms = d.sm_count;
  p.sharedMemPerBlockOptin = d.shared_per_block_optin;
  p.reservedSharedMemPerBlock = d.reserved_shared_per_block;
  return p;
}

// As cudaOccFuncAttributes(const cudaFuncAttributes&) converts a kernel's attributes.
cudaOccFuncAttributes func_attributes(const lab06::KernelResources& k) {
  cudaOccFuncAttributes a;
  a.maxThreadsPerBlock = k.max_threads_per_block;
  a.numRegs = k.registers_per_thread;
  a.sharedSizeBytes = k.static_shared;
  a.partitionedGCConfig = PARTITIONED_GC_OFF;
  a.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
  a.maxDynamicSharedSizeBytes = k.max_dynamic_shared;
  a.numBlockBarriers = 1;
  a.virtualResourceCount = 0;
  return a;
}

cudaOccDeviceState device_state(const lab06::KernelResources& k) {
  cudaOccDeviceState s;
  s.carveoutConfig = k.carveout_percent;
  return s;
}

void check(cudaOccError status, const char* what) {
  if (status != CUDA_OCC_SUCCESS)
    throw std::runtime_error(std::string("cuda_occupancy.h: ") + what + " failed with error " +
                             std::to_string(static_cast<int>(status)));
}

}  // namespace

lab06::Occupancy occupancy(const lab06::DeviceSpec& device, const lab06::KernelResources& kernel,
                           int block_size, std::size_t dynamic_shared) {
  const cudaOccDeviceProp prop = device_prop(device);
  const cudaOccFuncAttributes attr = func_attributes(kernel);
  const cudaOccDeviceState state = device_state(kernel);
  cudaOccResult r{};
  check(cudaOccMaxActiveBlocksPerMultiprocessor(&r, &prop, &attr, &state, block_size,
                                                dynamic_shared),
        "cudaOccMaxActiveBlocksPerMultiprocessor");
  lab06::Occupancy o;
  o.blocks_per_sm = r.activeBlocksPerMultiprocessor;
  const int warps_per_block = (block_size + device.warp_size - 1) / device.warp_size;
  o.warps_per_sm = o.blocks_per_sm * warps_per_block;
  o.occupancy = static_cast<double>(o.warps_per_sm) / (device.max_threads_per_sm / device.warp_size);
  using lab06::Limiter;
  if (r.limitingFactors & OCC_LIMIT_WARPS) o.limited_by = o.limited_by | Limiter::warps;
  if (r.limitingFactors & OCC_LIMIT_BLOCKS) o.limited_by = o.limited_by | Limiter::blocks;
  if (r.limitingFactors & OCC_LIMIT_REGISTERS) o.limited_by = o.limited_by | Limiter::registers;
  if (r.limitingFactors & OCC_LIMIT_SHARED_MEMORY) o.limited_by = o.limited_by | Limiter::shared_memory;
  o.limit_warps = r.blockLimitWarps;
  o.limit_blocks = r.blockLimitBlocks;
  o.limit_registers = r.blockLimitRegs;
  o.limit_shared = r.blockLimitSharedMem;
  o.registers_per_block = r.allocatedRegistersPerBlock;
  o.shared_per_block = r.allocatedSharedMemPerBlock;
  return o;
}

lab06::BlockChoice choose_block_size(const lab06::DeviceSpec& device,
                                     const lab06::KernelResources& kernel,
                                     const lab06::DynamicSharedFn& dynamic_shared,
                                     int block_size_limit) {
  const cudaOccDeviceProp prop = device_prop(device);
  cudaOccFuncAttributes attr = func_attributes(kernel);
  // The runtime's block_size_limit caps the kernel's own limit; the header has no such argument.
  if (block_size_limit > 0) attr.maxThreadsPerBlock = std::min(attr.maxThreadsPerBlock, block_size_limit);
  const cudaOccDeviceState state = device_state(kernel);
  int min_grid = 0, block = 0;
  check(cudaOccMaxPotentialOccupancyBlockSizeVariableSMem(&min_grid, &block, &prop, &attr, &state,
                                                          dynamic_shared),
        "cudaOccMaxPotentialOccupancyBlockSizeVariableSMem");
  lab06::BlockChoice choice;
  choice.block_size = block;
  choice.min_grid_size = min_grid;
  choice.blocks_per_sm = device.sm_count > 0 ? min_grid / device.sm_count : 0;
  return choice;
}

std::size_t shared_per_sm(const lab06::DeviceSpec& device, int carveout_percent,
                          std::size_t block_shared) {
  const cudaOccDeviceProp prop = device_prop(device);
  lab06::KernelResources kernel;
  kernel.carveout_percent = carveout_percent;
  const cudaOccDeviceState state = device_state(kernel);
  std::size_t preferred = 0;
  check(cudaOccSMemPerMultiprocessor(&preferred, &prop, &state), "cudaOccSMemPerMultiprocessor");
  if (block_shared <= preferred) return preferred;
  std::size_t enlarged = block_shared;
  check(cudaOccAlignUpShmemSizeVoltaPlus(&enlarged, &prop), "cudaOccAlignUpShmemSizeVoltaPlus");
  return enlarged;
}

}  // namespace oracle
