// Unit tests of seeds and the generator.
#include <gtest/gtest.h>

#include "kit/parallel.h"
#include "kit/random.h"

namespace {

TEST(Seed, ParsesDecimalNumbers) { EXPECT_EQ(kit::parse_seed("123456"), 123456u); }

TEST(Seed, RejectsAnythingElseWithAClearMessage) {
  for (const char* bad : {"", "12a", "-3", " 7", "99999999999999999999999"}) {
    try {
      kit::parse_seed(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("KIT_SEED"), std::string::npos);
    }
  }
}

TEST(Random, SameSeedSameSequenceDifferentSeedDifferentSequence) {
  kit::Random a(42), b(42), c(43);
  const auto va = a.floats(100, -1, 1), vb = b.floats(100, -1, 1), vc = c.floats(100, -1, 1);
  EXPECT_EQ(va, vb);
  EXPECT_NE(va, vc);
}

TEST(Random, StaysInRange) {
  kit::Random r(7);
  for (float v : r.floats(10000, -2.0f, 3.0f)) {
    EXPECT_GE(v, -2.0f);
    EXPECT_LT(v, 3.0f);
  }
  for (int v : r.ints(10000, -5, 5)) {
    EXPECT_GE(v, -5);
    EXPECT_LE(v, 5);
  }
}

TEST(Random, LargeDrawsOnSeveralCoresAreTheDrawsOfOneLoop) {
  // More than one part (kit/parallel.h) on any machine with two cores or more.
  const std::size_t n = 3 * kit::kMinElementsPerPart + 17;
  kit::Random bulk(2026), one_by_one(2026);
  const auto floats = bulk.floats(n, -1.0f, 1.0f);
  const auto ints = bulk.ints(n, -9, 9);
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(floats[i], one_by_one.uniform(-1.0f, 1.0f)) << "float " << i;
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(ints[i], one_by_one.uniform_int(-9, 9)) << "int " << i;
  EXPECT_EQ(bulk.next_u64(), one_by_one.next_u64()) << "the state after the draws differs";
}

TEST(Random, AdvanceSkipsTheDrawsThatValueAfterComputes) {
  // kit/device_check.h draws on the device from advance()'s state with value_after(): the same
  // values as floats(), and the generator ends in the same state.
  kit::Random host(77), device(77);
  const auto floats = host.floats(5000, -1.0f, 1.0f);
  const std::uint64_t base = device.advance(floats.size());
  for (std::size_t i = 0; i < floats.size(); ++i)
    ASSERT_EQ(floats[i], kit::Random::to_uniform(kit::Random::value_after(base, i + 1), -1.0f, 1.0f))
        << "float " << i;
  EXPECT_EQ(host.next_u64(), device.next_u64()) << "the state after the draws differs";
}

}  // namespace
