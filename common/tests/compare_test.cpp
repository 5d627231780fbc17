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

TEST(CompareValues, ALargeOutputComparedInPartsGivesTheOneLoopResult) {
  const std::size_t n = 4 * kit::kMinElementsPerPart + 3;
  std::vector<float> expected(n, 1.0f), got(n, 1.0f);
  // Mismatches in the last parts only, one NaN, one poisoned element, one error larger after it.
  const std::size_t late = 3 * kit::kMinElementsPerPart;
  got[late + 5] = kit::poison_value<float>();
  got[late + 9] = 1.5f;
  got[n - 2] = NAN;
  got[n - 1] = 9.0f;
  got[2 * kit::kMinElementsPerPart + 1] = 3.0f;
  const kit::Tolerance tol = kit::Tolerance::exact("test");
  const auto whole = kit::compare_values(expected, got, tol, 3);
  const auto loop = kit::detail::compare_range(expected.data(), got.data(), 0, n, tol, 3);
  EXPECT_EQ(whole.count, n);
  EXPECT_EQ(whole.mismatches, loop.mismatches);
  EXPECT_EQ(whole.mismatches, 5u);
  EXPECT_EQ(whole.unwritten, 1u);
  ASSERT_EQ(whole.first.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(whole.first[i].index, loop.first[i].index);
  EXPECT_EQ(whole.first[0].index, 2 * kit::kMinElementsPerPart + 1);
  EXPECT_TRUE(std::isnan(whole.max_abs_error) && std::isnan(loop.max_abs_error));
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
