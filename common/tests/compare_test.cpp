// Unit tests of kit::compare_values and its report.
#include <gtest/gtest.h>

#include "kit/compare.h"

namespace {

TEST(CompareValues, AcceptsValuesWithinTheTolerance) {
  const std::vector<float> expected{1.0f, 2.0f, 100.0f};
  const std::vector<float> got{1.0f + 1e-7f, 2.0f, 100.0001f};
  const auto cmp = kit::compare_values(expected, got, {0.0, 1e-5, "test"});
  EXPECT_TRUE(cmp.ok());
  EXPECT_GT(cmp.max_abs_error, 0.0);
}

TEST(CompareValues, ReportsTheFirstMismatchesInIndexOrder) {
  std::vector<float> expected(100, 1.0f), got(100, 1.0f);
  for (int i : {3, 10, 20, 30, 40, 50, 60}) got[i] = 2.0f;
  const auto cmp = kit::compare_values(expected, got, kit::Tolerance::exact("test"), 5);
  EXPECT_EQ(cmp.mismatches, 7u);
  ASSERT_EQ(cmp.first.size(), 5u);
  EXPECT_EQ(cmp.first[0].index, 3u);
  EXPECT_EQ(cmp.first[4].index, 40u);
  EXPECT_DOUBLE_EQ(cmp.max_abs_error, 1.0);
}

TEST(CompareValues, CountsPoisonedElementsAsNeverWritten) {
  std::vector<float> expected(4, 0.5f), got(4, 0.5f);
  got[2] = kit::poison_value<float>();
  const auto cmp = kit::compare_values(expected, got, {1.0, 1.0, "loose, still catches poison"});
  EXPECT_EQ(cmp.unwritten, 1u);
  ASSERT_EQ(cmp.first.size(), 1u);
  EXPECT_TRUE(cmp.first[0].unwritten);
}

TEST(CompareValues, RejectsAComputedNanWhereANumberIsExpected) {
  const std::vector<float> expected{1.0f};
  const std::vector<float> got{std::nanf("")};
  EXPECT_FALSE(kit::compare_values(expected, got, {1e9, 1e9, "huge"}).ok());
}

TEST(CompareValues, RejectsOutputsOfTheWrongSize) {
  EXPECT_FALSE(kit::compare_values(std::vector<int>{1, 2}, std::vector<int>{1}, kit::Tolerance::exact("")).ok());
}

TEST(DescribeMismatches, NamesCoordinatesOwnerExpectedGotAndTolerance) {
  std::vector<float> expected(6, 1.0f), got(6, 1.0f);
  got[4] = 3.0f;
  got[5] = kit::poison_value<float>();
  const auto cmp = kit::compare_values(expected, got, kit::Tolerance::exact("copies are exact"));
  kit::Launch launch{dim3(2, 1, 1), dim3(2, 2, 1)};
  const std::string text = kit::describe_mismatches("out", cmp, kit::Tolerance::exact("copies are exact"),
                                                    kit::Shape::d2(2, 3), &launch);
  EXPECT_NE(text.find("2 of 6 elements wrong (1 never written)"), std::string::npos) << text;
  EXPECT_NE(text.find("(row 1, col 1): expected 1, got 3"), std::string::npos) << text;
  EXPECT_NE(text.find("owner block (0,0,0) thread (1,1,0)"), std::string::npos) << text;
  EXPECT_NE(text.find("never written"), std::string::npos) << text;
  EXPECT_NE(text.find("copies are exact"), std::string::npos) << text;
}

}  // namespace
