// Unit tests of lab 03's access model (grader/03_coalescing/access_model.h) on mappings whose cost
// is known: they run with the kit's own unit tests (kit_unit_tests), on any machine.
#include "access_model.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>

namespace {

namespace am = access_model;

constexpr std::uint64_t kBase = 4096;  // 256-byte aligned, like a cudaMalloc pointer

// Lane L touches float `index(L)` of an array at `base` (nothing when index returns nullopt).
template <class Fn>
am::WarpAddresses lanes(Fn index, std::uint64_t base = kBase) {
  return am::warp_addresses(am::Coord{32, 1, 1}, 0, base, 4,
                            [&](am::Coord t) -> std::optional<std::uint64_t> { return index(t.x); });
}

am::GlobalRequest floats_with_stride(unsigned stride, std::uint64_t base = kBase) {
  return am::global_request(lanes([=](unsigned l) { return std::uint64_t(l) * stride; }, base), 4);
}

TEST(AccessModel, UnitStrideFloatsTouchFourSectorsInOneLine) {
  const am::GlobalRequest r = floats_with_stride(1);
  EXPECT_EQ(r.sectors, 4u);
  EXPECT_EQ(r.lines, 1u);
  EXPECT_EQ(r.useful_bytes, 128u);
  EXPECT_EQ(r.ideal_sectors, 4u);
  EXPECT_EQ(r.active_lanes, 32u);
  EXPECT_DOUBLE_EQ(r.efficiency(), 1.0);
}

TEST(AccessModel, StrideTwoTouchesEightSectors) {
  const am::GlobalRequest r = floats_with_stride(2);
  EXPECT_EQ(r.sectors, 8u);
  EXPECT_EQ(r.lines, 2u);
  EXPECT_EQ(r.ideal_sectors, 4u);
  EXPECT_DOUBLE_EQ(r.efficiency(), 0.5);
}

TEST(AccessModel, StrideFourTouchesSixteenSectors) {
  // The AoS case: one field of a 16-byte struct per lane.
  EXPECT_EQ(floats_with_stride(4).sectors, 16u);
}

TEST(AccessModel, StrideOfEightFloatsOrMoreTouchesOneSectorPerLane) {
  for (unsigned stride : {8u, 9u, 32u, 1000u, 8192u}) {
    const am::GlobalRequest r = floats_with_stride(stride);
    EXPECT_EQ(r.sectors, 32u) << "stride " << stride;
    EXPECT_EQ(r.useful_bytes, 128u) << "stride " << stride;
    EXPECT_DOUBLE_EQ(r.efficiency(), 0.125) << "stride " << stride;
  }
  EXPECT_EQ(floats_with_stride(32).lines, 32u);
  EXPECT_EQ(floats_with_stride(8).lines, 8u) << "stride 8: four lanes per 128-byte line";
}

TEST(AccessModel, BroadcastTouchesOneSector) {
  const am::GlobalRequest r = am::global_request(lanes([](unsigned) { return std::uint64_t(7); }), 4);
  EXPECT_EQ(r.sectors, 1u);
  EXPECT_EQ(r.lines, 1u);
  EXPECT_EQ(r.useful_bytes, 4u);
  EXPECT_EQ(r.ideal_sectors, 1u);
  EXPECT_EQ(r.active_lanes, 32u);
}

TEST(AccessModel, MisalignedUnitStrideTouchesFiveSectors) {
  // 128 bytes starting 4 bytes into a sector straddle five sectors and two lines.
  const am::GlobalRequest r = floats_with_stride(1, kBase + 4);
  EXPECT_EQ(r.sectors, 5u);
  EXPECT_EQ(r.lines, 2u);
  EXPECT_EQ(r.ideal_sectors, 4u);
  // 32 bytes off: a whole sector later, still 4 sectors, but across two lines.
  const am::GlobalRequest s = floats_with_stride(1, kBase + 32);
  EXPECT_EQ(s.sectors, 4u);
  EXPECT_EQ(s.lines, 2u);
}

TEST(AccessModel, InactiveLanesTouchNothing) {
  const am::GlobalRequest r = am::global_request(
      lanes([](unsigned l) -> std::optional<std::uint64_t> {
        if (l >= 8) return std::nullopt;
        return l;
      }),
      4);
  EXPECT_EQ(r.active_lanes, 8u);
  EXPECT_EQ(r.sectors, 1u) << "8 neighbouring floats fill exactly one sector";
  const am::GlobalRequest none = am::global_request(am::WarpAddresses{}, 4);
  EXPECT_EQ(none.sectors, 0u);
  EXPECT_EQ(none.ideal_sectors, 0u);
  EXPECT_DOUBLE_EQ(none.efficiency(), 1.0);
}

TEST(AccessModel, WideAccessesCountEverySectorTheySpan) {
  // One float4 (16 bytes) per lane, unit stride: 512 bytes, 16 sectors, all of them useful.
  const am::WarpAddresses wide = am::warp_addresses(
      am::Coord{32, 1, 1}, 0, kBase, 16, [](am::Coord t) -> std::optional<std::uint64_t> { return t.x; });
  const am::GlobalRequest r = am::global_request(wide, 16);
  EXPECT_EQ(r.sectors, 16u);
  EXPECT_EQ(r.useful_bytes, 512u);
  EXPECT_DOUBLE_EQ(r.efficiency(), 1.0);
}

TEST(AccessModel, WarpsFollowTheHardwareOrderXFastest) {
  // A 16 x 4 block: warp 0 is rows y = 0 and 1, warp 1 rows 2 and 3.
  const auto w0 = am::warp_threads(am::Coord{16, 4, 1}, 0);
  ASSERT_TRUE(w0[21].has_value());
  EXPECT_EQ(w0[21]->x, 5u);
  EXPECT_EQ(w0[21]->y, 1u);
  const auto w1 = am::warp_threads(am::Coord{16, 4, 1}, 1);
  EXPECT_EQ(w1[0]->y, 2u);
  // A block of 100 threads: warp 3 has 4 lanes.
  const auto w3 = am::warp_threads(am::Coord{100, 1, 1}, 3);
  EXPECT_TRUE(w3[3].has_value());
  EXPECT_FALSE(w3[4].has_value());
  EXPECT_EQ(am::warps_per_block(am::Coord{100, 1, 1}), 4u);
  EXPECT_EQ(am::warps_per_block(am::Coord{32, 8, 1}), 8u);
}

TEST(AccessModel, ColumnOfA2dBlockIsStrided) {
  // Warp 0 of a 32 x 8 block reading element (x, y) of a 1024-wide row-major matrix: unit stride.
  // The same warp reading (y, x), i.e. down a column: 32 sectors.
  auto rows = am::warp_addresses(am::Coord{32, 8, 1}, 0, kBase, 4,
                                 [](am::Coord t) -> std::optional<std::uint64_t> { return t.y * 1024ull + t.x; });
  auto cols = am::warp_addresses(am::Coord{32, 8, 1}, 0, kBase, 4,
                                 [](am::Coord t) -> std::optional<std::uint64_t> { return t.x * 1024ull + t.y; });
  EXPECT_EQ(am::global_request(rows, 4).sectors, 4u);
  EXPECT_EQ(am::global_request(cols, 4).sectors, 32u);
}

am::SharedRequest words_with_stride(unsigned stride) {
  return am::shared_request(lanes([=](unsigned l) { return std::uint64_t(l) * stride; }, 0));
}

TEST(AccessModel, SharedMemoryBankConflicts) {
  EXPECT_EQ(words_with_stride(1).wavefronts, 1u) << "32 consecutive words: 32 different banks";
  EXPECT_EQ(words_with_stride(2).wavefronts, 2u) << "stride 2: 16 banks, two words each";
  EXPECT_EQ(words_with_stride(32).wavefronts, 32u) << "a column of a [32][32] tile: one bank";
  EXPECT_EQ(words_with_stride(32).worst_bank, 0u);
  EXPECT_EQ(words_with_stride(33).wavefronts, 1u) << "a column of a [32][33] tile: 32 banks";
  EXPECT_EQ(words_with_stride(3).wavefronts, 1u) << "any odd stride is conflict-free";
  const am::SharedRequest same = am::shared_request(lanes([](unsigned) { return std::uint64_t(5); }, 0));
  EXPECT_EQ(same.wavefronts, 1u) << "all lanes reading one word: a broadcast";
  const am::SharedRequest pairs = am::shared_request(lanes([](unsigned l) { return std::uint64_t(l / 2); }, 0));
  EXPECT_EQ(pairs.wavefronts, 1u) << "two lanes per word, 16 words in 16 banks";
}

TEST(AccessModel, DescriptionsNameTheNumbers) {
  const std::string g = am::describe(floats_with_stride(32));
  EXPECT_NE(g.find("32 sectors"), std::string::npos) << g;
  EXPECT_NE(g.find("13%"), std::string::npos) << g;  // 128 of 1024 bytes
  const std::string s = am::describe(words_with_stride(32));
  EXPECT_NE(s.find("32-way bank conflict"), std::string::npos) << s;
  const std::string l = am::describe_lanes(lanes([](unsigned l) { return std::uint64_t(l) * 32; }), kBase);
  EXPECT_NE(l.find("lane 1 -> byte +128"), std::string::npos) << l;
}

}  // namespace
