// What lab 06's graders share (test_occupancy.cu and the hidden tests in hidden/): how a case
// and a result read in a failure message, exact comparison of results, random kernels as a
// compiler and the driver could report them, and the two reference models the student's code is
// held against besides the toolkit's (occupancy_oracle.h): the simple model of step 1 written out
// once more, and the toolkit's calculator as the chooser's occupancy function of step 3.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kit/random.h"
#include "occupancy.h"
#include "occupancy_oracle.h"

// How GoogleTest prints the lab's types in failure messages (found by argument-dependent lookup).
namespace lab06 {
inline void PrintTo(Limiter set, std::ostream* os) { *os << to_string(set); }
inline void PrintTo(const DeviceSpec& gpu, std::ostream* os) {
  *os << gpu.name << " (sm_" << gpu.cc_major << gpu.cc_minor << ")";
}
}  // namespace lab06

namespace lab06_grader {

using lab06::BlockChoice;
using lab06::DeviceSpec;
using lab06::KernelResources;
using lab06::kNoLimit;
using lab06::Limiter;
using lab06::Occupancy;

constexpr std::size_t KiB = 1024;

// ---- Describing cases and results in failure messages -------------------------------------------

inline std::string limit_text(int limit) {
  return limit == kNoLimit ? "none" : std::to_string(limit);
}

inline std::string describe(const Occupancy& o) {
  std::ostringstream s;
  s << o.blocks_per_sm << " blocks/SM, " << o.warps_per_sm << " warps, occupancy " << o.occupancy
    << ", limited by " << lab06::to_string(o.limited_by) << "; limits: warps "
    << limit_text(o.limit_warps) << ", blocks " << limit_text(o.limit_blocks) << ", registers "
    << limit_text(o.limit_registers) << ", shared " << limit_text(o.limit_shared)
    << "; per block " << o.registers_per_block << " registers, " << o.shared_per_block
    << " B shared";
  return s.str();
}

inline std::string carveout_text(int percent) {
  return percent < 0 ? std::string("none") : std::to_string(percent) + "%";
}

inline std::string describe_case(const DeviceSpec& gpu, const KernelResources& k, int block,
                                 std::size_t dynamic) {
  std::ostringstream s;
  s << "sm_" << gpu.cc_major << gpu.cc_minor << " (" << gpu.name << "): block " << block << ", "
    << k.registers_per_thread << " registers/thread, static shared " << k.static_shared
    << " B, dynamic " << dynamic << " B (kernel allows " << k.max_dynamic_shared
    << "), carveout " << carveout_text(k.carveout_percent);
  return s.str();
}

// Every field of two results, compared exactly (occupancy to rounding).
inline bool same(const Occupancy& a, const Occupancy& b) {
  return a.blocks_per_sm == b.blocks_per_sm && a.warps_per_sm == b.warps_per_sm &&
         std::fabs(a.occupancy - b.occupancy) < 1e-9 && a.limited_by == b.limited_by &&
         a.limit_warps == b.limit_warps && a.limit_blocks == b.limit_blocks &&
         a.limit_registers == b.limit_registers && a.limit_shared == b.limit_shared &&
         a.registers_per_block == b.registers_per_block && a.shared_per_block == b.shared_per_block;
}

inline ::testing::AssertionResult matches(const Occupancy& expected, const Occupancy& got,
                                          const std::string& what) {
  if (same(expected, got)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << "\n  expected: " << describe(expected)
                                       << "\n  yours:    " << describe(got);
}

// Collects the first few failures of a sweep, and counts them all.
class Mismatches {
 public:
  void add(const std::string& text) {
    if (shown_.size() < 6) shown_.push_back(text);
    ++count_;
  }
  ::testing::AssertionResult verdict(long long checked, const std::string& what) const {
    if (count_ == 0) return ::testing::AssertionSuccess();
    std::ostringstream s;
    s << count_ << " of " << checked << " " << what << " disagree; the first ones:\n";
    for (const auto& text : shown_) s << text << "\n";
    s << kit::seed_note();
    return ::testing::AssertionFailure() << s.str();
  }

 private:
  std::vector<std::string> shown_;
  long long count_ = 0;
};

// ---- Random kernels as a compiler and the driver could report them ------------------------------

inline KernelResources random_kernel(kit::Random& rng, const DeviceSpec& gpu) {
  KernelResources k;
  const auto pick = rng.uniform_int(0, 9);
  k.registers_per_thread = pick == 0 ? 0
                           : pick < 7 ? static_cast<int>(rng.uniform_int(8, 64))
                                      : static_cast<int>(rng.uniform_int(1, 255));
  // Static shared memory is at most 48 KiB; the rest of a block's shared memory is dynamic, up to
  // what the kernel allows (48 KiB minus its static part by default, more after opting in).
  k.static_shared = rng.uniform_int(0, 9) < 4 ? 0 : rng.uniform_int(0, 48 * KiB);
  k.max_dynamic_shared = rng.uniform_int(0, 9) < 3 ? gpu.shared_per_block_optin - k.static_shared
                                                   : 48 * KiB - k.static_shared;
  if (rng.uniform_int(0, 9) == 0) k.max_dynamic_shared = rng.uniform_int(0, k.max_dynamic_shared);
  k.carveout_percent = rng.uniform_int(0, 9) < 7 ? -1 : static_cast<int>(rng.uniform_int(0, 100));
  k.max_threads_per_block = rng.uniform_int(0, 3) == 0 ? static_cast<int>(rng.uniform_int(1, 1024))
                                                       : 1024;
  return k;
}

inline std::size_t random_dynamic(kit::Random& rng, const DeviceSpec& gpu,
                                  const KernelResources& k) {
  const auto pick = rng.uniform_int(0, 19);
  if (pick < 6) return 0;
  if (pick < 17) return rng.uniform_int(0, k.max_dynamic_shared);
  return rng.uniform_int(0, gpu.shared_per_block_optin + 2 * KiB);  // sometimes more than allowed
}

inline int random_block(kit::Random& rng) {
  const auto pick = rng.uniform_int(0, 19);
  if (pick < 10) return 32 * static_cast<int>(rng.uniform_int(1, 32));
  if (pick < 19) return static_cast<int>(rng.uniform_int(1, 1024));
  return static_cast<int>(rng.uniform_int(1025, 1100));  // larger than any GPU allows
}

// `cases` random kernels and launches on `gpu`: the student's occupancy against the oracle's.
inline ::testing::AssertionResult random_kernels_agree(kit::Random& rng, const DeviceSpec& gpu,
                                                       int cases, const std::string& what) {
  Mismatches wrong;
  for (int i = 0; i < cases; ++i) {
    const KernelResources k = random_kernel(rng, gpu);
    const int block = random_block(rng);
    const std::size_t dynamic = random_dynamic(rng, gpu, k);
    const Occupancy expected = oracle::occupancy(gpu, k, block, dynamic);
    const Occupancy got = lab06::occupancy(gpu, k, block, dynamic);
    if (!same(expected, got))
      wrong.add(describe_case(gpu, k, block, dynamic) + "\n  expected: " + describe(expected) +
                "\n  yours:    " + describe(got));
  }
  return wrong.verdict(cases, what);
}

inline const DeviceSpec& h100() { return lab06::known_gpu(9, 0); }

// The simple model, written out once more for the random cases.
inline Occupancy simple_expected(const lab06::SimpleSm& sm, const lab06::SimpleKernel& k) {
  Occupancy o;
  o.registers_per_block = k.registers_per_thread * k.threads_per_block;
  o.shared_per_block = k.shared_bytes_per_block;
  o.limit_warps = sm.max_threads / k.threads_per_block;
  o.limit_blocks = sm.max_blocks;
  o.limit_registers = o.registers_per_block ? sm.registers / o.registers_per_block : kNoLimit;
  o.limit_shared = o.shared_per_block ? static_cast<int>(sm.shared_bytes / o.shared_per_block)
                                      : kNoLimit;
  o.blocks_per_sm = std::min({o.limit_warps, o.limit_blocks, o.limit_registers, o.limit_shared});
  const std::pair<int, Limiter> limits[] = {{o.limit_warps, Limiter::warps},
                                            {o.limit_blocks, Limiter::blocks},
                                            {o.limit_registers, Limiter::registers},
                                            {o.limit_shared, Limiter::shared_memory}};
  for (const auto& [limit, which] : limits)
    if (limit == o.blocks_per_sm) o.limited_by = o.limited_by | which;
  o.warps_per_sm = o.blocks_per_sm * k.threads_per_block / 32;
  o.occupancy = static_cast<double>(o.warps_per_sm) / (sm.max_threads / 32);
  return o;
}

// The toolkit's calculator as the chooser's occupancy function: step 3 is graded on its own.
inline lab06::BlocksPerSmFn toolkit_blocks(const DeviceSpec& gpu, const KernelResources& k) {
  return [&gpu, k](int block, std::size_t dynamic) {
    return oracle::occupancy(gpu, k, block, dynamic).blocks_per_sm;
  };
}

// The student's chooser (step 3) with callbacks that have no side effects (they only compute, like
// toolkit_blocks): the judge answers, before the chooser runs in the worker, every question it is
// expected to ask, so that a random sweep costs one remote call per choice rather than one per
// question (chooser_judge.cpp). lab06::choose_block_size itself answers the chooser's questions one
// at a time, in its order, calling the callbacks exactly as often as the chooser does.
BlockChoice choose_block_size_pure(const DeviceSpec& device, const KernelResources& kernel,
                                   const lab06::DynamicSharedFn& dynamic_shared,
                                   const lab06::BlocksPerSmFn& blocks_per_sm,
                                   int block_size_limit = 0);

inline std::string describe(const BlockChoice& c) {
  return "block " + std::to_string(c.block_size) + ", " + std::to_string(c.blocks_per_sm) +
         " blocks/SM, min grid " + std::to_string(c.min_grid_size);
}

inline bool same(const BlockChoice& a, const BlockChoice& b) {
  return a.block_size == b.block_size && a.min_grid_size == b.min_grid_size &&
         a.blocks_per_sm == b.blocks_per_sm;
}

inline ::testing::AssertionResult same_choice(const BlockChoice& expected, const BlockChoice& got) {
  if (same(expected, got)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "expected " << describe(expected) << "; yours "
                                       << describe(got);
}

}  // namespace lab06_grader
