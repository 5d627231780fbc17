// Unit tests of element ownership and coordinate printing.
#include <gtest/gtest.h>

#include "kit/launch.h"

namespace {

TEST(ExpectedOwner, OneThreadPerElementIn1d) {
  const kit::Launch launch{dim3(40), dim3(256)};
  const auto owner = kit::expected_owner(kit::Shape::d1(10000), launch, 3149);
  EXPECT_EQ(owner.block.x, 12u);
  EXPECT_EQ(owner.thread.x, 77u);
}

TEST(ExpectedOwner, WrapsLikeAGridStrideLoopWhenTheGridIsSmall) {
  const kit::Launch launch{dim3(2), dim3(4)};  // 8 threads for 20 elements
  const auto owner = kit::expected_owner(kit::Shape::d1(20), launch, 13);  // 13 % 8 = 5
  EXPECT_EQ(owner.block.x, 1u);
  EXPECT_EQ(owner.thread.x, 1u);
}

TEST(ExpectedOwner, FollowsTilesWhenThreadsHandleSeveralElements) {
  kit::Launch launch{dim3(10), dim3(256)};
  launch.items_per_thread = 4;  // block b owns [1024 b, 1024 b + 1024), thread t: t, t + 256, ...
  const auto owner = kit::expected_owner(kit::Shape::d1(10000), launch, 1024 * 3 + 512 + 7);
  EXPECT_EQ(owner.block.x, 3u);
  EXPECT_EQ(owner.thread.x, 7u);
}

TEST(ExpectedOwner, MapsColumnsToXAndRowsToYIn2d) {
  const kit::Launch launch{dim3(4, 3), dim3(32, 8)};
  const kit::Shape shape = kit::Shape::d2(20, 100);  // 20 rows, 100 cols
  const auto owner = kit::expected_owner(shape, launch, 17 * 100 + 70);
  EXPECT_EQ(owner.block.x, 2u);
  EXPECT_EQ(owner.thread.x, 6u);
  EXPECT_EQ(owner.block.y, 2u);
  EXPECT_EQ(owner.thread.y, 1u);
}

TEST(DescribeLocation, PrintsCoordinatesByRank) {
  EXPECT_EQ(kit::describe_location(kit::Shape::d1(10), 7), "[7]");
  EXPECT_EQ(kit::describe_location(kit::Shape::d2(3, 5), 7), "(row 1, col 2)");
  EXPECT_EQ(kit::describe_location(kit::Shape::d3(2, 3, 5), 22), "(z 1, y 1, x 2)");
}

}  // namespace
