// Grader of lab 06, occupancy.
//
//   python3 grader/kit.py grade 06          every test, each in its own process, with a score
//   build/bin/grade_06_occupancy            the same tests in one process (quick, no score)
//   KIT_SEED=1234 build/bin/grade_06_occupancy --gtest_filter='*Random*'   replay one failure
//
// Steps: 1 the simple model, 2 the exact hardware model, 3 choosing a block size. The student's
// code is plain host C++, so most of it is graded without a GPU: against the seeds' worked numbers
// and against the CUDA toolkit's own calculator, cuda_occupancy.h (occupancy_oracle.cpp), on
// thousands of random kernels for five GPU architectures. On a GPU, the same model is fed the
// attributes of real kernels (sample_kernels.cuh: register pressure, launch bounds, static and
// dynamic shared memory, carveout preferences) and must agree with the driver's occupancy API
// every time.
//
// This grader is a judge (kit/remote.h): the student's functions run in a worker process and are
// called through remote.h; the oracle, the driver's answers and every verdict stay here. The
// chooser's callbacks cannot travel, so lab06::choose_block_size reaches the worker through a
// probe that relays the callbacks' answers (chooser_judge.cpp, probes.cpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "kit/check.h"
#include "kit/test.h"
#include "occupancy.h"
#include "occupancy_checks.h"
#include "occupancy_oracle.h"
#include "sample_kernels.cuh"
#include "sweep_kernels.h"

