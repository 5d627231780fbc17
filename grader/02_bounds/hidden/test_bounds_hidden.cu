// Hidden tests of lab 02, bounds checks: instructor only. This folder is not part of a student
// edition; the tests are built into grade_02_bounds, reference_02_bounds and every
// wrong_02_bounds_* here, and reported with the lab's hidden_visibility (lab.json).
//
//   build/bin/grade_02_bounds --gtest_filter='BoundsHidden*'
//   KIT_SEED=1234 build/bin/grade_02_bounds --gtest_filter='BoundsHidden*'   replay one failure
//
// The same checks as the visible tests (bounds_checks.h: poisoned, guarded outputs, every element
// compared, inputs unchanged) on sizes and shapes they do not use: sizes with no tail at all and
// large primes, matrices of one row or one column, prime by prime, exact on one axis only, sizes
// one below, at and one above a multiple of a grid-stride loop's whole grid, and every launch
// limit at its exact value and one over.
#include <string>
#include <vector>

#include "bounds.h"
#include "bounds_checks.h"
#include "kit/test.h"

namespace {

using lab02_grader::check_grid_stride;
using lab02_grader::check_grid_stride_in_place;
using lab02_grader::check_rank1_update;
using lab02_grader::check_scale_shift;
using lab02_grader::Config;
using lab02_grader::expect_accepted;
using lab02_grader::expect_rejected;
using lab02_grader::grid_name;
using lab02_grader::InvalidConfig;
using lab02_grader::Shape2;

class BoundsHiddenGpu : public kit::GpuTest {};
using BoundsHiddenHost = kit::HostTest;

// ---- Step 1 ------------------------------------------------------------------------------------

KIT_HIDDEN_TEST(BoundsHiddenGpu, ScaleShiftOnSizesWithAndWithoutATail, "bounds.1", gpu, 1,
                "scale_shift on 2, 32, 256, 511, 4099, 999983 and 2^24 - 1 elements: no tail, a "
                "full warp or block, one short of two blocks, large primes") {
  // 32 and 256 leave no idle thread at all (a guard must not drop the last element); 511 leaves
  // one; 4099 and 999983 are primes; 2^24 - 1 needs 65536 blocks, the last one short by one.
  for (const unsigned n : {2u, 32u, 256u, 511u, 4099u, 999983u, (1u << 24) - 1}) {
    SCOPED_TRACE("scale_shift on n = " + std::to_string(n));
    check_scale_shift(
        [](unsigned count, float a, float b, const float* in, float* out, cudaStream_t stream) {
          return lab02::scale_shift(count, a, b, in, out, stream);
        },
        n);
    if (HasFailure()) return;  // one size's report is enough to act on
  }
}

// ---- Step 2 ------------------------------------------------------------------------------------

KIT_HIDDEN_TEST(BoundsHiddenGpu, Rank1UpdateOnShapesTheVisibleTestsSkip, "bounds.2", gpu, 2,
                "rank1_update on 1 x 4099, 4099 x 1, 2 x 2, 31 x 37, 8 x 33, 9 x 32, 1009 x 1013, "
                "65537 x 3 and 3 x 65537: every element, nothing past either edge") {
  // Blocks are 32 x 8. 1 x 4099: one row of 129 blocks, 29 columns of threads past the right
  // edge. 4099 x 1: one column, 513 blocks down, 5 rows past the bottom. 31 x 37 and 1009 x 1013:
  // primes, ragged on both axes. 8 x 33: exact rows, ragged columns only; 9 x 32: exact columns,
  // ragged rows only. 65537 x 3: 8193 blocks down; 3 x 65537: 2049 blocks across.
  const Shape2 shapes[] = {{1, 4099}, {4099, 1},     {2, 2},     {31, 37}, {8, 33},
                           {9, 32},   {1009, 1013}, {65537, 3}, {3, 65537}};
  for (const Shape2& shape : shapes) {
    SCOPED_TRACE("rank1_update on " + std::to_string(shape.rows) + " x " +
                 std::to_string(shape.cols));
    check_rank1_update(shape.rows, shape.cols);
    if (HasFailure()) return;
  }
}

// ---- Step 3 ------------------------------------------------------------------------------------

KIT_HIDDEN_TEST(BoundsHiddenGpu, GridStrideAtAWholeNumberOfGrids, "bounds.3", gpu, 2,
                "scale_shift_grid_stride on sizes one below, at and one above a multiple of the "
                "whole grid's threads, with 3 blocks, 13 blocks and its default grid, and in "
                "place") {
  // The default grid: asked on 2^24 elements, more than any GPU holds at once, so it is capped at
  // the GPU's resident blocks, as it is for every size from 2 grids' threads up.
  kit::Launch probe;
  {
    SCOPED_TRACE("scale_shift_grid_stride on 2^24 elements with the default grid");
    probe = check_grid_stride(1u << 24, 0);
  }
  if (HasFailure()) return;
  for (const unsigned blocks : {3u, 13u, 0u}) {
    const unsigned grid = blocks > 0 ? blocks : probe.grid.x;
    const unsigned threads = grid * lab02::kBlock1d;  // one trip of the loop covers this many
    const unsigned multiple = blocks > 0 ? 5 : 2;
    for (const unsigned n : {multiple * threads - 1, multiple * threads, multiple * threads + 1}) {
      SCOPED_TRACE("scale_shift_grid_stride on n = " + std::to_string(n) + " (" +
                   std::to_string(multiple) + " x " + std::to_string(threads) + " threads " +
                   (n < multiple * threads ? "- 1" : n > multiple * threads ? "+ 1" : "exactly") +
                   ") with " + grid_name(blocks));
      check_grid_stride(n, blocks);
      if (HasFailure()) return;
    }
    SCOPED_TRACE("scale_shift_grid_stride in place on n = " +
                 std::to_string(multiple * threads + 1) + " with " + grid_name(blocks));
    check_grid_stride_in_place(multiple * threads + 1, blocks);
    if (HasFailure()) return;
  }
}

// ---- Step 4 ------------------------------------------------------------------------------------

KIT_HIDDEN_TEST(BoundsHiddenHost, ValidateAtTheExactLimits, "bounds.4", host, 2,
                "validate_launch at every limit exactly (all three grid limits at once, block.y "
                "1024, block.z 64 with 1024 threads) and one over each, and blocks of 2^32 threads "
                "that a 32-bit product counts as 0") {
  const std::vector<Config> valid = {
      {dim3(2147483647u, 65535, 65535), dim3(1024)},
      {dim3(2147483647u, 65535, 65535), dim3(8, 2, 64)},
      {dim3(1), dim3(1, 1024)},
      {dim3(1), dim3(1, 1, 64)},
      {dim3(65535), dim3(4, 4, 64)},
  };
  for (const Config& c : valid) expect_accepted(c);
  const std::vector<InvalidConfig> invalid = {
      {dim3(1), dim3(1, 1025), "block", {"1025", "1024"}, "block.y is at most 1024"},
      {dim3(1), dim3(1, 1, 65), "block", {"65", "64"},
       "block.z is at most 64, even for 65 threads"},
      {dim3(1), dim3(1024, 2), "block", {"2048", "1024"},
       "1024 x 2 = 2048 threads, each dimension within its own limit"},
      {dim3(1), dim3(33, 32), "block", {"1056", "1024"}, "33 x 32 = 1056 threads, one warp over"},
      {dim3(1), dim3(65536, 65536), "block", {"1024"},
       "65536 x 65536 = 2^32 threads, which a 32-bit product counts as 0"},
      {dim3(1), dim3(2048, 2048, 1024), "block", {"1024"},
       "2048 x 2048 x 1024 = 2^32 threads, which a 32-bit product counts as 0"},
      {dim3(2147483648u, 65535, 65535), dim3(1), "grid", {"2147483648", "2147483647"},
       "grid.x one over 2^31 - 1, grid.y and grid.z at their limit"},
      {dim3(2147483647u, 65536, 1), dim3(1), "grid", {"65536", "65535"},
       "grid.y one over 65535, grid.x at its limit"},
      {dim3(2147483647u, 1, 65536), dim3(1), "grid", {"65536", "65535"},
       "grid.z one over 65535, grid.x at its limit"},
      {dim3(2147483647u, 0, 65535), dim3(1024), "grid", {"zero"},
       "a zero grid.y between two dimensions at their limit"},
  };
  for (const InvalidConfig& c : invalid) expect_rejected(c);
}

// ---- Performance step: correctness of the fast kernel -------------------------------------------

KIT_HIDDEN_TEST(BoundsHiddenGpu, FastKernelAtAWholeNumberOfTrips, "bounds.perf", gpu, 1,
                "scale_shift_fast on sizes one below, at and one above a multiple of what one "
                "trip of its loop covers (grid x block x items per thread)") {
  // Asked on 2^24 elements first: the grid scale_shift_fast chooses there (capped at a few waves of
  // resident blocks in the reference) covers grid x block x items_per_thread elements per trip.
  kit::Launch probe;
  {
    SCOPED_TRACE("scale_shift_fast on 2^24 elements");
    check_scale_shift(
        [&](unsigned n, float a, float b, const float* in, float* out, cudaStream_t stream) {
          probe = lab02::scale_shift_fast(n, a, b, in, out, stream);
          return probe;
        },
        1u << 24);
  }
  if (HasFailure()) return;
  const unsigned items = probe.items_per_thread > 0 ? probe.items_per_thread : 1;
  const unsigned trip = probe.grid.x * probe.block.x * items;
  // A launch that covers far more than 2^24 elements in one trip has no loop to test here.
  if (trip > (1u << 25)) return;
  for (const unsigned n : {2 * trip - 1, 2 * trip, 2 * trip + 1, trip + 1}) {
    SCOPED_TRACE("scale_shift_fast on n = " + std::to_string(n) + " (one trip covers " +
                 std::to_string(trip) + " elements)");
    check_scale_shift(
        [](unsigned count, float a, float b, const float* in, float* out, cudaStream_t stream) {
          return lab02::scale_shift_fast(count, a, b, in, out, stream);
        },
        n);
    if (HasFailure()) return;
  }
}

}  // namespace
