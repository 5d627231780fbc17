// Grader-only ground truth for lab 06 on the host: the CUDA toolkit's own occupancy calculator,
// cuda_occupancy.h, fed with the same DeviceSpec and KernelResources as the student's model. It is
// a header-only library that runs on the CPU, so thousands of cases are checked without a GPU.
#pragma once

#include <cstddef>

#include "occupancy.h"

namespace oracle {

/// What cudaOccMaxActiveBlocksPerMultiprocessor says, in the lab's terms (limits, limiting
/// factors, allocated registers and shared memory per block).
lab06::Occupancy occupancy(const lab06::DeviceSpec& device, const lab06::KernelResources& kernel,
                           int block_size, std::size_t dynamic_shared);

/// What cudaOccMaxPotentialOccupancyBlockSizeVariableSMem chooses, with `block_size_limit` applied
/// as cudaOccupancyMaxPotentialBlockSizeVariableSMem applies it (0: none).
lab06::BlockChoice choose_block_size(const lab06::DeviceSpec& device,
                                     const lab06::KernelResources& kernel,
                                     const lab06::DynamicSharedFn& dynamic_shared,
                                     int block_size_limit);

/// The shared memory per SM the calculator works with for one block of `block_shared` bytes
/// under a carveout preference (cudaOccSMemPerMultiprocessor, then its enlargement when one block
/// does not fit).
std::size_t shared_per_sm(const lab06::DeviceSpec& device, int carveout_percent,
                          std::size_t block_shared);

}  // namespace oracle
