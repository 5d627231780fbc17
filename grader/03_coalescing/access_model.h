/// @file access_model.h
/// @brief Lab 03's host-side model of a warp's memory accesses: how many 32-byte sectors a global
/// load or store touches, and how many bank wavefronts a shared-memory access needs.
///
/// Plain C++ (no CUDA headers), owned by the grader. The lab's index mappings are
/// `__host__ __device__` functions, so the grader evaluates them here on the CPU, lane by lane,
/// and reports numbers a student can check against a profiler: "your store touches 32 sectors
/// per request; ideal 4".
///
/// The rules modelled (those of every NVIDIA GPU since Volta, sm_70 to sm_90):
///
/// - A warp's global load or store instruction is one *request*. The memory system serves it in
///   32-byte *sectors*, aligned to 32 bytes; each distinct sector the 32 lanes touch costs one
///   sector transfer, however many lanes share it. 128-byte *lines* (4 sectors) are the cache's
///   allocation unit and are counted too.
/// - Shared memory has 32 *banks*, each 4 bytes wide: the 4-byte word at byte offset `a` lives in
///   bank `(a / 4) % 32`. Lanes that touch different words of the same bank are served one after
///   another; lanes that read the same word share it (a broadcast). The number of passes, the
///   *wavefronts*, is the largest number of distinct words any one bank is asked for: 1 is
///   conflict-free, 32 is a 32-way conflict.
///
/// What it leaves out on purpose: caching between requests (a later request may find a sector in
/// L1 or L2), and accesses wider than 4 bytes to shared memory (the hardware splits those into
/// phases). Neither matters for the questions the lab asks.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace access_model {

constexpr unsigned kWarpSize = 32;
constexpr std::uint64_t kSectorBytes = 32;
constexpr std::uint64_t kLineBytes = 128;
constexpr unsigned kBanks = 32;
constexpr std::uint64_t kBankWordBytes = 4;

/// Thread or block coordinates, like CUDA's uint3 and dim3 (x fastest).
struct Coord {
  unsigned x = 0, y = 0, z = 0;
};

/// The byte address one lane touches, or nothing for a lane that makes no access (past the end of
/// its block, or stopped by a bounds guard).
using LaneAddress = std::optional<std::uint64_t>;

/// One warp-wide access: lane 0 first.
using WarpAddresses = std::array<LaneAddress, kWarpSize>;

/// What one warp request to global memory costs.
struct GlobalRequest {
  unsigned active_lanes = 0;
  unsigned sectors = 0;               ///< distinct 32-byte sectors touched
  unsigned lines = 0;                 ///< distinct 128-byte lines touched
  std::uint64_t useful_bytes = 0;     ///< distinct bytes the lanes asked for
  unsigned ideal_sectors = 0;         ///< fewest sectors that could hold useful_bytes

  /// Fraction of the fetched bytes that a lane asked for (1.0 when nothing was fetched).
  double efficiency() const {
    return sectors == 0 ? 1.0
                        : static_cast<double>(useful_bytes) / static_cast<double>(sectors * kSectorBytes);
  }
};

/// Counts the sectors and lines that `lanes`, each accessing `bytes_per_lane` bytes, touch.
inline GlobalRequest global_request(const WarpAddresses& lanes, unsigned bytes_per_lane) {
  if (bytes_per_lane == 0) throw std::invalid_argument("global_request: bytes_per_lane must be > 0");
  GlobalRequest r;
  std::set<std::uint64_t> sectors, lines;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;  // [begin, end) of each access
  for (const LaneAddress& a : lanes) {
    if (!a) continue;
    ++r.active_lanes;
    const std::uint64_t first = *a, last = *a + bytes_per_lane - 1;
    for (std::uint64_t s = first / kSectorBytes; s <= last / kSectorBytes; ++s) sectors.insert(s);
    for (std::uint64_t l = first / kLineBytes; l <= last / kLineBytes; ++l) lines.insert(l);
    spans.emplace_back(first, last + 1);
  }
  // Distinct bytes: the length of the union of the spans (lanes reading the same float count once).
  std::sort(spans.begin(), spans.end());
  std::uint64_t covered_to = 0;
  for (const auto& [begin, end] : spans) {
    const std::uint64_t from = std::max(begin, covered_to);
    if (end > from) r.useful_bytes += end - from;
    covered_to = std::max(covered_to, end);
  }
  r.sectors = static_cast<unsigned>(sectors.size());
  r.lines = static_cast<unsigned>(lines.size());
  r.ideal_sectors = static_cast<unsigned>((r.useful_bytes + kSectorBytes - 1) / kSectorBytes);
  return r;
}

