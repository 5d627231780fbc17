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
  // DONE(occupancy.1): the scarcest resource sets blocks_per_sm; limited_by names every resource
  // that sets it (there can be several); then the resident warps and the occupancy.
  result.blocks_per_sm = std::min({result.limit_warps, result.limit_blocks, result.limit_registers,
                                    result.limit_shared});
  result.limited_by = Limiter::none;
  if (result.limit_warps == result.blocks_per_sm) result.limited_by = result.limited_by | Limiter::warps;
  if (result.limit_blocks == result.blocks_per_sm) result.limited_by = result.limited_by | Limiter::blocks;
  if (result.limit_registers == result.blocks_per_sm) result.limited_by = result.limited_by | Limiter::registers;
  if (result.limit_shared == result.blocks_per_sm) result.limited_by = result.limited_by | Limiter::shared_memory;
  result.warps_per_sm = result.blocks_per_sm * warps_per_block;
  result.occupancy = static_cast<double>(result.warps_per_sm) / max_warps_per_sm;
  // END(occupancy.1)
}

Occupancy simple_occupancy(const SimpleSm& sm, const SimpleKernel& kernel) {
  Occupancy result;
  // DONE(occupancy.1): one limit per budget (threads, blocks, registers, shared memory), each a
  // whole number of blocks; a resource the kernel does not use gives kNoLimit. settle() does the
  // rest.
  const int threads = kernel.threads_per_block;
  result.registers_per_block = kernel.registers_per_thread * threads;
  result.shared_per_block = kernel.shared_bytes_per_block;
  result.limit_warps = sm.max_threads / threads;
  result.limit_blocks = sm.max_blocks;
  result.limit_registers =
      result.registers_per_block == 0 ? kNoLimit : sm.registers / result.registers_per_block;
  result.limit_shared = result.shared_per_block == 0
                            ? kNoLimit
                            : static_cast<int>(sm.shared_bytes / result.shared_per_block);
  settle(result, ceil_div(threads, 32), sm.max_threads / 32);
  // END(occupancy.1)
  return result;
}

// ---- Step 2: the exact hardware model -----------------------------------------------------------

int registers_per_warp(const DeviceSpec& device, int registers_per_thread) {
  // DONE(occupancy.2): registers go to a whole warp at once, in units of
  // device.register_allocation_unit.
  return static_cast<int>(round_up(static_cast<std::size_t>(registers_per_thread) * device.warp_size,
                                   device.register_allocation_unit));
  // END(occupancy.2)
}

std::size_t shared_per_block(const DeviceSpec& device, const KernelResources& kernel,
                             std::size_t dynamic_shared) {
  // DONE(occupancy.2): what one block takes: its own shared memory and the driver's share,
  // rounded up to the allocation unit.
  return round_up(kernel.static_shared + dynamic_shared + device.reserved_shared_per_block,
                  device.shared_allocation_unit);
  // END(occupancy.2)
}

// DONE(occupancy.2): helpers of your own for step 2, if you want some.
namespace {

// The smallest shared-memory configuration of the SM that holds `bytes` (the largest one when
// none does).
std::size_t snap_to_config(const DeviceSpec& device, std::size_t bytes) {
  int chosen = device.shared_configs_kib.back();  // the largest, when none holds `bytes`
  for (int kib : device.shared_configs_kib) {
    if (static_cast<std::size_t>(kib) * 1024 >= bytes) {
      chosen = kib;
      break;
    }
  }
  return static_cast<std::size_t>(chosen) * 1024;
}

}  // namespace
// END(occupancy.2)

std::size_t shared_per_sm(const DeviceSpec& device, int carveout_percent, std::size_t block_shared) {
  // DONE(occupancy.2): the carveout preference (-1: none) picks one of device.shared_configs_kib;
  // when not even one block fits in it, the driver picks a larger one.
  std::size_t preferred = carveout_percent < 0
                              ? device.shared_per_sm
                              : static_cast<std::size_t>(carveout_percent) * device.shared_per_sm / 100;
  preferred = snap_to_config(device, preferred);
  if (preferred >= block_shared) return preferred;
  return snap_to_config(device, block_shared);
  // END(occupancy.2)
}

