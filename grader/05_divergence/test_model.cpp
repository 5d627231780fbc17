// Grader of lab 05, Step 3: the divergence model, on the CPU only (these tests run on any machine).
//
//   build/bin/grade_05_divergence --gtest_filter='DivergenceModel*'
//
// Known answers first (the seeds' two branches, a threshold, partial warps, the two reduction
// trees of Step 2), then random conditions against an independent count written here.
//
// The student's code runs in a worker process (kit/remote.h, remote.h). A lab05::BranchCondition
// is a callback into this process's code, which cannot travel there, so each condition is written
// as data (lab05_probe::Condition: the same expressions, evaluated by the same inline code here
// and in the worker), and lab05_probe::analyze (probes.cu) calls the student's analyze_branch with
// it in the worker.
#include <cstdint>
#include <string>
#include <vector>

#include "divergence_model.h"
#include "kit/test.h"
#include "remote.h"

namespace {

using DivergenceModel = kit::HostTest;
using lab05_probe::Condition;
using lab05_probe::block_below;
using lab05_probe::block_multiple_of;
using lab05_probe::random_bit;
using lab05_probe::run_parity;
using lab05_probe::thread_below;
using lab05_probe::thread_multiple_of;

// What a correct model says about one case.
struct Expected {
  std::uint64_t warps, divergent_warps, active_lanes, issued_lanes;
};

lab05::BranchStats as_stats(const Expected& e) {
  lab05::BranchStats s;
  s.warps = e.warps;
  s.divergent_warps = e.divergent_warps;
  s.active_lanes = e.active_lanes;
  s.issued_lanes = e.issued_lanes;
  return s;
}

// Checks every count of one case, and both efficiencies computed from the right counts, with the
// case named in every message.
void expect_stats(const std::string& what, unsigned blocks, unsigned threads,
                  const Condition& condition, const Expected& want) {
  const lab05::BranchStats got = lab05_probe::analyze(blocks, threads, condition);
  const std::string where = what + ", " + std::to_string(blocks) + " block(s) of " +
                            std::to_string(threads) + " threads";
  EXPECT_EQ(got.warps, want.warps) << where << ": warps that evaluate the branch";
  EXPECT_EQ(got.divergent_warps, want.divergent_warps) << where << ": divergent warps";
  EXPECT_EQ(got.active_lanes, want.active_lanes) << where << ": active lanes (threads)";
  EXPECT_EQ(got.issued_lanes, want.issued_lanes)
      << where << ": lane slots issued (32 for each path each warp runs)";
  const lab05::BranchStats right = as_stats(want);
  EXPECT_NEAR(lab05::branch_efficiency(right),
              double(want.warps - want.divergent_warps) / double(want.warps), 1e-12)
      << where << ": branch efficiency is (warps - divergent_warps) / warps";
  EXPECT_NEAR(lab05::simt_efficiency(right), double(want.active_lanes) / double(want.issued_lanes),
              1e-12)
      << where << ": SIMT efficiency is active_lanes / issued_lanes";
}

KIT_TEST(DivergenceModel, WarpsPerBlockRoundsUp, "divergence.3", host, 2,
         "warps_per_block: 32 threads are 1 warp, 33 are 2, 100 are 4 (the last one partial)") {
  EXPECT_EQ(lab05::warps_per_block(32), 1u);
  EXPECT_EQ(lab05::warps_per_block(33), 2u) << "thread 32 starts a second, partial warp";
  EXPECT_EQ(lab05::warps_per_block(100), 4u) << "threads 96..99 form a fourth warp";
  EXPECT_EQ(lab05::warps_per_block(1), 1u) << "one thread still occupies a whole warp";
  EXPECT_EQ(lab05::warps_per_block(256), 8u);
  EXPECT_EQ(lab05::warps_per_block(1024), 32u);
}

KIT_TEST(DivergenceModel, LaneParitySplitsEveryWarp, "divergence.3", host, 2,
         "tid % 2 over 4 blocks of 256: all 32 warps diverge, branch efficiency 0, SIMT 0.5") {
  // (b * 256 + t) % 2 == 0
  expect_stats("global tid % 2 == 0", 4, 256, run_parity(256, 1), {32, 32, 1024, 2048});
}

KIT_TEST(DivergenceModel, WarpParityNeverSplits, "divergence.3", host, 2,
         "(tid / 32) % 2 over 4 blocks of 256: no warp diverges, both efficiencies 1") {
  // (b * 256 + t) / 32 % 2 == 0
  expect_stats("(global tid / 32) % 2 == 0", 4, 256, run_parity(256, 32), {32, 0, 1024, 1024});
}

KIT_TEST(DivergenceModel, ThresholdSplitsOneWarp, "divergence.3", host, 2,
         "tid < 40 in a block of 64: 1 of 2 warps diverges, branch efficiency 0.5, SIMT 2/3") {
  expect_stats("tid < 40", 1, 64, thread_below(40), {2, 1, 64, 96});
  expect_stats("tid < 64", 1, 128, thread_below(64), {4, 0, 128, 128});
}

KIT_TEST(DivergenceModel, PartialWarpsCount, "divergence.3", host, 3,
         "partial last warps evaluate the branch too: 100 threads are 4 warps, and a warp of one "
         "thread cannot diverge") {
  expect_stats("tid % 2 == 0", 1, 100, thread_multiple_of(2), {4, 4, 100, 256});
  expect_stats("tid % 2 == 0", 1, 33, thread_multiple_of(2), {2, 1, 33, 96});
  expect_stats("tid < 40", 3, 48, thread_below(40), {6, 3, 144, 288});
  expect_stats("tid % 2 == 0", 5, 1, thread_multiple_of(2), {5, 0, 5, 160});
  expect_stats("blockIdx.x % 2 == 0", 6, 100, block_multiple_of(2), {24, 0, 600, 768});
}

KIT_TEST(DivergenceModel, EfficienciesFollowTheirFormulasOnAnyCounts, "divergence.3", host, 1,
         "branch and SIMT efficiency of any counts: one warp (0 when it splits), an empty launch "
         "(1: nothing split) and 500 counts drawn from the seed") {
  EXPECT_EQ(lab05::branch_efficiency(as_stats({1, 1, 32, 64})), 0.0)
      << "one warp that splits: branch efficiency (1 - 1) / 1 = 0";
  EXPECT_EQ(lab05::branch_efficiency(as_stats({1, 0, 7, 32})), 1.0)
      << "one warp that does not split: branch efficiency 1";
  EXPECT_EQ(lab05::simt_efficiency(as_stats({1, 1, 32, 64})), 0.5)
      << "one warp that splits: SIMT efficiency 32 / 64";
  EXPECT_EQ(lab05::branch_efficiency(as_stats({0, 0, 0, 0})), 1.0)
      << "an empty launch (no warp): nothing split, branch efficiency 1";
  EXPECT_EQ(lab05::simt_efficiency(as_stats({0, 0, 0, 0})), 1.0)
      << "an empty launch (no lane slot issued): nothing wasted, SIMT efficiency 1";
  auto rng = kit::test_random();
  for (int trial = 0; trial < 500; ++trial) {
    Expected e{};
    // Every scale alike (a warp count up to 2^b, b drawn from 0..24): a uniform draw up to 2^24
    // would almost never give a launch of 5 to 1000 warps, where a lookup of the named cases hides.
    const long long top = 1LL << rng.uniform_int(0, 24);
    e.warps = static_cast<std::uint64_t>(rng.uniform_int(1, top));
    e.divergent_warps = static_cast<std::uint64_t>(rng.uniform_int(0, static_cast<long long>(e.warps)));
    e.active_lanes = static_cast<std::uint64_t>(
        rng.uniform_int(static_cast<long long>(e.warps), static_cast<long long>(32 * e.warps)));
    e.issued_lanes = 32 * (e.warps + e.divergent_warps);
    const double branch = double(e.warps - e.divergent_warps) / double(e.warps);
    const double simt = double(e.active_lanes) / double(e.issued_lanes);
    const lab05::BranchStats stats = as_stats(e);
    ASSERT_NEAR(lab05::branch_efficiency(stats), branch, 1e-12)
        << e.warps << " warps, " << e.divergent_warps << " divergent: branch efficiency is "
        << "(warps - divergent_warps) / warps\n" << kit::seed_note();
    ASSERT_NEAR(lab05::simt_efficiency(stats), simt, 1e-12)
        << e.active_lanes << " active lanes, " << e.issued_lanes << " issued: SIMT efficiency is "
        << "active_lanes / issued_lanes\n" << kit::seed_note();
  }
}

// Divergent warps, summed over the eight rounds of a 256-thread tree reduction.
std::uint64_t divergent_over_rounds(bool interleaved) {
  std::uint64_t total = 0;
  for (unsigned s = 1; s < 256; s *= 2) {
    const unsigned stride = interleaved ? s : 256 / (2 * s);
    // interleaved: t % (2 * stride) == 0; sequential: t < stride
    const Condition active = interleaved ? thread_multiple_of(2 * stride) : thread_below(stride);
    total += lab05_probe::analyze(1, 256, active).divergent_warps;
  }
  return total;
}

KIT_TEST(DivergenceModel, ReductionTreesOfStep2, "divergence.3", host, 2,
         "a 256-thread block: interleaved rounds (t % 2s == 0) split 47 warps, sequential rounds "
         "(t < s) split 5") {
  expect_stats("interleaved round s = 1: t % 2 == 0", 1, 256, thread_multiple_of(2),
               {8, 8, 256, 512});
  expect_stats("interleaved round s = 32: t % 64 == 0", 1, 256, thread_multiple_of(64),
               {8, 4, 256, 384});
  expect_stats("sequential round s = 64: t < 64", 1, 256, thread_below(64), {8, 0, 256, 256});
  expect_stats("sequential round s = 16: t < 16", 1, 256, thread_below(16), {8, 1, 256, 288});
  EXPECT_EQ(divergent_over_rounds(true), 47u)
      << "interleaved addressing, rounds s = 1 .. 128: 8+8+8+8+8+4+2+1 divergent warps";
  EXPECT_EQ(divergent_over_rounds(false), 5u)
      << "sequential addressing, rounds s = 128 .. 1: only s = 16, 8, 4, 2, 1 split warp 0";
}

// The grader's own count, written independently: walk the threads in order, closing a warp at
// every 32nd thread and at the end of each block.
Expected reference_count(unsigned blocks, unsigned threads, const Condition& c) {
  Expected e{0, 0, 0, 0};
  for (unsigned b = 0; b < blocks; ++b) {
    unsigned lanes = 0, taken = 0;
    for (unsigned t = 0; t < threads; ++t) {
      ++lanes;
      taken += c(b, t);
      if (lanes == 32 || t + 1 == threads) {
        const bool split = taken != 0 && taken != lanes;
        e.warps += 1;
        e.divergent_warps += split;
        e.active_lanes += lanes;
        e.issued_lanes += split ? 64 : 32;
        lanes = taken = 0;
      }
    }
  }
  return e;
}

KIT_TEST(DivergenceModel, MatchesAnIndependentCountOnRandomConditions, "divergence.3", host, 3,
         "random launches (1 to 1024 threads per block) and conditions give the same counts as the "
         "grader's own model") {
  auto rng = kit::test_random();
  for (int trial = 0; trial < 300; ++trial) {
    const auto blocks = static_cast<unsigned>(rng.uniform_int(1, 8));
    const auto threads = static_cast<unsigned>(rng.uniform_int(1, 1024));
    const auto k = static_cast<unsigned>(rng.uniform_int(1, 200));
    const auto salt = rng.next_u64();
    std::string what;
    Condition condition;
    switch (trial % 5) {
      case 0:
        what = "tid < " + std::to_string(k);
        condition = thread_below(k);  // t < k
        break;
      case 1:
        what = "tid % " + std::to_string(k) + " == 0";
        condition = thread_multiple_of(k);  // t % k == 0
        break;
      case 2:
        what = "(blockIdx.x * blockDim.x + tid) / " + std::to_string(k) + " % 2 == 0";
        condition = run_parity(threads, k);  // (b * threads + t) / k % 2 == 0
        break;
      case 3:
        what = "a data-dependent condition (random bit per thread)";
        // kit::Random(salt ^ (std::uint64_t(b) << 32 | t)).next_u64() % 7 == 0
        condition = random_bit(salt);
        break;
      default:
        what = "blockIdx.x < " + std::to_string(k % 4);
        condition = block_below(k % 4);  // b < k % 4
    }
    const Expected want = reference_count(blocks, threads, condition);
    const lab05::BranchStats got = lab05_probe::analyze(blocks, threads, condition);
    ASSERT_TRUE(got.warps == want.warps && got.divergent_warps == want.divergent_warps &&
                got.active_lanes == want.active_lanes && got.issued_lanes == want.issued_lanes)
        << what << ", " << blocks << " block(s) of " << threads << " threads:\n"
        << "  expected warps " << want.warps << ", divergent " << want.divergent_warps
        << ", active lanes " << want.active_lanes << ", issued lanes " << want.issued_lanes << "\n"
        << "  got      warps " << got.warps << ", divergent " << got.divergent_warps
        << ", active lanes " << got.active_lanes << ", issued lanes " << got.issued_lanes << "\n"
        << kit::seed_note();
  }
}

}  // namespace
