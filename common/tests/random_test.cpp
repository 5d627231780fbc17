// Unit tests of seeds and the generator.
#include <gtest/gtest.h>

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

}  // namespace