namespace {

using lab06::BlockChoice;
using lab06::DeviceSpec;
using lab06::KernelResources;
using lab06::kNoLimit;
using lab06::Limiter;
using lab06::Occupancy;
using lab06_grader::carveout_text;
using lab06_grader::describe;
using lab06_grader::describe_case;
using lab06_grader::h100;
using lab06_grader::KiB;
using lab06_grader::matches;
using lab06_grader::Mismatches;
using lab06_grader::random_block;
using lab06_grader::random_dynamic;
using lab06_grader::random_kernel;
using lab06_grader::random_kernels_agree;
using lab06_grader::same;
using lab06_grader::same_choice;
using lab06_grader::simple_expected;
using lab06_grader::toolkit_blocks;

std::string arch_name(const ::testing::TestParamInfo<DeviceSpec>& info) {
  return "sm_" + std::to_string(info.param.cc_major) + std::to_string(info.param.cc_minor);
}

// ==== Step 1: the simple model ===================================================================

using OccupancySimple = kit::HostTest;

// The SM of the seeds' worked example: 2048 threads, 32 blocks, 64 Ki registers, 100 KiB shared.
const lab06::SimpleSm kSeedSm{2048, 32, 65536, 100 * KiB};

KIT_TEST(OccupancySimple, Seed000WorkedExampleHoldsFiveBlocks, "occupancy.1", host, 3,
         "256 threads, 40 registers, 20 KiB on a 100 KiB SM: 5 blocks, occupancy 0.625, shared "
         "memory limits") {
  const Occupancy o = lab06::simple_occupancy(kSeedSm, {256, 40, 20 * KiB});
  EXPECT_EQ(o.registers_per_block, 10240) << "256 threads x 40 registers";
  EXPECT_EQ(o.limit_registers, 6) << "65536 / 10240 = 6.4";
  EXPECT_EQ(o.limit_shared, 5) << "100 KiB / 20 KiB";
  EXPECT_EQ(o.limit_warps, 8) << "2048 / 256 threads";
  EXPECT_EQ(o.limit_blocks, 32);
  EXPECT_EQ(o.blocks_per_sm, 5) << "min(8, 32, 6, 5)";
  EXPECT_EQ(o.warps_per_sm, 40) << "5 blocks of 8 warps";
  EXPECT_DOUBLE_EQ(o.occupancy, 0.625) << "1280 of 2048 threads";
  EXPECT_EQ(o.limited_by, Limiter::shared_memory) << "you said " << lab06::to_string(o.limited_by);
}

KIT_TEST(OccupancySimple, Seed000ExerciseWith96KiB, "occupancy.1", host, 2,
         "128 threads, 64 registers, 12 KiB on a 96 KiB SM: 8 blocks, occupancy 0.5, registers and "
         "shared memory both limit") {
  const lab06::SimpleSm sm{2048, 32, 65536, 96 * KiB};
  const Occupancy o = lab06::simple_occupancy(sm, {128, 64, 12 * KiB});
  EXPECT_EQ(o.limit_warps, 16);
  EXPECT_EQ(o.limit_registers, 8) << "65536 / (128 x 64)";
  EXPECT_EQ(o.limit_shared, 8) << "96 KiB / 12 KiB";
  EXPECT_EQ(o.blocks_per_sm, 8);
  EXPECT_DOUBLE_EQ(o.occupancy, 0.5) << "1024 of 2048 threads";
  EXPECT_EQ(o.limited_by, Limiter::registers | Limiter::shared_memory)
      << "a tie: both resources run out at 8 blocks; you said " << lab06::to_string(o.limited_by);
}

KIT_TEST(OccupancySimple, Seed003RegisterBudget, "occupancy.1", host, 2,
         "64 registers per thread leave room for 1024 threads (50%) whatever the block size; 128 "
         "registers for 512 (25%)") {
  for (int block : {128, 256, 512, 1024}) {
    const Occupancy o = lab06::simple_occupancy(kSeedSm, {block, 64, 0});
    EXPECT_EQ(o.blocks_per_sm * block, 1024) << "64 registers, blocks of " << block;
    EXPECT_DOUBLE_EQ(o.occupancy, 0.5) << "64 registers, blocks of " << block;
    EXPECT_EQ(o.limit_shared, kNoLimit) << "a kernel without shared memory is not limited by it";
    EXPECT_TRUE(has(o.limited_by, Limiter::registers)) << "64 registers, blocks of " << block;
  }
  for (int block : {128, 256, 512}) {
    const Occupancy o = lab06::simple_occupancy(kSeedSm, {block, 128, 0});
    EXPECT_EQ(o.blocks_per_sm * block, 512) << "128 registers, blocks of " << block;
    EXPECT_DOUBLE_EQ(o.occupancy, 0.25) << "128 registers, blocks of " << block;
  }
}

KIT_TEST(OccupancySimple, SmallBlocksHitTheBlockCap, "occupancy.1", host, 2,
         "32-thread blocks with 16 registers and no shared memory: 64 fit by threads, the cap "
         "allows 32, occupancy 0.5") {
  const Occupancy o = lab06::simple_occupancy(kSeedSm, {32, 16, 0});
  EXPECT_EQ(o.limit_warps, 64);
  EXPECT_EQ(o.limit_registers, 128);
  EXPECT_EQ(o.limit_shared, kNoLimit);
  EXPECT_EQ(o.blocks_per_sm, 32);
  EXPECT_DOUBLE_EQ(o.occupancy, 0.5);
  EXPECT_EQ(o.limited_by, Limiter::blocks) << "you said " << lab06::to_string(o.limited_by);
}

KIT_TEST(OccupancySimple, ABlockTooBigForTheSm, "occupancy.1", host, 1,
         "1024 threads with 128 registers need 131072 registers: no block fits") {
  const Occupancy o = lab06::simple_occupancy(kSeedSm, {1024, 128, 0});
  EXPECT_EQ(o.limit_registers, 0);
  EXPECT_EQ(o.limit_warps, 2);
  EXPECT_EQ(o.blocks_per_sm, 0);
  EXPECT_EQ(o.occupancy, 0.0);
  EXPECT_EQ(o.limited_by, Limiter::registers) << "you said " << lab06::to_string(o.limited_by);
}

KIT_TEST(OccupancySimple, RandomCasesFollowTheFormula, "occupancy.1", host, 3,
         "2000 random SMs and kernels: every limit, the block count, the limiters and the "
         "occupancy") {
  auto rng = kit::test_random();
  Mismatches wrong;
  const int cases = 2000;
  for (int i = 0; i < cases; ++i) {
    const lab06::SimpleSm sm{static_cast<int>(rng.uniform_int(2, 4)) * 512,
                             static_cast<int>(rng.uniform_int(2, 4)) * 8,
                             rng.uniform_int(0, 1) ? 65536 : 32768,
                             static_cast<std::size_t>(rng.uniform_int(16, 228)) * KiB};
    const lab06::SimpleKernel k{32 * static_cast<int>(rng.uniform_int(1, 32)),
                                rng.uniform_int(0, 9) == 0 ? 0 : static_cast<int>(rng.uniform_int(1, 255)),
                                rng.uniform_int(0, 4) == 0 ? 0 : static_cast<std::size_t>(rng.uniform_int(1, 100 * KiB))};
    const Occupancy expected = simple_expected(sm, k), got = lab06::simple_occupancy(sm, k);
    if (same(expected, got)) continue;
    std::ostringstream s;
    s << "SM of " << sm.max_threads << " threads, " << sm.max_blocks << " blocks, "
      << sm.registers << " registers, " << sm.shared_bytes << " B shared; kernel of "
      << k.threads_per_block << " threads, " << k.registers_per_thread << " registers/thread, "
      << k.shared_bytes_per_block << " B shared per block\n  expected: " << describe(expected)
      << "\n  yours:    " << describe(got);
    wrong.add(s.str());
  }
  EXPECT_TRUE(wrong.verdict(cases, "random cases"));
}

// ==== Step 2: the exact hardware model ===========================================================

using OccupancyExact = kit::HostTest;

KIT_TEST(OccupancyExact, RegistersAreAllocatedPerWarpIn256s, "occupancy.2", host, 2,
         "registers_per_warp: 40 registers -> 1280, 37 -> 1280 (1184 rounded up to 256s), 1 -> 256, "
         "255 -> 8192") {
  for (const DeviceSpec& gpu : lab06::known_gpus()) {
    EXPECT_EQ(lab06::registers_per_warp(gpu, 40), 1280) << gpu.name;
    EXPECT_EQ(lab06::registers_per_warp(gpu, 37), 1280) << gpu.name << ": 37 x 32 = 1184";
    EXPECT_EQ(lab06::registers_per_warp(gpu, 33), 1280) << gpu.name << ": 33 x 32 = 1056";
    EXPECT_EQ(lab06::registers_per_warp(gpu, 32), 1024) << gpu.name;
    EXPECT_EQ(lab06::registers_per_warp(gpu, 1), 256) << gpu.name;
    EXPECT_EQ(lab06::registers_per_warp(gpu, 0), 0) << gpu.name;
    EXPECT_EQ(lab06::registers_per_warp(gpu, 255), 8192) << gpu.name << ": 255 x 32 = 8160";
  }
}

KIT_TEST(OccupancyExact, SharedMemoryAddsTheReservedKiBAndRounds, "occupancy.2", host, 2,
         "shared_per_block on an H100: 1000 B static -> 2048 (1000 + 1024 reserved, in 128 B "
         "units); on a T4: 1000 -> 1024 (256 B units, nothing reserved)") {
  KernelResources k;
  k.static_shared = 1000;
  EXPECT_EQ(lab06::shared_per_block(h100(), k, 0), 2048u) << "1000 + 1024 = 2024, in 128 B units";
  EXPECT_EQ(lab06::shared_per_block(lab06::known_gpu(7, 5), k, 0), 1024u)
      << "a T4 reserves nothing and allocates in 256 B units";
  k.static_shared = 100;
  EXPECT_EQ(lab06::shared_per_block(h100(), k, 100), 1280u) << "100 static + 100 dynamic + 1024";
  EXPECT_EQ(lab06::shared_per_block(lab06::known_gpu(7, 5), k, 200), 512u) << "300 B on a T4";
  k.static_shared = 0;
  EXPECT_EQ(lab06::shared_per_block(h100(), k, 0), 1024u)
      << "since sm_80 every block takes the reserved 1 KiB, even without shared memory";
  EXPECT_EQ(lab06::shared_per_block(lab06::known_gpu(7, 5), k, 0), 0u);
  k.static_shared = 20 * KiB;
  EXPECT_EQ(lab06::shared_per_block(h100(), k, 0), 21504u) << "20 KiB + 1 KiB";
  EXPECT_EQ(lab06::shared_per_block(lab06::known_gpu(8, 6), k, 3000), 24576u)
      << "20480 + 3000 + 1024 = 24504, in 128 B units";
}

KIT_TEST(OccupancyExact, CarveoutPicksASharedMemoryConfiguration, "occupancy.2", host, 2,
         "shared_per_sm on an H100: no preference 228 KiB; 50% -> 132 KiB; 0% with 2 KiB blocks -> "
         "8 KiB; 25% with 60 KiB blocks -> 64 KiB") {
  EXPECT_EQ(lab06::shared_per_sm(h100(), -1, 2048), 228 * KiB) << "no preference: all of it";
  EXPECT_EQ(lab06::shared_per_sm(h100(), 50, 2048), 132 * KiB) << "114 KiB is not a configuration";
  EXPECT_EQ(lab06::shared_per_sm(h100(), 0, 2048), 8 * KiB)
      << "0% leaves no room for one block: the driver picks the smallest that holds it";
  EXPECT_EQ(lab06::shared_per_sm(h100(), 25, 60 * KiB), 64 * KiB) << "25% of 228 KiB is 57 KiB";
  EXPECT_EQ(lab06::shared_per_sm(h100(), 25, 90 * KiB), 100 * KiB) << "64 KiB cannot hold 90 KiB";
  EXPECT_EQ(lab06::shared_per_sm(lab06::known_gpu(7, 5), 0, 1024), 32 * KiB)
      << "a T4's smallest configuration is 32 KiB";
  EXPECT_EQ(lab06::shared_per_sm(lab06::known_gpu(8, 0), 100, 1024), 164 * KiB) << "A100";
  EXPECT_EQ(lab06::shared_per_sm(lab06::known_gpu(8, 6), 50, 1024), 64 * KiB) << "RTX 3090";
  auto rng = kit::test_random();
  Mismatches wrong;
  const int cases = 3000;
  for (int i = 0; i < cases; ++i) {
    const DeviceSpec& gpu = lab06::known_gpus()[rng.uniform_int(0, 4)];
    const int carveout = rng.uniform_int(0, 4) == 0 ? -1 : static_cast<int>(rng.uniform_int(0, 100));
    const std::size_t block = rng.uniform_int(1, gpu.shared_per_block_optin / 128) * 128;
    const std::size_t expected = oracle::shared_per_sm(gpu, carveout, block);
    const std::size_t got = lab06::shared_per_sm(gpu, carveout, block);
    if (got != expected)
      wrong.add(gpu.name + ", carveout " + carveout_text(carveout) + ", blocks of " +
                std::to_string(block) + " B: expected " + std::to_string(expected) +
                " B, yours " + std::to_string(got) + " B");
  }
  EXPECT_TRUE(wrong.verdict(cases, "random carveouts"));
}

KIT_TEST(OccupancyExact, Seed000KernelOnAnH100, "occupancy.2", host, 2,
         "the seed's kernel (256 threads, 40 registers, 20 KiB) on an H100: 6 blocks, occupancy "
         "0.75, registers limit") {
  KernelResources k;
  k.registers_per_thread = 40;
  k.static_shared = 20 * KiB;
  Occupancy want;
  want.blocks_per_sm = 6;
  want.warps_per_sm = 48;
  want.occupancy = 0.75;
  want.limited_by = Limiter::registers;
  want.limit_warps = 8;
  want.limit_blocks = 32;
  want.limit_registers = 6;  // 12 warps of 1280 registers in each 16384-register partition
  want.limit_shared = 10;    // 233472 / 21504
  want.registers_per_block = 10240;
  want.shared_per_block = 21504;
  EXPECT_TRUE(matches(want, lab06::occupancy(h100(), k, 256, 0), describe_case(h100(), k, 256, 0)));
}

KIT_TEST(OccupancyExact, RegisterFilePartitionsRoundDown, "occupancy.2", host, 2,
         "40 registers, blocks of 64 on an H100: 24 blocks (12 warps per partition), not the 25 "
         "that 65536 / 2560 suggests") {
  KernelResources k;
  k.registers_per_thread = 40;
  const Occupancy o = lab06::occupancy(h100(), k, 64, 0);
  EXPECT_EQ(o.limit_registers, 24)
      << "1280 registers per warp: 12 warps per partition of 16384, 48 warps, 24 blocks of 2 warps; "
         "yours: "
      << describe(o);
  EXPECT_EQ(o.blocks_per_sm, 24);
  EXPECT_DOUBLE_EQ(o.occupancy, 0.75);
  EXPECT_EQ(o.limited_by, Limiter::registers) << "you said " << lab06::to_string(o.limited_by);
}

KIT_TEST(OccupancyExact, PartialWarpsCountAsWholeWarps, "occupancy.2", host, 1,
         "blocks of 100 threads take 4 warps each: 16 blocks fill all 64 warp slots of an H100") {
  KernelResources k;
  k.registers_per_thread = 32;
  const Occupancy o = lab06::occupancy(h100(), k, 100, 0);
  EXPECT_EQ(o.limit_warps, 16) << describe(o);
  EXPECT_EQ(o.limit_registers, 16) << "4 warps of 1024 registers per block";
  EXPECT_EQ(o.registers_per_block, 4096);
  EXPECT_EQ(o.blocks_per_sm, 16);
  EXPECT_EQ(o.warps_per_sm, 64);
  EXPECT_DOUBLE_EQ(o.occupancy, 1.0);
}

KIT_TEST(OccupancyExact, BlocksThatCannotLaunchGetZero, "occupancy.2", host, 2,
         "0 blocks for: 800 threads x 80 registers (partitions), 1056 threads, and more dynamic "
         "shared memory than the kernel allows") {
  KernelResources k;
  k.registers_per_thread = 80;
  Occupancy o = lab06::occupancy(h100(), k, 800, 0);
  EXPECT_EQ(o.limit_registers, 0)
      << "25 warps of 2560 registers are checked as 28 (a multiple of 4 partitions): 71680 > "
         "65536\n  yours: " << describe(o);
  EXPECT_EQ(o.blocks_per_sm, 0);
  o = lab06::occupancy(h100(), k, 768, 0);
  EXPECT_EQ(o.blocks_per_sm, 1) << "768 threads x 80 registers just fit: " << describe(o);
  k.registers_per_thread = 16;
  o = lab06::occupancy(h100(), k, 1056, 0);
  EXPECT_EQ(o.limit_warps, 0) << "no GPU runs blocks of more than 1024 threads: " << describe(o);
  EXPECT_EQ(o.blocks_per_sm, 0);
  o = lab06::occupancy(h100(), k, 256, 48 * KiB + 4);
  EXPECT_EQ(o.limit_shared, 0) << "48 KiB + 4 B of dynamic shared memory without opting in: "
                               << describe(o);
  EXPECT_EQ(o.limited_by, Limiter::shared_memory);
  k.max_dynamic_shared = h100().shared_per_block_optin;
  o = lab06::occupancy(h100(), k, 256, 48 * KiB + 4);
  EXPECT_EQ(o.blocks_per_sm, 4) << "the same after opting in: 49156 + 1024 B -> 50304 per block, 4 "
                                   "fit in 228 KiB: "
                                << describe(o);
}

class OccupancyExactOnEachGpu : public ::testing::TestWithParam<DeviceSpec> {};

KIT_TEST_P(OccupancyExactOnEachGpu, AgreesWithCudaOccupancyH, "occupancy.2", host, 2,
           "4000 random kernels and launches: every field agrees with the toolkit's "
           "cuda_occupancy.h") {
  auto rng = kit::test_random();
  EXPECT_TRUE(random_kernels_agree(rng, GetParam(), 4000, "random cases"));
}

INSTANTIATE_TEST_SUITE_P(Gpus, OccupancyExactOnEachGpu, ::testing::ValuesIn(lab06::known_gpus()),
                         arch_name);

// ==== Step 3: choosing a block size ==============================================================

using OccupancyChooser = kit::HostTest;

std::size_t no_dynamic(int) { return 0; }

KIT_TEST(OccupancyChooser, TieGoesToTheLargestBlock, "occupancy.3", host, 3,
         "64 registers on an H100: every block size holds 1024 threads; the API answers 1024, min "
         "grid 132") {
  KernelResources k;
  k.registers_per_thread = 64;
  const BlockChoice c = lab06::choose_block_size(h100(), k, no_dynamic, toolkit_blocks(h100(), k));
  EXPECT_TRUE(same_choice({1024, 132, 1}, c))
      << "blocks of 32 x 32, 64 x 16, ..., 1024 x 1 all hold 1024 threads: the first one tried wins";
}

KIT_TEST(OccupancyChooser, StopsAtFullOccupancy, "occupancy.3", host, 1,
         "32 registers on an H100: 1024-thread blocks already fill the SM (2 blocks, min grid 264)") {
  KernelResources k;
  k.registers_per_thread = 32;
  int calls = 0;
  const auto counting = [&](int block, std::size_t dynamic) {
    ++calls;
    return oracle::occupancy(h100(), k, block, dynamic).blocks_per_sm;
  };
  EXPECT_TRUE(same_choice({1024, 264, 2}, lab06::choose_block_size(h100(), k, no_dynamic, counting)));
  EXPECT_EQ(calls, 1) << "the first size tried reaches all 2048 threads: nothing can beat it";
}

KIT_TEST(OccupancyChooser, TriesTheKernelLimitFirst, "occupancy.3", host, 2,
         "a kernel limited to 100 threads with 20 KiB static shared memory: 100 (10 blocks, 1000 "
         "threads) beats 96 (10 blocks, 960)") {
  KernelResources k;
  k.registers_per_thread = 32;
  k.static_shared = 20 * KiB;
  k.max_threads_per_block = 100;
  EXPECT_TRUE(same_choice({100, 1320, 10},
                          lab06::choose_block_size(h100(), k, no_dynamic, toolkit_blocks(h100(), k))));
  k.max_threads_per_block = 1024;
  EXPECT_TRUE(same_choice({100, 1320, 10}, lab06::choose_block_size(h100(), k, no_dynamic,
                                                                    toolkit_blocks(h100(), k), 100)))
      << "the same limit given as block_size_limit";
}

KIT_TEST(OccupancyChooser, DynamicSharedMemoryFollowsTheBlockSize, "occupancy.3", host, 2,
         "128 B of dynamic shared memory per thread on an H100: 896 threads (2 blocks of 115 KiB) "
         "hold the most threads") {
  KernelResources k;
  k.registers_per_thread = 32;
  k.max_dynamic_shared = h100().shared_per_block_optin;
  std::vector<int> asked;
  const auto per_thread = [&](int block) {
    asked.push_back(block);
    return std::size_t(128) * block;
  };
  EXPECT_TRUE(same_choice({896, 264, 2},
                          lab06::choose_block_size(h100(), k, per_thread, toolkit_blocks(h100(), k))));
  EXPECT_FALSE(asked.empty()) << "ask dynamic_shared(block_size) for every size you try";
}

class ChooserOnEachGpu : public ::testing::TestWithParam<DeviceSpec> {};

KIT_TEST_P(ChooserOnEachGpu, AgreesWithCudaOccupancyH, "occupancy.3", host, 1,
           "600 random kernels, dynamic-shared-memory functions and block limits: the same block "
           "size and min grid as cuda_occupancy.h") {
  const DeviceSpec& gpu = GetParam();
  auto rng = kit::test_random();
  Mismatches wrong;
  const int cases = 600;
  for (int i = 0; i < cases; ++i) {
    const KernelResources k = random_kernel(rng, gpu);
    const std::size_t per_thread = rng.uniform_int(0, 2) == 0 ? 0 : rng.uniform_int(0, 200);
    const std::size_t fixed = rng.uniform_int(0, 8000);
    const int limit = rng.uniform_int(0, 2) == 0 ? static_cast<int>(rng.uniform_int(1, 1024)) : 0;
    const lab06::DynamicSharedFn dynamic = [=](int block) { return per_thread * block + fixed; };
    const BlockChoice expected = oracle::choose_block_size(gpu, k, dynamic, limit);
    const BlockChoice got =
        lab06_grader::choose_block_size_pure(gpu, k, dynamic, toolkit_blocks(gpu, k), limit);
    if (same(expected, got)) continue;
    std::ostringstream s;
    s << "sm_" << gpu.cc_major << gpu.cc_minor << ": " << k.registers_per_thread
      << " registers/thread, static " << k.static_shared << " B, dynamic " << per_thread
      << " B/thread + " << fixed << " B, kernel limit " << k.max_threads_per_block
      << " threads, block_size_limit " << limit << "\n  expected: " << describe(expected)
      << "\n  yours:    " << describe(got);
    wrong.add(s.str());
  }
  EXPECT_TRUE(wrong.verdict(cases, "random cases"));
}

INSTANTIATE_TEST_SUITE_P(Gpus, ChooserOnEachGpu, ::testing::ValuesIn(lab06::known_gpus()),
                         arch_name);

// ==== GPU: real kernels, the driver's answers ====================================================
//
// The kernels (sample_kernels.cuh) are never launched: the driver answers occupancy questions from
// a kernel's compiled attributes. Each family varies one resource; each kernel is checked at ~160
// block sizes and several dynamic shared memory sizes.

using lab06_grader::driver_blocks;
using lab06_grader::DynamicBytes;
using lab06_grader::prepare;
using lab06_grader::sweep_families;
using lab06_grader::SweepFamily;
using lab06_grader::SweepKernel;

// Block sizes to try: every size up to two warps, every multiple of the warp size and its two
// neighbours, and the kernel's own limit.
std::vector<int> sweep_blocks(int max_threads) {
  std::vector<int> blocks;
  for (int b = 1; b <= 64; ++b) blocks.push_back(b);
  for (int b = 96; b <= 1024; b += 32)
    for (int d : {-1, 0, 1}) blocks.push_back(b + d);
  blocks.push_back(max_threads);
  blocks.erase(std::remove_if(blocks.begin(), blocks.end(),
                              [&](int b) { return b < 1 || b > max_threads; }),
               blocks.end());
  std::sort(blocks.begin(), blocks.end());
  blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
  return blocks;
}

std::string describe_kernel(const SweepKernel& k, const cudaFuncAttributes& a) {
  std::ostringstream s;
  s << k.name << " (" << a.numRegs << " registers/thread, static shared " << a.sharedSizeBytes
    << " B, at most " << a.maxThreadsPerBlock << " threads/block and " << a.maxDynamicSharedSizeBytes
    << " B dynamic, carveout " << carveout_text(a.preferredShmemCarveout) << ")";
  return s.str();
}

std::string family_name(const ::testing::TestParamInfo<int>& info) {
  return sweep_families()[info.param].name;
}

// What both GPU sweeps share: the family of kernels the parameter names, the GPU's spec, each
// kernel prepared, and the tally of the cases compared, refused by the driver, and wrong.
class KernelSweep : public kit::GpuTestWithParam<int> {
 protected:
  using CheckKernel = std::function<void(const SweepKernel& k, const cudaFuncAttributes& attr,
                                         const KernelResources& resources)>;

