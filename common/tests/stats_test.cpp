// Unit tests of the summary statistics and the threshold decision.
#include <gtest/gtest.h>

#include "kit/stats.h"

namespace {

TEST(Summarize, ComputesMedianAndQuartiles) {
  const auto s = kit::summarize({5, 1, 4, 2, 3});
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.q1, 2);
  EXPECT_DOUBLE_EQ(s.q3, 4);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(kit::quantile({1, 2}, 0.5), 1.5);
}

TEST(Decide, PassesWhenTheLowerQuartileClears) {
  EXPECT_EQ(kit::decide(kit::summarize({0.90, 0.91, 0.92, 0.93}), 0.6, 0.05), kit::Decision::pass);
}

TEST(Decide, FailsWhenTheUpperQuartileMisses) {
  EXPECT_EQ(kit::decide(kit::summarize({0.40, 0.41, 0.42, 0.43}), 0.6, 0.05), kit::Decision::fail);
}

TEST(Decide, AsksForMoreSamplesWhenNoisyAndStraddling) {
  EXPECT_EQ(kit::decide(kit::summarize({0.3, 0.5, 0.7, 0.9}), 0.6, 0.05), kit::Decision::undecided);
}

TEST(Decide, UsesTheMedianWhenTightButStraddling) {
  EXPECT_EQ(kit::decide(kit::summarize({0.598, 0.600, 0.601, 0.602}), 0.6, 0.05), kit::Decision::pass);
  EXPECT_EQ(kit::decide(kit::summarize({0.597, 0.598, 0.599, 0.601}), 0.6, 0.05), kit::Decision::fail);
}

}  // namespace
