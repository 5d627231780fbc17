// Unit tests of where DeviceBuffer puts its elements in an allocation (kit::Placement), with an
// allocator of host memory standing in for the device's, so no GPU is needed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "kit/buffers.h"

namespace {

// Allocations of whole 64-byte pages, recorded so a test can see what was freed.
constexpr std::size_t kPage = 64;
std::vector<void*> released;

void* page_allocate(std::size_t bytes) {
  return std::aligned_alloc(kPage, (bytes + kPage - 1) / kPage * kPage);
}
void page_release(void* p) noexcept {
  released.push_back(p);
  std::free(p);
}
std::size_t page_extent(std::size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

// Installs the page allocator for one test and puts the previous one back afterwards.
class Placement : public ::testing::Test {
 protected:
  void SetUp() override {
    released.clear();
    previous_ = kit::detail::set_device_allocator({&page_allocate, &page_release, &page_extent});
  }
  void TearDown() override { kit::detail::set_device_allocator(previous_); }

 private:
  kit::detail::DeviceAllocator previous_{};
};

int settled = 0;
void count_settle() { ++settled; }

TEST(DeviceSettle, CallsTheAllocatorsSettleAndNothingWithoutOne) {
  // An allocator without settle (cudaMalloc's, or one built with three members) is left alone; a
  // judge's runs its own (the worker lets go of what the judge freed).
  const auto previous =
      kit::detail::set_device_allocator({&page_allocate, &page_release, &page_extent});
  settled = 0;
  kit::detail::device_settle();
  EXPECT_EQ(settled, 0);
  kit::detail::set_device_allocator({&page_allocate, &page_release, &page_extent, &count_settle});
  kit::detail::device_settle();
  kit::detail::device_settle();
  EXPECT_EQ(settled, 2);
  kit::detail::set_device_allocator(previous);
}

TEST_F(Placement, AtTheStartTheDataBeginsTheAllocation) {
  void* data = nullptr;
  {
    kit::DeviceBuffer<float> b(10);  // 40 bytes in a page of 64
    data = b.data();
    EXPECT_EQ(b.size(), 10u);
  }
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0], data);
}

TEST_F(Placement, AtTheEndTheLastElementEndsTheAllocation) {
  char* data = nullptr;
  {
    kit::DeviceBuffer<float> b(12, kit::Placement::end);  // 48 bytes at the end of 64
    data = reinterpret_cast<char*>(b.data());
    kit::DeviceBuffer<float> moved = std::move(b);
    EXPECT_EQ(reinterpret_cast<char*>(moved.data()), data);
    EXPECT_EQ(b.data(), nullptr);
  }
  ASSERT_EQ(released.size(), 1u) << "the moved-from buffer must free nothing";
  EXPECT_EQ(static_cast<char*>(released[0]) + kPage, data + 12 * sizeof(float))
      << "the data must end where the allocation ends, and the allocation's start be freed";
}

TEST_F(Placement, AtTheEndTheSizeMustKeepTheStartAligned) {
  EXPECT_THROW(kit::DeviceBuffer<float>(13, kit::Placement::end), std::invalid_argument);
  EXPECT_TRUE(released.empty()) << "nothing is allocated for a size that cannot be placed";
  EXPECT_NO_THROW(kit::DeviceBuffer<float>(13));
}

}  // namespace
