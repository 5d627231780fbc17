// Hidden tests of lab 06, occupancy: instructor only. This folder is not part of a student
// edition; the tests are built into grade_06_occupancy, reference_06_occupancy and every
// wrong_06_occupancy_* here, and reported with the lab's hidden_visibility (lab.json).
//
//   build/bin/grade_06_occupancy --gtest_filter='OccupancyHidden*'
//   KIT_SEED=1234 build/bin/grade_06_occupancy --gtest_filter='OccupancyHidden*'   replay one
//
// The visible tests check the model on five GPUs, at the seeds' worked numbers and on random
// kernels, which rarely land exactly on a limit. These check it where an off-by-one lives: every
// limit at its boundary, one below and one above (the device's block size, the register file of a
// block and of the SM's partitions, shared memory per block and per SM, the block cap), on those
// five GPUs and on four the visible tests never show, against the toolkit's calculator.
#include <algorithm>
#include <cstddef>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kit/test.h"
#include "occupancy.h"
#include "occupancy_checks.h"
#include "occupancy_oracle.h"

namespace {

using lab06::BlockChoice;
using lab06::DeviceSpec;
using lab06::KernelResources;
using lab06::Occupancy;
using lab06_grader::describe;
using lab06_grader::describe_case;
using lab06_grader::KiB;
using lab06_grader::Mismatches;
using lab06_grader::random_block;
using lab06_grader::random_dynamic;
using lab06_grader::random_kernel;
using lab06_grader::random_kernels_agree;
using lab06_grader::same;
using lab06_grader::simple_expected;
using lab06_grader::toolkit_blocks;

// ---- GPUs the visible tests never show ----------------------------------------------------------

// A GPU from its device-query limits (shared memory in KiB) and its architecture's rules.
DeviceSpec gpu_spec(const char* name, int major, int minor, int sms, int threads_per_sm,
                    int blocks_per_sm, std::size_t shared_per_sm_kib, std::size_t optin_kib,
                    std::size_t reserved, int registers_per_block = 65536) {
  DeviceSpec spec = lab06::architecture_rules(major, minor);
  spec.name = name;
  spec.sm_count = sms;
  spec.warp_size = 32;
  spec.max_threads_per_block = 1024;
  spec.max_threads_per_sm = threads_per_sm;
  spec.max_blocks_per_sm = blocks_per_sm;
  spec.registers_per_sm = 65536;
  spec.registers_per_block = registers_per_block;
  spec.shared_per_sm = shared_per_sm_kib * KiB;
  spec.shared_per_block = 48 * KiB;
  spec.shared_per_block_optin = optin_kib * KiB;
  spec.reserved_shared_per_block = reserved;
  return spec;
}

// Three more architectures, and a GPU whose blocks may take only half of its register file (the
// per-block limit is registers_per_block, which on the five known GPUs equals the SM's file).
const std::vector<DeviceSpec>& unseen_gpus() {
  static const std::vector<DeviceSpec> gpus = {
      gpu_spec("Tesla V100-SXM2-16GB", 7, 0, 80, 2048, 32, 96, 96, 0),
      gpu_spec("NVIDIA B200", 10, 0, 148, 2048, 32, 228, 227, 1024),
      gpu_spec("NVIDIA GeForce RTX 5090", 12, 0, 170, 1536, 24, 100, 99, 1024),
      gpu_spec("H100 with regsPerBlock 32768 (a block may use half the register file, as on "
               "Jetson TX1/TX2)",
               9, 0, 132, 2048, 32, 228, 227, 1024, 32768),
  };
  return gpus;
}

// The five known GPUs and the four above.
const std::vector<DeviceSpec>& every_gpu() {
  static const std::vector<DeviceSpec> gpus = [] {
    std::vector<DeviceSpec> all = lab06::known_gpus();
    all.insert(all.end(), unseen_gpus().begin(), unseen_gpus().end());
    return all;
  }();
  return gpus;
}

// ---- Cases at a boundary ------------------------------------------------------------------------

// One launch to compare, and which boundary it sits on (for the failure message).
struct Case {
  KernelResources kernel;
  int block = 0;
  std::size_t dynamic = 0;
  std::string where;
};

std::size_t round_down(std::size_t value, std::size_t unit) { return value / unit * unit; }
int round_up(int value, int unit) { return (value + unit - 1) / unit * unit; }
int warps_of(const DeviceSpec& gpu, int block) {
  return (block + gpu.warp_size - 1) / gpu.warp_size;
}

// "at the limit - 1", "at the limit", "at the limit + 1".
std::string offset_text(long long offset) {
  return offset == 0 ? std::string("at the limit")
                     : std::string("at the limit ") + (offset < 0 ? "- " : "+ ") +
                           std::to_string(offset < 0 ? -offset : offset);
}

// The most registers per thread a block of `block` threads can have on `gpu`: its warps, rounded
// up to a multiple of the register-file partitions, each with its registers rounded up to the
// allocation unit, must fit registers_per_block.
int max_registers_for_block(const DeviceSpec& gpu, int block) {
  const int checked_warps = round_up(warps_of(gpu, block), gpu.register_sub_partitions);
  const std::size_t per_warp =
      round_down(static_cast<std::size_t>(gpu.registers_per_block) / checked_warps,
                 gpu.register_allocation_unit);
  return std::min(255, static_cast<int>(per_warp) / gpu.warp_size);
}

KernelResources kernel_with(int registers, std::size_t static_shared = 0,
                            std::size_t max_dynamic = 48 * KiB, int carveout = -1) {
  KernelResources k;
  k.registers_per_thread = registers;
  k.static_shared = static_shared;
  k.max_dynamic_shared = max_dynamic;
  k.carveout_percent = carveout;
  return k;
}

// Thread and register limits of `gpu`, each at its boundary and one either side.
std::vector<Case> thread_and_register_cases(const DeviceSpec& gpu) {
  std::vector<Case> cases;
  const auto add = [&](const KernelResources& k, int block, long long offset,
                       const std::string& what) {
    if (block >= 1 && k.registers_per_thread >= 0 && k.registers_per_thread <= 255)
      cases.push_back({k, block, 0, what + ", " + offset_text(offset)});
  };
  for (int d : {-1, 0, 1}) {
    for (int registers : {0, 16, 32})
      add(kernel_with(registers), gpu.max_threads_per_block + d, d,
          "block size against the device's max_threads_per_block");
    // Warps: a partial warp costs a whole one.
    for (int warps : {1, 3, 4, 8, 31})
      add(kernel_with(24), warps * gpu.warp_size + d, d, "block size at a whole number of warps");
  }
  // The warp slots and the block cap run out together at blocks of max_warps / max_blocks warps.
  const int max_warps = gpu.max_threads_per_sm / gpu.warp_size;
  const int cap_warps = std::max(1, max_warps / gpu.max_blocks_per_sm);
  for (int d : {-1, 0, 1})
    add(kernel_with(0), cap_warps * gpu.warp_size + d, d,
        "blocks of " + std::to_string(cap_warps) + " warps: warp slots against the block cap");
  // The register file of one block: the most registers per thread it can have, and one more.
  for (int block : {32, 96, 100, 256, 480, 512, 640, 1000, gpu.max_threads_per_block}) {
    const int at = max_registers_for_block(gpu, block);
    for (int d : {-1, 0, 1})
      add(kernel_with(at + d), block, d,
          "registers per thread against registers_per_block (" +
              std::to_string(gpu.registers_per_block) + ") for blocks of " +
              std::to_string(block));
  }
  // The register file of the SM: warps whose registers fill a partition exactly.
  const int partition = gpu.registers_per_sm / gpu.register_sub_partitions;
  for (int warps_per_partition : {2, 4, 8, 16}) {
    const int at = partition / warps_per_partition / gpu.warp_size;
    for (int block : {64, 192, 256})
      for (int d : {-1, 0, 1})
        add(kernel_with(at + d), block, d,
            std::to_string(warps_per_partition) + " warps of registers per partition, blocks of " +
                std::to_string(block));
  }
  return cases;
}

// Shared-memory limits of `gpu`, each at its boundary and one byte either side.
std::vector<Case> shared_memory_cases(const DeviceSpec& gpu) {
  std::vector<Case> cases;
  const auto add = [&](const KernelResources& k, int block, long long dynamic, long long offset,
                       const std::string& what) {
    if (dynamic >= 0)
      cases.push_back(
          {k, block, static_cast<std::size_t>(dynamic), what + ", " + offset_text(offset)});
  };
  for (std::size_t static_shared : {std::size_t(0), std::size_t(1000), 12 * KiB}) {
    // The kernel's own limit on dynamic shared memory, without and with opting in.
    const std::size_t plain = 48 * KiB - static_shared;
    const std::size_t opted = gpu.shared_per_block_optin - static_shared;
    for (int d : {-1, 0, 1}) {
      add(kernel_with(32, static_shared, plain), 128, static_cast<long long>(plain) + d, d,
          "dynamic shared memory against the kernel's 48 KiB default");
      add(kernel_with(32, static_shared, opted), 128, static_cast<long long>(opted) + d, d,
          "a block's shared memory against shared_per_block_optin (opted in)");
    }
  }
  // 48 KiB of static shared memory, the most a kernel can declare, and nothing dynamic left.
  for (int d : {0, 1})
    add(kernel_with(32, 48 * KiB, 0), 256, d, d, "48 KiB static shared memory and no dynamic");
  // The SM's shared memory divided exactly among k blocks, under three carveout preferences.
  for (int carveout : {-1, 25, 50}) {
    for (int blocks : {1, 2, 3, 4, 7, 16}) {
      const std::size_t sm_shared = oracle::shared_per_sm(gpu, carveout, 1);
      const std::size_t per_block = round_down(sm_shared / blocks, gpu.shared_allocation_unit);
      const long long at = static_cast<long long>(per_block) -
                           static_cast<long long>(gpu.reserved_shared_per_block);
      if (per_block > gpu.shared_per_block_optin + gpu.reserved_shared_per_block || at <= 0)
        continue;
      const KernelResources k = kernel_with(16, 0, gpu.shared_per_block_optin, carveout);
      for (int d : {-1, 0, 1})
        add(k, 64, at + d, d,
            std::to_string(blocks) + " blocks filling the SM's shared memory (carveout " +
                lab06_grader::carveout_text(carveout) + ")");
    }
  }
  return cases;
}

// Compares every case with the toolkit's calculator; the failure lists the first few.
::testing::AssertionResult agree_with_toolkit(const DeviceSpec& gpu,
                                              const std::vector<Case>& cases, long long& compared) {
  Mismatches wrong;
  for (const Case& c : cases) {
    const Occupancy expected = oracle::occupancy(gpu, c.kernel, c.block, c.dynamic);
    const Occupancy got = lab06::occupancy(gpu, c.kernel, c.block, c.dynamic);
    if (!same(expected, got))
      wrong.add(describe_case(gpu, c.kernel, c.block, c.dynamic) + " [" + c.where +
                "]\n  expected: " + describe(expected) + "\n  yours:    " + describe(got));
  }
  compared += static_cast<long long>(cases.size());
  return wrong.verdict(static_cast<long long>(cases.size()), "boundary cases on " + gpu.name);
}

// ==== Step 2: the exact model at every limit =====================================================

using OccupancyHidden = kit::HostTest;

KIT_HIDDEN_TEST(OccupancyHidden, ThreadAndRegisterLimitsAtTheirBoundaries, "occupancy.2", host, 2,
                "block size, whole warps, the block cap and the register file of a block and of "
                "a partition, each at its limit, one below and one above, on nine GPUs") {
  long long compared = 0;
  for (const DeviceSpec& gpu : every_gpu())
    EXPECT_TRUE(agree_with_toolkit(gpu, thread_and_register_cases(gpu), compared));
  EXPECT_GT(compared, 0);
}

KIT_HIDDEN_TEST(OccupancyHidden, SharedMemoryLimitsAtTheirBoundaries, "occupancy.2", host, 2,
                "dynamic shared memory at the kernel's limit, a block at shared_per_block_optin, "
                "and k blocks filling the SM, each exact, one byte below and one above") {
  long long compared = 0;
  for (const DeviceSpec& gpu : every_gpu())
    EXPECT_TRUE(agree_with_toolkit(gpu, shared_memory_cases(gpu), compared));
  EXPECT_GT(compared, 0);
}

KIT_HIDDEN_TEST(OccupancyHidden, RandomKernelsMovedOntoALimit, "occupancy.2", host, 2,
                "3000 random kernels, each moved onto one limit (registers, dynamic or SM shared "
                "memory, block size) and one either side of it") {
  auto rng = kit::test_random();
  Mismatches wrong;
  const int draws = 3000;
  long long compared = 0;
  for (int i = 0; i < draws; ++i) {
    const auto last = static_cast<long long>(every_gpu().size()) - 1;
    const DeviceSpec& gpu = every_gpu()[static_cast<std::size_t>(rng.uniform_int(0, last))];
    KernelResources k = random_kernel(rng, gpu);
    int block = std::min(random_block(rng), gpu.max_threads_per_block);
    long long dynamic = static_cast<long long>(random_dynamic(rng, gpu, k));
    const int d = static_cast<int>(rng.uniform_int(-1, 1));
    std::string limit;
    switch (rng.uniform_int(0, 3)) {
      case 0:
        limit = "registers per thread at the most this block can have";
        k.registers_per_thread = max_registers_for_block(gpu, block) + d;
        break;
      case 1:
        limit = "dynamic shared memory at the kernel's limit";
        dynamic = static_cast<long long>(k.max_dynamic_shared) + d;
        break;
      case 2: {
        limit = "blocks filling the SM's shared memory exactly";
        const int blocks = static_cast<int>(rng.uniform_int(1, 8));
        k.max_dynamic_shared = gpu.shared_per_block_optin - k.static_shared;
        const std::size_t sm_shared = oracle::shared_per_sm(gpu, k.carveout_percent, 1);
        const std::size_t per_block = round_down(sm_shared / blocks, gpu.shared_allocation_unit);
        dynamic = static_cast<long long>(per_block) -
                  static_cast<long long>(gpu.reserved_shared_per_block + k.static_shared) + d;
        break;
      }
      default:
        limit = "block size at a whole number of warps";
        block = gpu.warp_size * static_cast<int>(rng.uniform_int(1, 32)) + d;
        break;
    }
    if (dynamic < 0 || k.registers_per_thread < 0 || k.registers_per_thread > 255) continue;
    ++compared;
    const Occupancy expected = oracle::occupancy(gpu, k, block, static_cast<std::size_t>(dynamic));
    const Occupancy got = lab06::occupancy(gpu, k, block, static_cast<std::size_t>(dynamic));
    if (!same(expected, got))
      wrong.add("draw " + std::to_string(i) + ": " +
                describe_case(gpu, k, block, static_cast<std::size_t>(dynamic)) + " [" + limit +
                ", " + offset_text(d) + "]\n  expected: " + describe(expected) +
                "\n  yours:    " + describe(got));
  }
  EXPECT_GT(compared, draws / 2);
  EXPECT_TRUE(wrong.verdict(compared, "random cases at a limit"));
}

KIT_HIDDEN_TEST(OccupancyHidden, AgreesOnGpusTheVisibleTestsNeverShow, "occupancy.2", host, 1,
                "3000 random kernels on each of a V100, a B200, an RTX 5090 and a GPU whose "
                "blocks may use only half the register file: the model reads every limit from "
                "the DeviceSpec") {
  auto rng = kit::test_random();
  for (const DeviceSpec& gpu : unseen_gpus())
    EXPECT_TRUE(random_kernels_agree(rng, gpu, 3000, "random cases on " + gpu.name));
}

// ==== Step 1: the simple model at every limit ====================================================

KIT_HIDDEN_TEST(OccupancyHidden, SimpleModelAtEachLimit, "occupancy.1", host, 1,
                "the simple model on 200 random SMs, with each budget (threads, the block cap, "
                "registers, shared memory) used exactly by k blocks, and one unit more or less") {
  auto rng = kit::test_random();
  Mismatches wrong;
  long long compared = 0;
  for (int i = 0; i < 200; ++i) {
    const lab06::SimpleSm sm{static_cast<int>(rng.uniform_int(2, 4)) * 512,
                             static_cast<int>(rng.uniform_int(2, 4)) * 8,
                             rng.uniform_int(0, 1) ? 65536 : 32768,
                             static_cast<std::size_t>(rng.uniform_int(16, 228)) * KiB};
    const int blocks = static_cast<int>(rng.uniform_int(1, 8));
    const std::string k_blocks = std::to_string(blocks) + " blocks";
    std::vector<std::pair<lab06::SimpleKernel, std::string>> kernels;
    for (int d : {-1, 0, 1}) {
      const std::string at = ", " + offset_text(d);
      // Threads: blocks of max_threads / k threads (a multiple of 32), one warp more or less.
      const int threads = std::max(32, sm.max_threads / blocks / 32 * 32 + 32 * d);
      if (threads <= 1024) kernels.push_back({{threads, 0, 0}, "threads for " + k_blocks + at});
      // The block cap: blocks of max_threads / max_blocks threads fill the SM at the cap.
      const int capped = std::max(32, sm.max_threads / sm.max_blocks / 32 * 32 + 32 * d);
      kernels.push_back({{capped, 0, 0}, "threads at the block cap" + at});
      // Registers: k blocks of 256 threads use the register file exactly.
      const int registers = sm.registers / blocks / 256 + d;
      if (registers >= 1)
        kernels.push_back({{256, registers, 0}, "registers for " + k_blocks + at});
      // Shared memory: k blocks use the SM's shared memory exactly, one byte more or less.
      const std::size_t shared = sm.shared_bytes / blocks + d;
      kernels.push_back({{128, 32, shared}, "shared memory for " + k_blocks + at});
    }
    for (const auto& [k, where] : kernels) {
      ++compared;
      const Occupancy expected = simple_expected(sm, k), got = lab06::simple_occupancy(sm, k);
      if (same(expected, got)) continue;
      std::ostringstream s;
      s << "SM of " << sm.max_threads << " threads, " << sm.max_blocks << " blocks, "
        << sm.registers << " registers, " << sm.shared_bytes << " B shared; kernel of "
        << k.threads_per_block << " threads, " << k.registers_per_thread << " registers/thread, "
        << k.shared_bytes_per_block << " B shared per block [" << where
        << "]\n  expected: " << describe(expected) << "\n  yours:    " << describe(got);
      wrong.add(s.str());
    }
  }
  EXPECT_TRUE(wrong.verdict(compared, "cases at a limit"));
}

// ==== Step 3: the chooser at its limits ==========================================================

KIT_HIDDEN_TEST(OccupancyHidden, ChooserAtTheBlockLimits, "occupancy.3", host, 1,
                "block_size_limit and the kernel's limit at 1, 31, 32, 33, 1023, 1024 and above "
                "the device's, and dynamic shared memory that reaches the kernel's limit at one "
                "block size, on nine GPUs") {
  auto rng = kit::test_random();
  Mismatches wrong;
  long long compared = 0;
  const int limits[] = {0, 1, 31, 32, 33, 63, 64, 65, 1023, 1024, 1025, 4096};
  for (const DeviceSpec& gpu : every_gpu()) {
    for (int i = 0; i < 60; ++i) {
      KernelResources k = random_kernel(rng, gpu);
      const int kernel_limits[] = {1, 31, 32, 33, 1023, 1024};
      if (rng.uniform_int(0, 2) == 0)
        k.max_threads_per_block = kernel_limits[rng.uniform_int(0, 5)];
      const int limit = limits[rng.uniform_int(0, 11)];
      // Dynamic shared memory per thread such that blocks of `edge` threads need exactly what the
      // kernel allows, plus `d` bytes: larger blocks cannot launch, smaller ones can.
      const int edge = 32 * static_cast<int>(rng.uniform_int(1, 32));
      const int d = static_cast<int>(rng.uniform_int(-1, 1));
      const std::size_t per_thread = k.max_dynamic_shared / edge;
      const long long rest = static_cast<long long>(k.max_dynamic_shared - per_thread * edge) + d;
      if (rest < 0) continue;
      const auto fixed = static_cast<std::size_t>(rest);
      const lab06::DynamicSharedFn dynamic = [=](int b) { return per_thread * b + fixed; };
      ++compared;
      const BlockChoice expected = oracle::choose_block_size(gpu, k, dynamic, limit);
      const BlockChoice got =
          lab06_grader::choose_block_size_pure(gpu, k, dynamic, toolkit_blocks(gpu, k), limit);
      if (same(expected, got)) continue;
      std::ostringstream s;
      s << "sm_" << gpu.cc_major << gpu.cc_minor << " (" << gpu.name << "): "
        << k.registers_per_thread << " registers/thread, static " << k.static_shared
        << " B, dynamic " << per_thread << " B/thread + " << fixed << " B (blocks of " << edge
        << " reach the kernel's " << k.max_dynamic_shared << " B " << offset_text(d)
        << "), kernel limit " << k.max_threads_per_block << " threads, block_size_limit " << limit
        << "\n  expected: " << describe(expected) << "\n  yours:    " << describe(got);
      wrong.add(s.str());
    }
  }
  EXPECT_TRUE(wrong.verdict(compared, "choices at a limit"));
}

}  // namespace
