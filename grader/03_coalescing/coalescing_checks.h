// Shared by the two test files of lab 03's judge, which compile side by side (as one file it
// took 21-24 s, a fresh build's longest step): test_coalescing.cu (step 1, the array of
// structs) and test_transpose.cu (steps 2 to 4 and the perf tests). What both use: the output
// check, the access model's warp samples and verdicts, the 2^32 advice, and step 1's checks
// that step 4 runs again under memcheck.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "access_model.h"
#include "coalescing.h"
#include "kit/check.h"
#include "kit/device_check.h"
#include "kit/remote.h"
#include "kit/diagnose.h"
#include "kit/huge.h"
#include "kit/test.h"
#include "remote.h"

namespace lab03_judge {

namespace am = access_model;
using lab03::MatIndex;

inline constexpr double kUnitRoundoff = 1.0 / (1 << 24);  // float: 2^-24, half an ulp of 1

// ---- Helpers ------------------------------------------------------------------------------------

inline am::Coord coord(dim3 d) { return {d.x, d.y, d.z}; }
inline uint3 as_uint3(am::Coord c) { return make_uint3(c.x, c.y, c.z); }
inline std::string show(am::Coord c) {
  return "(" + std::to_string(c.x) + "," + std::to_string(c.y) + "," + std::to_string(c.z) + ")";
}

// An output check like kit::output_matches, for outputs whose owner under the kit's usual mapping
// would be misleading (a transpose, the fields of aos_to_soa): no owner is named. `extra`, when
// given, adds a line per listed mismatch (where the wrong value came from).
template <class T>
inline ::testing::AssertionResult matches(const std::string& what, const std::vector<T>& expected,
                                   const kit::GuardedBuffer<T>& out, const kit::Tolerance& tol,
                                   const kit::Shape& shape,
                                   const std::function<std::string(const kit::Comparison&)>& extra = {}) {
  std::string problems;
  const auto hits = out.guard_writes();
  if (!hits.empty()) problems += what + ": " + kit::describe_guard_writes(hits, out.size()) + "\n";
  const std::vector<T> got = out.download();
  const kit::Comparison cmp = kit::compare_values(expected, got, tol);
  if (!cmp.ok()) {
    problems += kit::describe_mismatches(what, cmp, tol, shape, nullptr) + "\n";
    if (extra) problems += extra(cmp);
    problems += kit::likely_mistake(expected, got, tol, shape, nullptr);
  }
  if (problems.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << problems << kit::seed_note();
}

// What an access must look like, and one sampled warp's version of it.
struct Expect {
  unsigned sectors;           // sectors per request
  std::uint64_t useful_bytes; // distinct bytes the 32 lanes ask for
  const char* meaning;        // "32 neighbouring floats", "one float shared by all 32 lanes"
};
inline const Expect kCoalesced{4, 128, "32 neighbouring floats: 128 bytes in 4 sectors"};
inline const Expect kBroadcast{1, 4, "one float that all 32 lanes share: 1 sector"};

struct WarpSample {
  std::string where;  // "warp 0 of block (0,0,0)"
  am::WarpAddresses lanes;
  std::uint64_t base;
};

// Passes when every sampled warp's request matches `want`; otherwise names the first warp that
// does not, with its sector count, the ideal, and the first lanes' byte offsets.
inline ::testing::AssertionResult global_access(const std::string& what,
                                         const std::vector<WarpSample>& samples, const Expect& want) {
  int bad = 0;
  std::ostringstream first;
  for (const WarpSample& s : samples) {
    const am::GlobalRequest r = am::global_request(s.lanes, 4);
    if (r.sectors == want.sectors && r.useful_bytes == want.useful_bytes) continue;
    if (bad++ > 0) continue;
    if (r.active_lanes == 0) {
      first << what << ": no lane of " << s.where << " makes this access (is the mapping written?)\n";
      continue;
    }
    first << what << ": " << s.where << " touches " << r.sectors
          << (r.sectors == 1 ? " sector" : " sectors") << " per request; ideal " << want.sectors
          << " (" << want.meaning << ").\n  model: " << am::describe(r)
          << "\n  your lanes: " << am::describe_lanes(s.lanes, s.base) << "\n";
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << first.str() << "  " << bad << " of " << samples.size()
                                       << " sampled warps are like this.";
}

// The same for shared memory: in every sampled warp the 32 lanes must touch 32 different words
// (each moves its own element) in one wavefront (no bank conflict).
inline ::testing::AssertionResult conflict_free(const std::string& what,
                                         const std::vector<WarpSample>& samples) {
  int bad = 0;
  std::ostringstream first;
  for (const WarpSample& s : samples) {
    const am::SharedRequest r = am::shared_request(s.lanes);
    const am::GlobalRequest bytes = am::global_request(s.lanes, 4);  // for its distinct bytes
    const std::uint64_t words = bytes.useful_bytes / 4;
    if (r.wavefronts == 1 && words == am::kWarpSize) continue;
    if (bad++ > 0) continue;
    if (words != am::kWarpSize)
      first << what << ": the 32 lanes of " << s.where << " touch " << words
            << " different tile positions, not 32: each lane should move its own element.\n";
    else
      first << what << ": " << s.where << " needs " << am::describe(r) << "; ideal 1.\n";
    first << "  your lanes' byte offsets in the tile: " << am::describe_lanes(s.lanes, s.base) << "\n";
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << first.str() << "  " << bad << " of " << samples.size()
                                       << " sampled warps are like this.";
}

// Blocks to sample in a grid: the first, one inside, and the last (full tiles only when the
// matrix is a multiple of the block, which the model tests choose).
inline std::vector<am::Coord> sample_blocks(dim3 grid) {
  std::vector<am::Coord> blocks = {{0, 0, 0}, {grid.x / 2, grid.y / 2, 0}, {grid.x - 1, grid.y - 1, 0}};
  if (grid.x > 1 || grid.y > 1) blocks.push_back({grid.x > 1 ? 1u : 0u, grid.y > 1 ? 1u : 0u, 0});
  return blocks;
}

// One sample per warp of each sampled block: the addresses `element(block, thread)` gives, as
// base + 4 * index (nothing for a thread that makes no access).
template <class ElementFn>
std::vector<WarpSample> sample_warps(const kit::Launch& launch, std::uint64_t base, ElementFn element) {
  std::vector<WarpSample> samples;
  const am::Coord block_dim = coord(launch.block);
  for (const am::Coord& b : sample_blocks(launch.grid)) {
    for (unsigned w = 0; w < am::warps_per_block(block_dim); ++w) {
      samples.push_back({"warp " + std::to_string(w) + " of block " + show(b),
                         am::warp_addresses(block_dim, w, base, 4,
                                            [&](am::Coord t) { return element(b, t); }),
                         base});
    }
  }
  return samples;
}

using Index = std::optional<std::uint64_t>;

inline constexpr char kWrapAdvice[] =
    "An index or offset past 2^32 - 1 kept in 32 bits (unsigned, or a product of two unsigned "
    "values) wraps round to an element near the start. Compute it in std::size_t: convert one "
    "factor before multiplying.";

using CoalescingHost = kit::HostTest;
using CoalescingCounters = kit::CounterTest;

// Byte bases of the arrays in the model: far apart and 256-byte aligned, like cudaMalloc's.
inline constexpr std::uint64_t kArrayBase = 1ull << 40;

// Step 1's GPU checks (test_coalescing.cu), which step 4 runs again with the inputs at the end
// of their allocations (kit::Placement::end) under memcheck.
void check_aos_to_soa(unsigned n, kit::Placement input = kit::Placement::start);
void check_integrate_soa(unsigned n, kit::Placement inputs = kit::Placement::start);

}  // namespace lab03_judge
