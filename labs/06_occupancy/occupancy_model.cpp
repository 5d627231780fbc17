// Lab 06, occupancy: how many blocks of a kernel fit on one streaming multiprocessor (SM), and
// which block size puts the most threads there. Plain C++: it runs on the CPU, and the grader
// checks it against the CUDA toolkit's calculator (no GPU needed) and against the driver on a GPU.
//
// Edit the TODO regions, then grade:
//     python3 grader/kit.py grade 06
// The handout (docs/labs/06_occupancy.md) explains each step; `python3 grader/kit.py hint 06 2`
// gives hints one at a time. The types and the device specs are in occupancy.h.
#include <algorithm>
#include <cstddef>

#include "occupancy.h"

namespace lab06 {
namespace {

// The smallest multiple of `unit` that is >= `value` (for value >= 0, unit > 0).
[[maybe_unused]] std::size_t round_up(std::size_t value, std::size_t unit) {
  return (value + unit - 1) / unit * unit;
}

// How many groups of `size` it takes to hold `count` (rounded up).
[[maybe_unused]] int ceil_div(int count, int size) { return (count + size - 1) / size; }

}  // namespace

// ---- Step 1: the simple model -------------------------------------------------------------------

// Given the four per-resource limits already stored in `result`, fills in the rest: how many
// blocks are resident, which resources stop one more block, how many warps that is, and the
// occupancy. `warps_per_block` and `max_warps_per_sm` are whole warps.
void settle(Occupancy& result, int warps_per_block, int max_warps_per_sm) {
  // TODO(occupancy.1): the scarcest resource sets blocks_per_sm; limited_by names every resource
  // that sets it (there can be several); then the resident warps and the occupancy.
  // END(occupancy.1)
}

Occupancy simple_occupancy(const SimpleSm& sm, const SimpleKernel& kernel) {
  Occupancy result;
  // TODO(occupancy.1): one limit per budget (threads, blocks, registers, shared memory), each a
  // whole number of blocks; a resource the kernel does not use gives kNoLimit. settle() does the
  // rest.
  // END(occupancy.1)
  return result;
}

// ---- Step 2: the exact hardware model -----------------------------------------------------------

int registers_per_warp(const DeviceSpec& device, int registers_per_thread) {
  // TODO(occupancy.2): registers go to a whole warp at once, in units of
  // device.register_allocation_unit.
  return 0;
  // END(occupancy.2)
}

std::size_t shared_per_block(const DeviceSpec& device, const KernelResources& kernel,
                             std::size_t dynamic_shared) {
  // TODO(occupancy.2): what one block takes: its own shared memory and the driver's share,
  // rounded up to the allocation unit.
  return 0;
  // END(occupancy.2)
}

// TODO(occupancy.2): helpers of your own for step 2, if you want some.
// END(occupancy.2)

std::size_t shared_per_sm(const DeviceSpec& device, int carveout_percent, std::size_t block_shared) {
  // TODO(occupancy.2): the carveout preference (-1: none) picks one of device.shared_configs_kib;
  // when not even one block fits in it, the driver picks a larger one.
  return 0;
  // END(occupancy.2)
}

Occupancy occupancy(const DeviceSpec& device, const KernelResources& kernel, int block_size,
                    std::size_t dynamic_shared) {
  Occupancy result;
  // TODO(occupancy.2): step 1's four limits under the hardware's rules: whole warps, registers
  // per warp and per register-file partition, shared memory as allocated and as configured for
  // this kernel. A block that cannot launch at all has a limit of 0.
  // END(occupancy.2)
  return result;
}

// ---- Step 3: choosing a block size --------------------------------------------------------------

BlockChoice choose_block_size(const DeviceSpec& device, const KernelResources& kernel,
                              const DynamicSharedFn& dynamic_shared,
                              const BlocksPerSmFn& blocks_per_sm, int block_size_limit) {
  BlockChoice best;
  // TODO(occupancy.3): try block sizes as cudaOccupancyMaxPotentialBlockSizeVariableSMem does
  // (cuda_runtime.h): the same sizes in the same order, the same winner on a tie, the same early
  // stop, the same minimum grid.
  // END(occupancy.3)
  return best;
}

}  // namespace lab06
