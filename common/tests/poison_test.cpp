// Unit tests of the poison and guard patterns and the guard scan.
#include <gtest/gtest.h>

#include <cmath>

#include "kit/poison.h"

namespace {

TEST(Poison, FloatPoisonIsANanNoArithmeticProduces) {
  const float p = kit::poison_value<float>();
  EXPECT_TRUE(std::isnan(p));
  EXPECT_FALSE(kit::is_poison(std::nanf("")));
  EXPECT_FALSE(kit::is_poison(0.0f / 0.0f * 1.0f + 0.0f * p * 0.0f + std::nanf("")));
  EXPECT_TRUE(kit::is_poison(p));
  EXPECT_FALSE(kit::same_bits(kit::poison_value<float>(), kit::guard_value<float>()));
}

TEST(GuardScan, FindsNoWritesInIntactGuards) {
  const std::vector<int> guard(8, kit::guard_value<int>());
  EXPECT_TRUE(kit::find_guard_writes(guard, guard, 100).empty());
}

TEST(GuardScan, ReportsOffsetsBeforeAndAfterTheOutput) {
  std::vector<float> before(8, kit::guard_value<float>()), after(8, kit::guard_value<float>());
  before[7] = 1.0f;  // element -1
  after[0] = 2.0f;   // element n
  after[5] = 3.0f;   // element n + 5
  const auto hits = kit::find_guard_writes(before, after, 1000);
  ASSERT_EQ(hits.size(), 3u);
  EXPECT_EQ(hits[0].offset, -1);
  EXPECT_EQ(hits[1].offset, 1000);
  EXPECT_EQ(hits[2].offset, 1005);
  const std::string text = kit::describe_guard_writes(hits, 1000);
  EXPECT_NE(text.find("offset -1 (1 before element 0)"), std::string::npos) << text;
  EXPECT_NE(text.find("offset 1000 (1 past the end)"), std::string::npos) << text;
}

}  // namespace
