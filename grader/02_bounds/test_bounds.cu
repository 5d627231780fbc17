// Grader of lab 02, bounds checks.
//
//   python3 grader/kit.py grade 02          every test, each in its own process, with a score
//   build/bin/grade_02_bounds               the same tests in one process (quick, no score)
//   KIT_SEED=1234 build/bin/grade_02_bounds --gtest_filter='*GridStride*'   replay one failure
//   python3 grader/kit.py sanitize 02 --tool memcheck   the correctness tests under memcheck
//
// Steps: 1 the tail of a 1D launch, 2 both ragged edges of a 2D launch, 3 grid-stride loops over
// grids of any size, 4 rejecting invalid launch configurations, 5 the kernels of steps 1-3 and
// perf under memcheck, perf a grid-stride kernel against the device copy bandwidth. Every output
// sits between guard regions and starts poisoned, so a write past either end is reported by its
// offset and an element nothing wrote by its index.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "bounds.h"
#include "bounds_checks.h"
#include "kit/check.h"
#include "kit/device_info.h"
#include "kit/huge.h"
#include "kit/device_check.h"
#include "kit/test.h"
#include "remote.h"

namespace {

using lab02_grader::check_grid_stride;
using lab02_grader::check_grid_stride_in_place;
using lab02_grader::check_rank1_update;
using lab02_grader::check_scale_shift;
using lab02_grader::Config;
using lab02_grader::describe_config;
using lab02_grader::expect_accepted;
using lab02_grader::expect_rejected;
using lab02_grader::grid_name;
using lab02_grader::InvalidConfig;
using lab02_grader::kScaleShiftTolerance;
using lab02_grader::make_scale_shift_case;
using lab02_grader::scale_shift_expected_on_device;
using lab02_grader::ScaleShiftCase;
using lab02_grader::Shape2;
using lab02_grader::shape_name;
using lab02_grader::size_name;
using lab02_probe::Ended;
using lab02_probe::WithConfigOutcome;

using BoundsHost = kit::HostTest;

// Sizes around the warp (32) and the block (256), one of lab 01's, and two large odd sizes: every
// one leaves a partial last block. 2^26 + 1 needs 262145 blocks; its last block has one element.
const auto kSizes = ::testing::Values(1u, 31u, 33u, 255u, 257u, 1000u, (1u << 20) + 7,
                                      (1u << 26) + 1);

// ---- Step 1 ------------------------------------------------------------------------------------

class ScaleShift : public kit::GpuTestWithParam<unsigned> {};

KIT_TEST_P(ScaleShift, WritesEveryElementAndNothingPastTheEnd, "bounds.1", gpu, 1,
           "scale_shift writes a*in+b to each of the n elements and nothing past the end") {
  check_scale_shift(
      [](unsigned n, float a, float b, const float* in, float* out, cudaStream_t stream) {
        return lab02::scale_shift(n, a, b, in, out, stream);
      },
      GetParam());
}

INSTANTIATE_TEST_SUITE_P(Sizes, ScaleShift, kSizes, size_name);

// ---- Step 2 ------------------------------------------------------------------------------------

class Rank1Update : public kit::GpuTestWithParam<Shape2> {};

KIT_TEST_P(Rank1Update, GuardsTheRightAndTheBottomEdge, "bounds.2", gpu, 2,
           "rank1_update writes in + u*v to every element and nothing beyond the right or the "
           "bottom edge of the matrix") {
  const auto [rows, cols] = GetParam();
  check_rank1_update(rows, cols);
}

// A single element; one row (the grid overhangs only the bottom, by 7 rows of threads); one
// column (only the right, by 31 columns of threads); and 4097 x 4099, just past a multiple of the
// block on both axes: 129 x 513 blocks of 32 x 8, overhanging by 29 columns and 7 rows.
INSTANTIATE_TEST_SUITE_P(Shapes, Rank1Update,
                         ::testing::Values(Shape2{1, 1}, Shape2{1, 1000}, Shape2{1000, 1},
                                           Shape2{4097, 4099}),
                         shape_name);

// ---- Step 3 ------------------------------------------------------------------------------------

KIT_TEST(BoundsHost, GridStrideBlocksCapsTheGrid, "bounds.3", host, 2,
         "grid_stride_blocks: 1000 elements need 4 blocks of 256; 2^26 + 1 elements get the cap "
         "of 1056 blocks (8 per SM on 132 SMs)") {
  EXPECT_EQ(lab02::grid_stride_blocks(1000, 256, 1056), 4u) << "fewer elements than the cap allows";
  EXPECT_EQ(lab02::grid_stride_blocks((1u << 26) + 1, 256, 1056), 1056u) << "more than the cap";
  EXPECT_EQ(lab02::grid_stride_blocks(1, 256, 1056), 1u) << "one element still needs a block";
  EXPECT_EQ(lab02::grid_stride_blocks(256 * 1056, 256, 1056), 1056u) << "exactly the cap";
  EXPECT_EQ(lab02::grid_stride_blocks(256 * 1056 + 1, 256, 1056), 1056u) << "one element over";
  EXPECT_EQ(lab02::grid_stride_blocks(257, 256, 1), 1u) << "a cap of one block";
  EXPECT_EQ(lab02::grid_stride_blocks(4294967295u, 1024, 1u << 30), 4194304u)
      << "the largest unsigned n: rounding up must not overflow";
  auto rng = kit::test_random();
  for (int k = 0; k < 1000; ++k) {
    const auto n = static_cast<unsigned>(rng.uniform_int(1, 1ll << 31));
    const auto block = static_cast<unsigned>(rng.uniform_int(1, 1024));
    const auto cap = static_cast<unsigned>(rng.uniform_int(1, 100000));
    const unsigned needed = n / block + (n % block != 0);
    ASSERT_EQ(lab02::grid_stride_blocks(n, block, cap), needed < cap ? needed : cap)
        << "grid_stride_blocks(" << n << ", " << block << ", " << cap << ")\n" << kit::seed_note();
  }
}

// Forced grids: one block (every thread loops over n / 256 elements), seven (a number that divides
// nothing here), and the launcher's own choice (0). One block runs up to kOneBlockMost elements
// (4097 trips of its loop): over 2^26 + 1 it is 262 145 trips, a quarter of a second of one SM
// for nothing more to learn, which a known-wrong run of the selftest paid once a submission.
const unsigned kForcedGrids[] = {1, 7, 0};
constexpr unsigned kOneBlockMost = (1u << 20) + 7;

class GridStride : public kit::GpuTestWithParam<unsigned> {};

KIT_TEST_P(GridStride, CoversEveryElementWithAnyGrid, "bounds.3", gpu, 1,
           "scale_shift_grid_stride writes every element once and nothing past the end, with a "
           "grid of 1 block (up to 2^20 + 7 elements), of 7 blocks and its default grid") {
  const unsigned n = GetParam();
  for (const unsigned blocks : kForcedGrids) {
    if (blocks == 1 && n > kOneBlockMost) continue;
    SCOPED_TRACE("scale_shift_grid_stride with " + grid_name(blocks));
    check_grid_stride(n, blocks);
    if (HasFailure()) return;  // one grid's report is enough to act on
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, GridStride, kSizes, size_name);

class GridStrideInPlace : public kit::GpuTestWithParam<unsigned> {};

KIT_TEST_P(GridStrideInPlace, UpdatesEachElementExactlyOnce, "bounds.3", gpu, 2,
           "scale_shift_grid_stride in place (out == in) applies a*x+b to each element exactly "
           "once, with 7 blocks and with its default grid") {
  const unsigned n = GetParam();
  for (const unsigned blocks : {7u, 0u}) {
    SCOPED_TRACE("scale_shift_grid_stride in place with " + grid_name(blocks));
    check_grid_stride_in_place(n, blocks);
    if (HasFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, GridStrideInPlace, ::testing::Values(1000u, (1u << 20) + 7),
                         size_name);

// A grid of 2^24 - 3072 blocks: 2^32 - 786432 threads, so one trip of the loop reaches all but
// the last 786432 indices below 2^32. Thread t of the first 2^20 + 7 handles element t, and its
// next index, t + 4294180864, is past n: its loop ends. With a 32-bit index, that sum passes
// 2^32 - 1 for every t >= 786432 and wraps round to t - 786432, an element thread t - 786432
// has already updated, which is then updated again (once only: n <= 2 * 786432). The wrap needs
// no more memory than any other test: n is small, the grid is what is huge. Most of its threads
// have no element and leave at once.
constexpr unsigned kWrapN = (1u << 20) + 7;
constexpr unsigned kWrapBlocks = (1u << 24) - 3072;
constexpr unsigned kWrapShort = 786432;  // 2^32 minus the grid's threads
static_assert((1ull << 32) - std::uint64_t{kWrapBlocks} * lab02::kBlock1d == kWrapShort,
              "the grid is 786432 threads short of 2^32");
static_assert(kWrapShort < kWrapN && kWrapN <= 2ull * kWrapShort,
              "a 32-bit index wraps, once, for the threads from 786432 to n - 1");

class GridStrideHugeGrid : public kit::GpuTest {};

KIT_TEST(GridStrideHugeGrid, IndexDoesNotWrapPast2To32, "bounds.3", gpu, 2,
         "scale_shift_grid_stride in place on 2^20 + 7 elements with 2^24 - 3072 blocks "
         "(2^32 - 786432 threads): a thread's second index passes 2^32 - 1 and must end its loop, "
         "not wrap round to an element of another thread") {
  SCOPED_TRACE("scale_shift_grid_stride in place on n = " + std::to_string(kWrapN) + " with " +
               grid_name(kWrapBlocks));
  const std::string threads = std::to_string((1ull << 32) - kWrapShort);
  const std::string short_of = std::to_string(kWrapShort);
  check_grid_stride_in_place(
      kWrapN, kWrapBlocks,
      "with " + threads + " threads, thread t's second index, t + " + threads +
          ", passes 2^32 - 1 for t >= " + short_of +
          "; an index of 32 bits (unsigned i) wraps round to t - " + short_of +
          ", an element already updated, and updates it again.\nKeep the index and the stride in "
          "std::size_t.");
}

// ---- Step 4 ------------------------------------------------------------------------------------

// Valid launches, the limits themselves included.
const std::vector<Config> kValidConfigs = {
    {dim3(1), dim3(1)},
    {dim3(4), dim3(256)},
    {dim3(7), dim3(96)},
    {dim3(1), dim3(100)},
    {dim3(1), dim3(1024)},
    {dim3(1), dim3(1, 1024)},
    {dim3(1), dim3(32, 32)},
    {dim3(1), dim3(16, 1, 64)},
    {dim3(1), dim3(1, 16, 64)},
    {dim3(129, 513), dim3(32, 8)},
    {dim3(2147483647u), dim3(1024)},
    {dim3(1, 65535, 65535), dim3(1)},
};

KIT_TEST(BoundsHost, ValidateAcceptsEveryValidLaunch, "bounds.4", host, 2,
         "validate_launch accepts valid launches, the limits included: 1024 threads, block.z 64, "
         "grid.x 2^31 - 1, grid.y and grid.z 65535") {
  for (const Config& c : kValidConfigs) expect_accepted(c);
}

const std::vector<InvalidConfig> kInvalidConfigs = {
    {dim3(1), dim3(2048), "block", {"2048", "1024"}, "2048 threads; a block holds at most 1024"},
    {dim3(1), dim3(32, 32, 2), "block", {"2048", "1024"},
     "32 x 32 x 2 = 2048 threads: the limit is on the product of the three dimensions"},
    {dim3(1), dim3(64, 64), "block", {"4096", "1024"}, "64 x 64 = 4096 threads"},
    {dim3(1), dim3(1025), "block", {"1025", "1024"}, "one thread over the limit"},
    {dim3(1), dim3(1, 1, 128), "block", {"128", "64"},
     "block.z is at most 64, however few threads"},
    {dim3(1), dim3(4, 1, 65), "block", {"65", "64"}, "block.z is at most 64"},
    {dim3(1), dim3(0), "block", {"zero"}, "a block of no threads"},
    {dim3(1), dim3(32, 8, 0), "block", {"zero"}, "a zero z dimension"},
    {dim3(0), dim3(256), "grid", {"zero"}, "a grid of no blocks"},
    {dim3(4, 0), dim3(256), "grid", {"zero"}, "a zero y dimension"},
    {dim3(1, 1, 0), dim3(32, 8), "grid", {"zero"}, "a zero z dimension"},
    {dim3(2147483648u), dim3(256), "grid", {"2147483648", "2147483647"},
     "grid.x is at most 2^31 - 1"},
    {dim3(4294967295u), dim3(1), "grid", {"4294967295", "2147483647"},
     "grid.x is at most 2^31 - 1"},
    {dim3(1, 65536), dim3(32, 8), "grid", {"65536", "65535"}, "grid.y is at most 65535"},
    {dim3(1, 1, 65536), dim3(32, 8), "grid", {"65536", "65535"}, "grid.z is at most 65535"},
};

KIT_TEST(BoundsHost, ValidateRejectsEachBrokenLimit, "bounds.4", host, 4,
         "validate_launch throws std::invalid_argument naming the value and the limit, e.g. "
         "\"block (2048,1,1) has 2048 threads; the limit is 1024\"") {
  for (const InvalidConfig& c : kInvalidConfigs) expect_rejected(c);
}

// Launches drawn from the seed, most of them at or next to a limit, checked against the grader's
// own rule: a validate_launch right only on the listed launches (a table of them) fails here.
KIT_TEST(BoundsHost, ValidateAgreesWithTheLimitsOnLaunchesFromTheSeed, "bounds.4", host, 2,
         "validate_launch accepts exactly the valid launches among 2000 drawn from the seed, "
         "most at a limit, one below or one above") {
  auto rng = kit::test_random();
  int wrong = 0;
  for (int i = 0; i < 2000 && wrong < 3; ++i) {
    dim3 grid(1, 1, 1), block(1, 1, 1);
    unsigned* dims[6] = {&grid.x, &grid.y, &grid.z, &block.x, &block.y, &block.z};
    const unsigned limits[6] = {lab02::kMaxGridDim[0],  lab02::kMaxGridDim[1],
                                lab02::kMaxGridDim[2],  lab02::kMaxBlockDim[0],
                                lab02::kMaxBlockDim[1], lab02::kMaxBlockDim[2]};
    for (int d = 0; d < 6; ++d)  // most launches vary one or two dimensions, the rest stay 1
      if (rng.uniform_int(0, 2) == 0) *dims[d] = lab02_grader::random_dimension(rng, limits[d]);
    const bool valid = lab02_grader::valid_launch(grid, block);
    std::string got = "accepted it";
    try {
      lab02::validate_launch(grid, block);
    } catch (const std::invalid_argument&) {
      got = "threw std::invalid_argument";
    } catch (const std::exception& e) {
      got = std::string("threw another exception (") + e.what() + ")";
    }
    if (got == (valid ? "accepted it" : "threw std::invalid_argument")) continue;
    ++wrong;
    ADD_FAILURE() << "launch " << i << " drawn from the seed: "
                  << lab02_grader::describe_config(grid, block) << " is "
                  << (valid ? "valid" : "invalid") << ", and validate_launch " << got
                  << "\n" << kit::seed_note();
  }
}

class LaunchConfig : public kit::GpuTest {};

KIT_TEST(LaunchConfig, InvalidConfigurationThrowsBeforeLaunching, "bounds.4", gpu, 2,
         "scale_shift_with_config throws std::invalid_argument for block (2048,1,1), block "
         "(32,32,2), block (1,1,128) and grid (0,1,1) without attempting the launch") {
  const unsigned n = 1000;
  const ScaleShiftCase c = make_scale_shift_case(n);
  kit::DeviceBuffer<float> d_in(c.in);
  kit::GuardedBuffer<float> d_out(n);
  const std::vector<Config> invalid = {{dim3(4), dim3(2048)},
                                       {dim3(1), dim3(32, 32, 2)},
                                       {dim3(8), dim3(1, 1, 128)},
                                       {dim3(0), dim3(256)}};
  for (const Config& config : invalid) {
    const std::string what = describe_config(config.grid, config.block);
    // Run in the worker, which reports what the student's code threw and the CUDA error it left
    // pending there (the judge's own cudaGetLastError() cannot see the worker's launches).
    const WithConfigOutcome outcome = lab02_probe::scale_shift_with_config_outcome(
        n, c.a, c.b, d_in.data(), d_out.data(), config.grid, config.block, 0);
    switch (outcome.ended) {
      case Ended::returned:
        ADD_FAILURE() << "scale_shift_with_config returned normally for " << what
                      << ": the GPU refused that launch, so nothing ran, and the caller was not "
                         "told";
        break;
      case Ended::invalid_argument:
        break;  // expected
      case Ended::cuda_error:
        ADD_FAILURE() << "scale_shift_with_config threw kit::CudaError for " << what << " ("
                      << outcome.what << "): the launch was attempted and refused by the GPU; "
                      << "validate_launch should have rejected it first, with "
                         "std::invalid_argument";
        break;
      case Ended::other_exception:
        ADD_FAILURE() << "scale_shift_with_config threw an unexpected exception for " << what
                      << ": " << outcome.what;
        break;
    }
    // Read (and so cleared) in the worker right after the call, for the next configuration.
    const cudaError_t pending = outcome.left_pending;
    EXPECT_EQ(pending, cudaSuccess)
        << "after " << what << " a refused launch left the error " << cudaGetErrorName(pending)
        << ": the launch was attempted before the configuration was checked";
  }
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  const auto out = d_out.download();
  std::size_t written = 0;
  for (const float x : out) written += !kit::is_poison(x);
  EXPECT_EQ(written, 0u) << "an invalid configuration must launch nothing, yet " << written
                         << " elements of the output were written";
}

KIT_TEST(LaunchConfig, ValidConfigurationRuns, "bounds.4", gpu, 2,
         "scale_shift_with_config runs valid configurations as given: 7 x 96, 1 x 1024 and "
         "4 x 256 threads for exactly as many elements") {
  for (const Config& config : {Config{dim3(7), dim3(96)}, Config{dim3(1), dim3(1024)},
                               Config{dim3(4), dim3(256)}}) {
    SCOPED_TRACE("scale_shift_with_config with " + describe_config(config.grid, config.block));
    kit::Launch used;
    check_scale_shift(
        [&](unsigned count, float a, float b, const float* in, float* out, cudaStream_t stream) {
          used = lab02::scale_shift_with_config(count, a, b, in, out, config.grid, config.block, 0,
                                                stream);
          return used;
        },
        config.grid.x * config.block.x);
    EXPECT_EQ(describe_config(used.grid, used.block), describe_config(config.grid, config.block))
        << "the launcher must return the configuration it launched";
  }
}

KIT_TEST(LaunchConfig, RefusedLaunchThrows, "bounds.4", gpu, 2,
         "scale_shift_with_config throws kit::CudaError when the GPU refuses a launch for a reason "
         "validate_launch does not check: 1 MiB of dynamic shared memory per block") {
  // compute-sanitizer reports every launch the GPU refuses as an error, this deliberate one too;
  // the test checks host-side error handling, which the sanitizer has nothing to add to.
  if (kit::under_compute_sanitizer())
    GTEST_SKIP() << "not run under compute-sanitizer: it makes the GPU refuse a launch on purpose";
  const unsigned n = 256;
  const ScaleShiftCase c = make_scale_shift_case(n);
  kit::DeviceBuffer<float> d_in(c.in);
  kit::GuardedBuffer<float> d_out(n);
  const std::size_t shared_bytes = 1 << 20;  // far above any GPU's shared memory per block
  // Run in the worker, which reports what the student's code threw and the CUDA error it left
  // pending there (the judge's own cudaGetLastError() cannot see the worker's launches, and
  // kit::CudaError would reach the judge as a plain std::runtime_error).
  const WithConfigOutcome outcome = lab02_probe::scale_shift_with_config_outcome(
      n, c.a, c.b, d_in.data(), d_out.data(), dim3(1), dim3(256), shared_bytes);
  switch (outcome.ended) {
    case Ended::returned:
      ADD_FAILURE() << "scale_shift_with_config returned normally, but the GPU refused the launch ("
                    << cudaGetErrorName(outcome.left_pending) << "): nothing ran and the caller "
                    << "was not told. A launch returns nothing; its result has to be asked for.";
      break;
    case Ended::cuda_error:
      break;  // expected: the launch check reported the refusal
    case Ended::invalid_argument:
      ADD_FAILURE() << "validate_launch rejected grid (1,1,1) x block (256,1,1), which is within "
                    << "every limit it checks: " << outcome.what;
      break;
    case Ended::other_exception:
      // Any other exception escaped this test before: it still ends it, with the same message.
      throw std::runtime_error(outcome.what);
  }
  const cudaError_t pending = outcome.left_pending;
  EXPECT_EQ(pending, cudaSuccess) << "the refused launch's error " << cudaGetErrorName(pending)
                                  << " was left behind, for the next CUDA call to report";
}

// ---- Step 5 ------------------------------------------------------------------------------------

// The kernels of steps 1 to 3 and of the performance step once more, under compute-sanitizer's
// memcheck (the runner runs this test under it), every input placed at the end of its allocation:
// a read past an input leaves the allocation, where memcheck reports it, instead of reading the
// slack of a 2 MiB page unseen. The guards see a write past the output; only memcheck sees a read.
// Sizes are whole multiples of 4 floats (an input placed at the end then starts aligned for
// float4 loads) and still leave partial blocks: 1000 elements in blocks of 256 (24 threads past
// the end), one block that loops 4 times, 1000 in the fast kernel's tiles of 1024; a 12 x 36
// matrix under blocks of 32 x 8 overhangs by 4 rows and 28 columns.
class BoundsMemcheck : public kit::GpuTest {};

KIT_TEST(BoundsMemcheck, NoKernelTouchesMemoryOutsideItsBuffers, "bounds.5", memcheck, 4,
         "under memcheck, scale_shift, rank1_update, scale_shift_grid_stride and scale_shift_fast "
         "read and write nothing outside their buffers (each input ends its allocation)") {
  constexpr unsigned n = 1000;
  constexpr auto kAtEnd = kit::Placement::end;
  {
    SCOPED_TRACE("scale_shift");
    check_scale_shift(
        [](unsigned count, float a, float b, const float* in, float* out, cudaStream_t stream) {
          return lab02::scale_shift(count, a, b, in, out, stream);
        },
        n, kAtEnd);
  }
  {
    SCOPED_TRACE("rank1_update, 12 x 36");
    check_rank1_update(12, 36, kAtEnd);
  }
  for (const unsigned blocks : {1u, 0u}) {
    SCOPED_TRACE("scale_shift_grid_stride with " + grid_name(blocks));
    check_grid_stride(n, blocks, kAtEnd);
  }
  {
    SCOPED_TRACE("scale_shift_fast");
    check_scale_shift(
        [](unsigned count, float a, float b, const float* in, float* out, cudaStream_t stream) {
          return lab02::scale_shift_fast(count, a, b, in, out, stream);
        },
        n, kAtEnd);
  }
}

// ---- Performance -------------------------------------------------------------------------------

class ScaleShiftFast : public kit::GpuTestWithParam<unsigned> {};

KIT_TEST_P(ScaleShiftFast, ComputesTheSameAsScaleShift, "bounds.perf", gpu, 1,
           "scale_shift_fast writes a*in+b to every element, none outside the output") {
  check_scale_shift(
      [](unsigned n, float a, float b, const float* in, float* out, cudaStream_t stream) {
        return lab02::scale_shift_fast(n, a, b, in, out, stream);
      },
      GetParam());
}

// Sizes that leave partial tiles for kernels that give a thread several elements, and one large
// enough that the default grid is capped and every thread loops.
INSTANTIATE_TEST_SUITE_P(Sizes, ScaleShiftFast,
                         ::testing::Values(1u, 33u, 1000u, 4097u, (1u << 20) + 7,
                                           (1u << 26) + 1),
                         size_name);

// scale_shift_fast at the top of the unsigned range: n = 2^32 - 1. A grid-stride loop whose index
// is 32 bits wide passes 2^32 - 1 on its last trip and wraps round to an element near the start:
// the loop never ends (or rewrites elements). Two arrays of 16 GiB, filled and checked here on the
// GPU (copying them to the host would take seconds). Kind `timed`: it runs alone, after the other
// correctness tests, since beside them (up to 16 at once, some of a GiB) its 32 GiB may not be free.
constexpr unsigned kTopN = 0xffffffffu;

// Counts the elements of out that are not a * in + b (within kScaleShiftTolerance), and keeps the
// first such index: the input is recomputed from its index, so `in` is not read (it could have
// been changed too: that shows as wrong outputs).
__global__ void count_top_wrong(const float* out, std::size_t n, float a, float b,
                                std::uint32_t seed, double tolerance, unsigned long long* wrong) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const double want = double(a) * kit::index_value(i, seed) + b;
    const double got = out[i];
    if (!(fabs(got - want) <= tolerance)) kit::note_wrong(wrong, i);  // NaN (the poison) too
  }
}

class ScaleShiftFastTop : public kit::GpuTest {};

KIT_TEST(ScaleShiftFastTop, IndexDoesNotWrapAtTheTopOfTheRange, "bounds.perf", timed, 1,
         "scale_shift_fast on n = 2^32 - 1 elements (two arrays of 16 GiB): every element once; "
         "a 32-bit index wraps on the loop's last trip") {
  const std::size_t n = kTopN;
  KIT_NEEDS_DEVICE_MEMORY(2 * n * sizeof(float));
  auto rng = kit::test_random();
  const float a = rng.uniform(-2, 2), b = rng.uniform(-1, 1);
  const auto seed = static_cast<std::uint32_t>(rng.next_u64());
  kit::DeviceBuffer<float> d_in(n), d_out(n);
  kit::fill_index_values(d_in.data(), n, seed);
  kit::poison_floats(d_out.data(), n);
  const kit::Launch launch = lab02::scale_shift_fast(kTopN, a, b, d_in.data(), d_out.data());
  const kit::WrongCount wrong = kit::count_wrong([&](unsigned long long* w) {
    count_top_wrong<<<kit::kHugeBlocks, kit::kHugeThreads>>>(d_out.data(), n, a, b, seed,
                                                             kScaleShiftTolerance.abs, w);
  });
  EXPECT_EQ(wrong.count, 0ull)
      << wrong.count << " of " << n << " elements wrong, the first at index " << wrong.first
      << " (launch: " << kit::describe_launch(launch) << ").\n"
      << "An index or stride kept in 32 bits (unsigned) passes 2^32 - 1 on the loop's last trip "
         "and wraps round: keep them in std::size_t.\n"
      << kit::seed_note();
}

using BoundsPerf = kit::PerfTest;

KIT_TEST(BoundsPerf, GridStrideRunsNearCopyBandwidth, "bounds.perf", perf, 10,
         "scale_shift_fast moves its bytes at a large fraction of the device copy bandwidth, "
         "same run") {
  // 2 x 256 MiB: more than 5 times the L2 cache of any current GPU, so every run streams from
  // device memory. The input is drawn and the output checked on the device (kit/device_check.h).
  const unsigned n = 1u << 26;
  auto rng = kit::test_random();
  float a = rng.uniform(-2, 2), b = rng.uniform(-1, 1);
  kit::DeviceBuffer<float> d_in(n), d_copy(n);
  auto d_expected = kit::DeviceBuffer<float>::judge_only(n);
  kit::Drawn in = kit::draw_floats(rng, d_in, -1, 1);
  kit::GuardedBuffer<float> d_out(n);

  // The timed kernel must compute the right thing at this size too, before and after timing (on
  // fresh inputs after, so a kernel that skips or caches work is caught).
  auto check = [&](const char* when) {
    scale_shift_expected_on_device(n, a, b, in, d_in, d_expected, rng);
    d_out.poison();
    const kit::Launch launch = lab02::scale_shift_fast(n, a, b, d_in.data(), d_out.data());
    KIT_CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(kit::output_matches(std::string("out (") + when + ")", d_expected, d_out,
                                    kScaleShiftTolerance, kit::Shape::d1(n), launch));
  };
  check("before timing");
  if (HasFailure()) return;

  // One float read and one written per element, against a copy of the same 256 MiB (counted the
  // same way: bytes read plus bytes written).
  const kit::Timed student{"scale_shift_fast", 2.0 * sizeof(float) * n, [&](cudaStream_t stream) {
                             lab02::scale_shift_fast(n, a, b, d_in.data(), d_out.data(), stream);
                           }};
  expect_ratio_at_least(student, kit::device_copy_ceiling(d_in.data(), d_copy.data(), n * 4ull),
                        "bounds.grid_stride_vs_device_copy", "GB/s", 1e-9);

  // Every input drawn again: the expected values come from the inputs as drawn, before the call,
  // so no state a timed call left behind (in its input or elsewhere) can match them.
  a = rng.uniform(-2, 2);
  b = rng.uniform(-1, 1);
  in = kit::draw_floats(rng, d_in, -1, 1);
  check("after timing, fresh inputs");
}

}  // namespace