  // Calls `check` for every kernel of the family, with the attributes the driver reports once
  // prepare() has set them; `check` counts its cases in `compared` and `refused` and adds every
  // disagreement to `wrong`. Then prints the tally ("N <counted> compared, M refused by the
  // driver") and expects some case compared and none wrong (`cases` names them in the verdict).
  void sweep(const char* counted, const char* cases, const CheckKernel& check) {
    const SweepFamily& family = sweep_families()[GetParam()];
    device = lab06::device_spec_from_device(0);
    for (const SweepKernel& k : family.kernels) {
      const cudaFuncAttributes attr = prepare(k, device);
      check(k, attr, lab06::kernel_resources(attr));
    }
    std::printf("[ kit info ] family %s on %s: %lld %s compared, %lld refused by the driver\n",
                family.name.c_str(), device.name.c_str(), compared, counted, refused);
    EXPECT_GT(compared, 0);
    EXPECT_TRUE(wrong.verdict(compared, cases));
  }

  DeviceSpec device;
  Mismatches wrong;
  long long compared = 0, refused = 0;
};

class OccupancySweep : public KernelSweep {};

KIT_TEST_P(OccupancySweep, ModelAgreesWithTheDriver, "occupancy.2", gpu, 2,
           "real kernels at ~160 block sizes and several dynamic shared memory sizes: your model "
           "gives the blocks/SM of cudaOccupancyMaxActiveBlocksPerMultiprocessor") {
  sweep("launches", "launch shapes", [&](const SweepKernel& k, const cudaFuncAttributes& attr,
                                         const KernelResources& resources) {
    for (std::size_t dynamic : k.dynamic_sizes) {
      for (int block : sweep_blocks(attr.maxThreadsPerBlock)) {
        const int expected = driver_blocks(k.func, block, dynamic);
        if (expected < 0) {
          ++refused;
          continue;
        }
        ++compared;
        const Occupancy got = lab06::occupancy(device, resources, block, dynamic);
        if (got.blocks_per_sm == expected) continue;
        std::ostringstream s;
        s << "  " << describe_kernel(k, attr) << ": block " << block << ", dynamic " << dynamic
          << " B: the driver says " << expected << " blocks/SM, your model " << got.blocks_per_sm
          << "\n    yours in full: " << describe(got);
        wrong.add(s.str());
      }
    }
    const int shown = std::min(256, attr.maxThreadsPerBlock);
    const Occupancy at = lab06::occupancy(device, resources, shown, 0);
    std::printf("[ kit info ] %s: %d threads -> driver %d blocks/SM, model %d (occupancy %.3f, "
                "limited by %s)\n",
                describe_kernel(k, attr).c_str(), shown, driver_blocks(k.func, shown, 0),
                at.blocks_per_sm, at.occupancy, lab06::to_string(at.limited_by).c_str());
  });
}

INSTANTIATE_TEST_SUITE_P(Kernels, OccupancySweep,
                         ::testing::Range(0, static_cast<int>(sweep_families().size())), family_name);

// Dynamic shared memory as a function of the block size, named for messages (DynamicBytes is the
// function itself).
struct DynamicRule {
  std::string name;
  std::size_t per_thread, fixed;
};

const std::vector<DynamicRule> kDynamicRules = {
    {"none", 0, 0}, {"4 KiB", 0, 4096}, {"16 B/thread", 16, 0}, {"64 B/thread + 1000 B", 64, 1000}};
const std::vector<DynamicRule> kOptInRules = {{"160 B/thread", 160, 0}, {"100 KiB", 0, 100 * KiB}};

class ChooserSweep : public KernelSweep {};

KIT_TEST_P(ChooserSweep, ChoiceAgreesWithTheDriver, "occupancy.3", gpu, 1,
           "real kernels, four dynamic-shared-memory rules, block limits 0, 100 and 640: the block "
           "size and min grid of cudaOccupancyMaxPotentialBlockSize") {
  sweep("choices", "choices", [&](const SweepKernel& k, const cudaFuncAttributes& attr,
                                  const KernelResources& resources) {
    std::vector<DynamicRule> rules = kDynamicRules;
    if (k.opt_in) rules.insert(rules.end(), kOptInRules.begin(), kOptInRules.end());
    for (const DynamicRule& rule : rules) {
      const DynamicBytes bytes{rule.per_thread, rule.fixed};
      const lab06::DynamicSharedFn dynamic = bytes;
      for (int limit : {0, 100, 640}) {
        int min_grid = 0, block = 0;
        if (cudaOccupancyMaxPotentialBlockSizeVariableSMem(&min_grid, &block, k.func, bytes,
                                                           limit) != cudaSuccess) {
          (void)cudaGetLastError();
          ++refused;
          continue;
        }
        ++compared;
        const lab06::BlocksPerSmFn driver = [&](int b, std::size_t d) {
          return std::max(0, driver_blocks(k.func, b, d));
        };
        const BlockChoice got =
            lab06_grader::choose_block_size_pure(device, resources, dynamic, driver, limit);
        if (got.block_size == block && got.min_grid_size == min_grid) continue;
        std::ostringstream s;
        s << "  " << describe_kernel(k, attr) << ", dynamic shared " << rule.name
          << ", block_size_limit " << limit << ": the driver suggests block " << block
          << " with min grid " << min_grid << "; yours " << describe(got);
        wrong.add(s.str());
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Kernels, ChooserSweep,
                         ::testing::Range(0, static_cast<int>(sweep_families().size())), family_name);

}  // namespace