Occupancy occupancy(const DeviceSpec& device, const KernelResources& kernel, int block_size,
                    std::size_t dynamic_shared) {
  Occupancy result;
  // DONE(occupancy.2): step 1's four limits under the hardware's rules: whole warps, registers
  // per warp and per register-file partition, shared memory as allocated and as configured for
  // this kernel. A block that cannot launch at all has a limit of 0.
  const int warps_per_block = ceil_div(block_size, device.warp_size);
  const int max_warps_per_sm = device.max_threads_per_sm / device.warp_size;

  result.limit_warps =
      block_size > device.max_threads_per_block ? 0 : max_warps_per_sm / warps_per_block;
  result.limit_blocks = device.max_blocks_per_sm;

  const int per_warp = registers_per_warp(device, kernel.registers_per_thread);
  result.registers_per_block = per_warp * warps_per_block;
  // A block's registers must fit the per-block limit with its warps spread evenly over all the
  // partitions, so the check counts warps rounded up to a multiple of the partitions.
  const int checked_warps = ceil_div(warps_per_block, device.register_sub_partitions) *
                            device.register_sub_partitions;
  if (per_warp * checked_warps > device.registers_per_block) {
    result.limit_registers = 0;
  } else if (per_warp == 0) {
    result.limit_registers = kNoLimit;
  } else {
    const int warps_per_partition = device.registers_per_sm / device.register_sub_partitions / per_warp;
    result.limit_registers = warps_per_partition * device.register_sub_partitions / warps_per_block;
  }

  result.shared_per_block = shared_per_block(device, kernel, dynamic_shared);
  if (dynamic_shared > kernel.max_dynamic_shared ||
      result.shared_per_block > device.shared_per_block_optin + device.reserved_shared_per_block) {
    result.limit_shared = 0;
  } else if (result.shared_per_block == 0) {
    result.limit_shared = kNoLimit;
  } else {
    const std::size_t sm_shared = shared_per_sm(device, kernel.carveout_percent, result.shared_per_block);
    result.limit_shared = static_cast<int>(sm_shared / result.shared_per_block);
  }

  settle(result, warps_per_block, max_warps_per_sm);
  // END(occupancy.2)
  return result;
}

// ---- Step 3: choosing a block size --------------------------------------------------------------

BlockChoice choose_block_size(const DeviceSpec& device, const KernelResources& kernel,
                              const DynamicSharedFn& dynamic_shared,
                              const BlocksPerSmFn& blocks_per_sm, int block_size_limit) {
  BlockChoice best;
  // DONE(occupancy.3): try block sizes as cudaOccupancyMaxPotentialBlockSizeVariableSMem does
  // (cuda_runtime.h): the same sizes in the same order, the same winner on a tie, the same early
  // stop, the same minimum grid.
  int limit = block_size_limit == 0 ? device.max_threads_per_block : block_size_limit;
  limit = std::min({limit, device.max_threads_per_block, kernel.max_threads_per_block});
  int best_threads = 0;
  for (int aligned = ceil_div(limit, device.warp_size) * device.warp_size; aligned > 0;
       aligned -= device.warp_size) {
    const int block = std::min(limit, aligned);
    const int blocks = blocks_per_sm(block, dynamic_shared(block));
    if (block * blocks > best_threads) {
      best_threads = block * blocks;
      best.block_size = block;
      best.blocks_per_sm = blocks;
    }
    if (best_threads == device.max_threads_per_sm) break;
  }
  best.min_grid_size = best.blocks_per_sm * device.sm_count;
  // END(occupancy.3)
  return best;
}

}  // namespace lab06