/// What one warp access to shared memory costs (4-byte words only).
struct SharedRequest {
  unsigned active_lanes = 0;
  unsigned wavefronts = 0;  ///< passes needed: 1 is conflict-free, n an n-way bank conflict
  unsigned worst_bank = 0;  ///< a bank that needs `wavefronts` passes
};

/// Counts the bank wavefronts of a warp's 4-byte shared-memory access at byte offsets `lanes`.
inline SharedRequest shared_request(const WarpAddresses& lanes) {
  SharedRequest r;
  std::map<unsigned, std::set<std::uint64_t>> words_in_bank;
  for (const LaneAddress& a : lanes) {
    if (!a) continue;
    if (*a % kBankWordBytes != 0) throw std::invalid_argument("shared_request: unaligned 4-byte access");
    ++r.active_lanes;
    const std::uint64_t word = *a / kBankWordBytes;
    words_in_bank[static_cast<unsigned>(word % kBanks)].insert(word);
  }
  for (const auto& [bank, words] : words_in_bank) {
    if (words.size() > r.wavefronts) {
      r.wavefronts = static_cast<unsigned>(words.size());
      r.worst_bank = bank;
    }
  }
  return r;
}

/// Threads in a block of shape `block`.
inline unsigned threads_per_block(Coord block) { return block.x * block.y * block.z; }

/// Warps in a block of shape `block` (the last one may be partial).
inline unsigned warps_per_block(Coord block) {
  return (threads_per_block(block) + kWarpSize - 1) / kWarpSize;
}

/// The threads of warp `warp` of a block of shape `block`, lane by lane, in the order the hardware
/// forms warps (x fastest, then y, then z). Lanes past the end of the block are empty.
inline std::array<std::optional<Coord>, kWarpSize> warp_threads(Coord block, unsigned warp) {
  std::array<std::optional<Coord>, kWarpSize> lanes{};
  const unsigned total = threads_per_block(block);
  for (unsigned lane = 0; lane < kWarpSize; ++lane) {
    const unsigned t = warp * kWarpSize + lane;
    if (t >= total) break;
    lanes[lane] = Coord{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
  }
  return lanes;
}

/// The byte addresses of one warp's access. `element(thread)` returns the index of the element the
/// thread touches (std::nullopt when it makes no access); lane addresses are
/// `base + index * element_bytes`.
template <class ElementFn>
WarpAddresses warp_addresses(Coord block, unsigned warp, std::uint64_t base, unsigned element_bytes,
                             ElementFn element) {
  WarpAddresses out{};
  const auto threads = warp_threads(block, warp);
  for (unsigned lane = 0; lane < kWarpSize; ++lane) {
    if (!threads[lane]) continue;
    const std::optional<std::uint64_t> index = element(*threads[lane]);
    if (index) out[lane] = base + *index * element_bytes;
  }
  return out;
}

/// "4 sectors (4 lines of 128 B) for 128 useful bytes, 100% of the fetched bytes used".
inline std::string describe(const GlobalRequest& r) {
  std::ostringstream s;
  s << r.sectors << (r.sectors == 1 ? " sector" : " sectors") << " (" << r.lines
    << (r.lines == 1 ? " line" : " lines") << " of 128 B) for " << r.useful_bytes
    << " useful bytes from " << r.active_lanes << " lanes, "
    << static_cast<int>(r.efficiency() * 100.0 + 0.5) << "% of the fetched bytes used";
  return s.str();
}

/// "32 wavefronts (bank 0 is asked for 32 different words)".
inline std::string describe(const SharedRequest& r) {
  std::ostringstream s;
  s << r.wavefronts << (r.wavefronts == 1 ? " wavefront" : " wavefronts");
  if (r.wavefronts > 1)
    s << " (a " << r.wavefronts << "-way bank conflict: bank " << r.worst_bank << " is asked for "
      << r.wavefronts << " different words)";
  else
    s << " (conflict-free)";
  return s.str();
}

/// The first lanes' addresses relative to `base`, for a failure message: "lane 0 -> +0, lane 1 ->
/// +4096, ...". Inactive lanes are shown as "-".
inline std::string describe_lanes(const WarpAddresses& lanes, std::uint64_t base, unsigned shown = 4) {
  std::ostringstream s;
  auto one = [&](unsigned lane) {
    s << "lane " << lane << " -> ";
    if (lanes[lane])
      s << "byte +" << (*lanes[lane] - base);
    else
      s << "-";
  };
  for (unsigned lane = 0; lane < std::min(shown, kWarpSize); ++lane) {
    one(lane);
    s << ", ";
  }
  s << "..., ";
  one(kWarpSize - 1);
  return s.str();
}

}  // namespace access_model
