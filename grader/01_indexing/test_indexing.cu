// Grader of lab 01, thread indexing.
//
//   python3 grader/kit.py grade 01          every test, each in its own process, with a score
//   build/bin/grade_01_indexing             the same tests in one process (quick, no score)
//   KIT_SEED=1234 build/bin/grade_01_indexing --gtest_filter='*Saxpy*'   replay one failure
//
// Steps: 1 one-dimensional index and grid size, 2 rows and columns, 3 volumes, 4 warps inside a
// block, perf saxpy against the device copy bandwidth. The index helpers are plain host code too,
// so steps 1-4 are partly graded without a GPU.
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "indexing.h"
#include "kit/check.h"
#include "kit/device_check.h"
#include "kit/remote.h"
#include "remote.h"
#include "kit/test.h"

namespace {

using kit::Tolerance;

// Inputs are uniform in [-1, 1] (a in [-2, 2]); outputs are at most 4 in magnitude, where one
// float rounding is at most 2^-22 ~ 2.4e-7. The kernels do 1 to 3 roundings (a fused multiply-add
// does one), so 1e-6 admits any order of the additions while an element taken from the wrong
// place is off by ~0.5 on average.
const Tolerance kSumTolerance{1e-6, 0.0,
                              "sums of up to four values in [-1, 1]: at most 3 roundings of "
                              "2.4e-7 in any order of addition"};

using IndexingHost = kit::HostTest;

// ---- Step 1 ------------------------------------------------------------------------------------

KIT_TEST(IndexingHost, GridSizeRoundsUp, "indexing.1", host, 2,
         "grid_size_1d rounds up: 1000 elements in blocks of 256 need 4 blocks") {
  EXPECT_EQ(lab01::grid_size_1d(1000, 256), 4u) << "1000 elements, blocks of 256";
  EXPECT_EQ(4u * 256u - 1000u, 24u);  // the idle threads of the worked example
  EXPECT_EQ(lab01::grid_size_1d(10000, 256), 40u) << "10000 elements, blocks of 256";
  EXPECT_EQ(lab01::grid_size_1d(256, 256), 1u) << "an exact multiple needs no extra block";
  EXPECT_EQ(lab01::grid_size_1d(257, 256), 2u) << "one element over needs one more block";
  EXPECT_EQ(lab01::grid_size_1d(1, 1024), 1u) << "one element still needs a block";
  auto rng = kit::test_random();
  for (int i = 0; i < 1000; ++i) {
    const auto n = static_cast<unsigned>(rng.uniform_int(1, 1 << 30));
    const auto block = static_cast<unsigned>(rng.uniform_int(1, 1024));
    const unsigned want = n / block + (n % block != 0);
    ASSERT_EQ(lab01::grid_size_1d(n, block), want)
        << "grid_size_1d(" << n << ", " << block << ")\n" << kit::seed_note();
  }
}

KIT_TEST(IndexingHost, GlobalIndexSkipsEarlierBlocks, "indexing.1", host, 2,
         "global_index_1d: thread 77 of block 12 (blocks of 256) is element 3149") {
  EXPECT_EQ(lab01::global_index_1d(make_uint3(12, 0, 0), dim3(256), make_uint3(77, 0, 0)), 3149u);
  EXPECT_EQ(lab01::global_index_1d(make_uint3(1, 0, 0), dim3(256), make_uint3(44, 0, 0)), 300u);
  EXPECT_EQ(lab01::global_index_1d(make_uint3(0, 0, 0), dim3(256), make_uint3(0, 0, 0)), 0u);
  auto rng = kit::test_random();
  for (int i = 0; i < 1000; ++i) {
    const auto block = static_cast<unsigned>(rng.uniform_int(1, 1024));
    const auto b = static_cast<unsigned>(rng.uniform_int(0, 100000));
    const auto t = static_cast<unsigned>(rng.uniform_int(0, block - 1));
    ASSERT_EQ(lab01::global_index_1d(make_uint3(b, 0, 0), dim3(block), make_uint3(t, 0, 0)),
              b * block + t)
        << "block " << b << ", thread " << t << ", blockDim " << block << "\n" << kit::seed_note();
  }
}

// Sizes around the block size, and one large odd size, as readable test names.
std::string size_name(const ::testing::TestParamInfo<unsigned>& info) {
  return "n_" + std::to_string(info.param);
}

// Runs one saxpy launcher on fresh inputs of size n and checks every element, the guards and the
// inputs. `saxpy_fn` is lab01::saxpy or lab01::saxpy_fast; `inputs` places x and y at the start
// or at the end of their allocations (the memcheck step: a read past either leaves it).
template <class SaxpyFn>
void check_saxpy(SaxpyFn saxpy_fn, unsigned n, kit::Placement inputs = kit::Placement::start) {
  auto rng = kit::test_random();
  const float a = rng.uniform(-2, 2);
  const auto x = rng.floats(n, -1, 1), y = rng.floats(n, -1, 1);
  std::vector<float> expected(n);
  for (unsigned i = 0; i < n; ++i) expected[i] = static_cast<float>(double(a) * x[i] + y[i]);

  kit::DeviceBuffer<float> d_x(x, inputs), d_y(y, inputs);
  kit::GuardedBuffer<float> d_out(n);
  // The stream it is given is busy when it is called: its kernel must queue behind that work.
  kit::Launch launch;
  kit::remote::expect_queued_on_stream(
      d_out.data(), std::size_t{n} * sizeof(float), [&](cudaStream_t stream) {
        launch = saxpy_fn(n, a, d_x.data(), d_y.data(), d_out.data(), stream);
      });
  EXPECT_TRUE(kit::output_matches("out", expected, d_out, kSumTolerance, kit::Shape::d1(n), launch));
  EXPECT_TRUE(kit::input_unchanged("x", d_x, x));
  EXPECT_TRUE(kit::input_unchanged("y", d_y, y));
}

class Saxpy : public kit::GpuTestWithParam<unsigned> {};

KIT_TEST_P(Saxpy, ComputesEveryElementAndNothingElse, "indexing.1", gpu, 1,
           "saxpy writes a*x+y to every element, none outside the output") {
  check_saxpy(lab01::saxpy, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Sizes, Saxpy, ::testing::Values(1u, 31u, 32u, 33u, 1000u, (1u << 20) + 7),
                         size_name);

// Sizes drawn from the seed, besides the listed ones: code that is right only at the sizes the
// tests name (a table of them, a grid sized for them) is wrong here, and each run draws others.
class SaxpyAnySize : public kit::GpuTest {};

KIT_TEST(SaxpyAnySize, ComputesEveryElementAtSizesFromTheSeed, "indexing.1", gpu, 1,
         "saxpy is right at three sizes drawn from the seed, not only at the listed ones") {
  auto rng = kit::test_random();
  for (int i = 0; i < 3; ++i) {
    const auto n = static_cast<unsigned>(rng.uniform_int(2, 1 << 18));
    SCOPED_TRACE("n = " + std::to_string(n) + ", drawn from the seed");
    check_saxpy(lab01::saxpy, n);
  }
}

// ---- Step 2 ------------------------------------------------------------------------------------

KIT_TEST(IndexingHost, FlattenIsRowMajor, "indexing.2", host, 2,
         "flatten_2d: (row, col) is row * cols + col, not row * rows + col") {
  EXPECT_EQ(lab01::flatten_2d(0, 0, 7), 0u);
  EXPECT_EQ(lab01::flatten_2d(0, 6, 7), 6u) << "row 0 of a 7-column matrix ends at 6";
  EXPECT_EQ(lab01::flatten_2d(1, 0, 7), 7u) << "row 1 starts after one row of 7 columns";
  EXPECT_EQ(lab01::flatten_2d(3, 2, 5), 17u);
  EXPECT_EQ(lab01::flatten_2d(70000, 5, 70000), 70000ull * 70000ull + 5) << "must not overflow 32 bits";
  auto rng = kit::test_random();  // and cases drawn from the seed, large ones included
  for (int i = 0; i < 1000; ++i) {
    const auto cols = static_cast<unsigned>(rng.uniform_int(1, i % 2 ? 100 : 1 << 20));
    const auto row = static_cast<unsigned>(rng.uniform_int(0, i % 2 ? 100 : 1 << 20));
    const auto col = static_cast<unsigned>(rng.uniform_int(0, cols - 1));
    ASSERT_EQ(lab01::flatten_2d(row, col, cols), std::size_t(row) * cols + col)
        << "flatten_2d(" << row << ", " << col << ", " << cols << "), drawn from the seed\n"
        << kit::seed_note();
  }
}

KIT_TEST(IndexingHost, GridSize2dPutsColumnsOnX, "indexing.2", host, 2,
         "grid_size_2d: x counts blocks across the columns, y down the rows, both rounded up") {
  const dim3 g = lab01::grid_size_2d(1000, 33, dim3(32, 8));
  EXPECT_EQ(g.x, 2u) << "33 columns in blocks 32 wide";
  EXPECT_EQ(g.y, 125u) << "1000 rows in blocks 8 tall";
  EXPECT_EQ(g.z, 1u);
  const dim3 h = lab01::grid_size_2d(1, 1, dim3(32, 8));
  EXPECT_EQ(h.x * h.y * h.z, 1u) << "a 1 x 1 matrix needs one block";
  auto rng = kit::test_random();  // and cases drawn from the seed
  for (int i = 0; i < 500; ++i) {
    const auto rows = static_cast<unsigned>(rng.uniform_int(1, 1 << 16));
    const auto cols = static_cast<unsigned>(rng.uniform_int(1, 1 << 16));
    const dim3 block(static_cast<unsigned>(rng.uniform_int(1, 64)),
                     static_cast<unsigned>(rng.uniform_int(1, 16)));
    const dim3 g = lab01::grid_size_2d(rows, cols, block);
    ASSERT_TRUE(g.x == (cols + block.x - 1) / block.x && g.y == (rows + block.y - 1) / block.y &&
                g.z == 1)
        << "grid_size_2d(" << rows << " rows, " << cols << " columns, block (" << block.x << ","
        << block.y << ")) gave (" << g.x << "," << g.y << "," << g.z << "), drawn from the seed\n"
        << kit::seed_note();
  }
}

struct Shape2 {
  unsigned rows, cols;
};

// Runs add_biases_2d on a fresh rows x cols matrix and checks every element, the guards and the
// input; `inputs` places the input and the biases as in check_saxpy.
void check_add_biases_2d(unsigned rows, unsigned cols,
                         kit::Placement inputs = kit::Placement::start) {
  auto rng = kit::test_random();
  const auto in = rng.floats(std::size_t(rows) * cols, -1, 1);
  const auto row_bias = rng.floats(rows, -1, 1), col_bias = rng.floats(cols, -1, 1);
  std::vector<float> expected(in.size());
  for (unsigned r = 0; r < rows; ++r)
    for (unsigned c = 0; c < cols; ++c) {
      const std::size_t i = std::size_t(r) * cols + c;
      expected[i] = static_cast<float>(double(in[i]) + row_bias[r] + col_bias[c]);
    }

  kit::DeviceBuffer<float> d_in(in, inputs), d_row(row_bias, inputs), d_col(col_bias, inputs);
  kit::GuardedBuffer<float> d_out(in.size());
  kit::Launch launch;
  kit::remote::expect_queued_on_stream(
      d_out.data(), in.size() * sizeof(float), [&](cudaStream_t stream) {
        launch = lab01::add_biases_2d(rows, cols, d_in.data(), d_row.data(), d_col.data(),
                                      d_out.data(), stream);
      });
  EXPECT_TRUE(kit::output_matches("out", expected, d_out, kSumTolerance, kit::Shape::d2(rows, cols),
                                  launch));
  EXPECT_TRUE(kit::input_unchanged("in", d_in, in));
}

class AddBiases2d : public kit::GpuTestWithParam<Shape2> {};

KIT_TEST_P(AddBiases2d, AddsTheRightRowAndColumnBias, "indexing.2", gpu, 1,
           "add_biases_2d pairs each element with its own row and column bias") {
  check_add_biases_2d(GetParam().rows, GetParam().cols);
}

INSTANTIATE_TEST_SUITE_P(Shapes, AddBiases2d,
                         ::testing::Values(Shape2{1, 1}, Shape2{1, 1000}, Shape2{1000, 1},
                                           Shape2{31, 33}, Shape2{33, 31}, Shape2{257, 1031}),
                         [](const ::testing::TestParamInfo<Shape2>& info) {
                           return std::to_string(info.param.rows) + "x" +
                                  std::to_string(info.param.cols);
                         });

// ---- Step 3 ------------------------------------------------------------------------------------

KIT_TEST(IndexingHost, Flatten3dStacksPlanes, "indexing.3", host, 2,
         "flatten_3d: (z, y, x) is (z * rows + y) * cols + x") {
  EXPECT_EQ(lab01::flatten_3d(0, 0, 4, 3, 5), 4u);
  EXPECT_EQ(lab01::flatten_3d(0, 1, 0, 3, 5), 5u) << "one row of 5 columns precedes row 1";
  EXPECT_EQ(lab01::flatten_3d(1, 0, 0, 3, 5), 15u) << "one plane of 3 x 5 precedes plane 1";
  EXPECT_EQ(lab01::flatten_3d(2, 1, 3, 3, 5), 38u);
  EXPECT_EQ(lab01::flatten_3d(2000, 0, 0, 2000, 2000), 8000000000ull) << "must not overflow 32 bits";
  auto rng = kit::test_random();  // and cases drawn from the seed
  for (int i = 0; i < 1000; ++i) {
    const auto rows = static_cast<unsigned>(rng.uniform_int(1, 3000));
    const auto cols = static_cast<unsigned>(rng.uniform_int(1, 3000));
    const auto z = static_cast<unsigned>(rng.uniform_int(0, 3000));
    const auto y = static_cast<unsigned>(rng.uniform_int(0, rows - 1));
    const auto x = static_cast<unsigned>(rng.uniform_int(0, cols - 1));
    ASSERT_EQ(lab01::flatten_3d(z, y, x, rows, cols), (std::size_t(z) * rows + y) * cols + x)
        << "flatten_3d(" << z << ", " << y << ", " << x << ", " << rows << ", " << cols
        << "), drawn from the seed\n" << kit::seed_note();
  }
}

KIT_TEST(IndexingHost, GridSize3dRoundsUpEachAxis, "indexing.3", host, 1,
         "grid_size_3d: one rounded-up block count per axis (x columns, y rows, z depth)") {
  const dim3 g = lab01::grid_size_3d(9, 17, 65, dim3(32, 4, 2));
  EXPECT_EQ(g.x, 3u) << "65 columns, blocks 32 wide";
  EXPECT_EQ(g.y, 5u) << "17 rows, blocks 4 tall";
  EXPECT_EQ(g.z, 5u) << "9 planes, blocks 2 deep";
  auto rng = kit::test_random();  // and cases drawn from the seed
  for (int i = 0; i < 500; ++i) {
    const auto depth = static_cast<unsigned>(rng.uniform_int(1, 4096));
    const auto rows = static_cast<unsigned>(rng.uniform_int(1, 4096));
    const auto cols = static_cast<unsigned>(rng.uniform_int(1, 4096));
    const dim3 b(static_cast<unsigned>(rng.uniform_int(1, 64)),
                 static_cast<unsigned>(rng.uniform_int(1, 16)),
                 static_cast<unsigned>(rng.uniform_int(1, 4)));
    const dim3 h = lab01::grid_size_3d(depth, rows, cols, b);
    ASSERT_TRUE(h.x == (cols + b.x - 1) / b.x && h.y == (rows + b.y - 1) / b.y &&
                h.z == (depth + b.z - 1) / b.z)
        << "grid_size_3d(" << depth << " planes, " << rows << " rows, " << cols
        << " columns, block (" << b.x << "," << b.y << "," << b.z << ")) gave (" << h.x << ","
        << h.y << "," << h.z << "), drawn from the seed\n" << kit::seed_note();
  }
}

struct Shape3 {
  unsigned depth, rows, cols;
};

// Runs add_biases_3d on a fresh depth x rows x cols volume and checks every element, the guards
// and the input; `inputs` places the input and the biases as in check_saxpy.
void check_add_biases_3d(unsigned depth, unsigned rows, unsigned cols,
                         kit::Placement inputs = kit::Placement::start) {
  auto rng = kit::test_random();
  const auto in = rng.floats(std::size_t(depth) * rows * cols, -1, 1);
  const auto zb = rng.floats(depth, -1, 1), yb = rng.floats(rows, -1, 1), xb = rng.floats(cols, -1, 1);
  std::vector<float> expected(in.size());
  for (unsigned z = 0; z < depth; ++z)
    for (unsigned y = 0; y < rows; ++y)
      for (unsigned x = 0; x < cols; ++x) {
        const std::size_t i = (std::size_t(z) * rows + y) * cols + x;
        expected[i] = static_cast<float>(double(in[i]) + zb[z] + yb[y] + xb[x]);
      }

  kit::DeviceBuffer<float> d_in(in, inputs), d_z(zb, inputs), d_y(yb, inputs), d_x(xb, inputs);
  kit::GuardedBuffer<float> d_out(in.size());
  kit::Launch launch;
  kit::remote::expect_queued_on_stream(
      d_out.data(), in.size() * sizeof(float), [&](cudaStream_t stream) {
        launch = lab01::add_biases_3d(depth, rows, cols, d_in.data(), d_z.data(), d_y.data(),
                                      d_x.data(), d_out.data(), stream);
      });
  EXPECT_TRUE(kit::output_matches("out", expected, d_out, kSumTolerance,
                                  kit::Shape::d3(depth, rows, cols), launch));
  EXPECT_TRUE(kit::input_unchanged("in", d_in, in));
}

class AddBiases3d : public kit::GpuTestWithParam<Shape3> {};

KIT_TEST_P(AddBiases3d, AddsTheRightBiasOnEveryAxis, "indexing.3", gpu, 1,
           "add_biases_3d pairs each element with its own z, y and x bias") {
  check_add_biases_3d(GetParam().depth, GetParam().rows, GetParam().cols);
}

INSTANTIATE_TEST_SUITE_P(Shapes, AddBiases3d,
                         ::testing::Values(Shape3{1, 1, 1}, Shape3{3, 6, 7}, Shape3{7, 5, 3},
                                           Shape3{17, 31, 65}, Shape3{64, 1, 129}),
                         [](const ::testing::TestParamInfo<Shape3>& info) {
                           return std::to_string(info.param.depth) + "x" +
                                  std::to_string(info.param.rows) + "x" +
                                  std::to_string(info.param.cols);
                         });

// ---- Step 4 ------------------------------------------------------------------------------------

const std::vector<dim3> kBlockShapes = {dim3(32, 1, 1), dim3(16, 4, 1), dim3(8, 8, 2),
                                        dim3(5, 7, 3),  dim3(33, 3, 1), dim3(1, 32, 2),
                                        dim3(1024, 1, 1), dim3(2, 2, 64)};

KIT_TEST(IndexingHost, LinearIndexRunsXFastestThenYThenZ, "indexing.4", host, 2,
         "linear_thread_index orders a block x fastest, then y, then z") {
  EXPECT_EQ(lab01::linear_thread_index(make_uint3(5, 1, 0), dim3(16, 4, 1)), 21u)
      << "thread (5,1,0) of a 16x4 block: one row of 16 before it, then 5";
  EXPECT_EQ(lab01::linear_thread_index(make_uint3(1, 2, 1), dim3(4, 3, 2)), 21u)
      << "thread (1,2,1) of a 4x3x2 block: a 12-thread plane, two rows of 4, then 1";
  for (const dim3& b : kBlockShapes) {
    unsigned expected = 0;
    for (unsigned z = 0; z < b.z; ++z)
      for (unsigned y = 0; y < b.y; ++y)
        for (unsigned x = 0; x < b.x; ++x, ++expected)
          ASSERT_EQ(lab01::linear_thread_index(make_uint3(x, y, z), b), expected)
              << "thread (" << x << "," << y << "," << z << ") of a (" << b.x << "," << b.y << ","
              << b.z << ") block";
  }
}

KIT_TEST(IndexingHost, WarpAndLaneCutTheLinearOrderIn32s, "indexing.4", host, 2,
         "warp_index and lane_index: thread (5,1,0) of a 16x4 block is warp 0, lane 21") {
  EXPECT_EQ(lab01::warp_index(make_uint3(5, 1, 0), dim3(16, 4, 1)), 0u);
  EXPECT_EQ(lab01::lane_index(make_uint3(5, 1, 0), dim3(16, 4, 1)), 21u);
  EXPECT_EQ(lab01::warp_index(make_uint3(0, 2, 0), dim3(16, 4, 1)), 1u) << "row 2 starts warp 1";
  EXPECT_EQ(lab01::lane_index(make_uint3(0, 2, 0), dim3(16, 4, 1)), 0u);
  EXPECT_EQ(lab01::warp_index(make_uint3(4, 0, 0), dim3(100, 1, 1)), 0u);
  EXPECT_EQ(lab01::warp_index(make_uint3(99, 0, 0), dim3(100, 1, 1)), 3u)
      << "a block of 100 has a fourth, partial warp";
  EXPECT_EQ(lab01::lane_index(make_uint3(99, 0, 0), dim3(100, 1, 1)), 3u);
  auto rng = kit::test_random();  // and threads of blocks drawn from the seed
  for (int i = 0; i < 1000; ++i) {
    const dim3 b(static_cast<unsigned>(rng.uniform_int(1, 64)),
                 static_cast<unsigned>(rng.uniform_int(1, 16)),
                 static_cast<unsigned>(rng.uniform_int(1, 4)));
    const uint3 t = make_uint3(static_cast<unsigned>(rng.uniform_int(0, b.x - 1)),
                               static_cast<unsigned>(rng.uniform_int(0, b.y - 1)),
                               static_cast<unsigned>(rng.uniform_int(0, b.z - 1)));
    const unsigned linear = t.x + t.y * b.x + t.z * b.x * b.y;
    const unsigned warp = lab01::warp_index(t, b), lane = lab01::lane_index(t, b);
    ASSERT_TRUE(warp == linear / 32 && lane == linear % 32)
        << "thread (" << t.x << "," << t.y << "," << t.z << ") of a (" << b.x << "," << b.y << ","
        << b.z << ") block is thread " << linear << " in x-fastest order: warp " << linear / 32
        << ", lane " << linear % 32 << "; you said warp " << warp << ", lane " << lane
        << " (drawn from the seed)\n" << kit::seed_note();
  }
}

// Records, for every thread of one block, what the hardware did: its lane register, and (through
// a shuffle from lane 0) which thread leads its warp. What the student's functions say about the
// same threads is recorded by the worker (probes.cu), where the student's code runs.
__global__ void observe_warps_kernel(unsigned* hw_lane, unsigned* hw_leader) {
  // The slot is only where results are stored; the verdict compares against the hardware.
  const unsigned slot = threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  hw_lane[slot] = lane;
  hw_leader[slot] = __shfl_sync(__activemask(), slot, 0);
}

class WarpLayout : public kit::GpuTestWithParam<dim3> {};

KIT_TEST_P(WarpLayout, MatchesWhatTheHardwareDoes, "indexing.4", gpu, 1,
           "warp_index and lane_index agree with the warps the hardware forms") {
  const dim3 block = GetParam();
  const unsigned threads = block.x * block.y * block.z;
  kit::DeviceBuffer<unsigned> said_warp(threads), said_lane(threads), hw_lane(threads),
      hw_leader(threads);
  observe_warps_kernel<<<1, block>>>(hw_lane.data(), hw_leader.data());
  KIT_CHECK_LAUNCH("observe_warps_kernel");
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  lab01_probe::record_said_warps(block, said_warp.data(), said_lane.data());
  const auto warp = said_warp.download(), lane = said_lane.download(), hw_l = hw_lane.download(),
             leader = hw_leader.download();

  // Hardware warps in order of their lowest thread: that order is the warp number.
  std::map<unsigned, unsigned> warp_of_leader;
  for (unsigned s = 0; s < threads; ++s) warp_of_leader.emplace(leader[s], 0);
  unsigned next = 0;
  for (auto& entry : warp_of_leader) entry.second = next++;

  std::ostringstream errors;
  int shown = 0, wrong = 0;
  for (unsigned s = 0; s < threads; ++s) {
    const unsigned hw_warp = warp_of_leader[leader[s]];
    if (warp[s] == hw_warp && lane[s] == hw_l[s]) continue;
    ++wrong;
    if (shown++ < 5) {
      const unsigned x = s % block.x, y = (s / block.x) % block.y, z = s / (block.x * block.y);
      errors << "  thread (" << x << "," << y << "," << z << "): you said warp " << warp[s]
             << " lane " << lane[s] << "; the hardware ran it in warp " << hw_warp << " as lane "
             << hw_l[s] << "\n";
    }
  }
  EXPECT_EQ(wrong, 0) << wrong << " of " << threads << " threads of a (" << block.x << ","
                      << block.y << "," << block.z << ") block are placed wrongly:\n"
                      << errors.str();
}

INSTANTIATE_TEST_SUITE_P(Blocks, WarpLayout, ::testing::ValuesIn(kBlockShapes),
                         [](const ::testing::TestParamInfo<dim3>& info) {
                           return std::to_string(info.param.x) + "x" + std::to_string(info.param.y) +
                                  "x" + std::to_string(info.param.z);
                         });

// ---- Step 5: the kernels under memcheck ---------------------------------------------------------

class IndexingMemcheck : public kit::GpuTest {};

KIT_TEST(IndexingMemcheck, NoKernelTouchesMemoryOutsideItsBuffers, "indexing.5", memcheck, 4,
         "under memcheck, saxpy, add_biases_2d, add_biases_3d and saxpy_fast read and write "
         "nothing outside their buffers (each input ends its allocation)") {
  // Sizes whose inputs are whole multiples of 16 bytes (kit::Placement::end), with threads left
  // over in the last block of every axis; saxpy's is none of the sizes step 1 lists.
  constexpr auto kAtEnd = kit::Placement::end;
  {
    SCOPED_TRACE("saxpy, n = 1028");
    check_saxpy(lab01::saxpy, 1028, kAtEnd);
  }
  {
    SCOPED_TRACE("add_biases_2d, 12 x 36");
    check_add_biases_2d(12, 36, kAtEnd);
  }
  {
    SCOPED_TRACE("add_biases_3d, 4 x 8 x 12");
    check_add_biases_3d(4, 8, 12, kAtEnd);
  }
  for (const unsigned n : {1000u, 4100u}) {
    SCOPED_TRACE("saxpy_fast, n = " + std::to_string(n));
    check_saxpy(lab01::saxpy_fast, n, kAtEnd);
  }
}

// ---- Performance -------------------------------------------------------------------------------

class SaxpyFast : public kit::GpuTestWithParam<unsigned> {};

KIT_TEST_P(SaxpyFast, ComputesTheSameAsSaxpy, "indexing.perf", gpu, 1,
           "saxpy_fast writes a*x+y to every element, none outside the output") {
  check_saxpy(lab01::saxpy_fast, GetParam());
}

// Sizes that leave partial tiles for kernels that give a thread several elements.
INSTANTIATE_TEST_SUITE_P(Sizes, SaxpyFast,
                         ::testing::Values(1u, 33u, 1000u, 4097u, (1u << 20) + 7, 3u * (1u << 20) + 5),
                         size_name);

using IndexingPerf = kit::PerfTest;

// The expected a*x+y of the perf test, computed by the grader on the device as the CPU does (in
// double, rounded once to float; no fused multiply-add).
__global__ void grader_saxpy_expected(unsigned n, float a, const float* x, const float* y,
                                      float* out) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = static_cast<float>(__dadd_rn(__dmul_rn(double(a), double(x[i])), double(y[i])));
}

KIT_TEST(IndexingPerf, SaxpyFastRunsNearCopyBandwidth, "indexing.perf", perf, 10,
         "saxpy_fast moves its bytes at a large fraction of the device copy bandwidth, same run") {
  // 3 x 256 MiB: far larger than any L2, so every run streams from device memory. Inputs are drawn
  // and the output checked on the device (kit/device_check.h).
  const unsigned n = 1u << 26;
  auto rng = kit::test_random();
  auto a = rng.uniform(-2, 2);
  kit::DeviceBuffer<float> d_x(n), d_y(n), d_copy(n);
  auto d_expected = kit::DeviceBuffer<float>::judge_only(n);
  kit::Drawn x = kit::draw_floats(rng, d_x, -1, 1);
  kit::Drawn y = kit::draw_floats(rng, d_y, -1, 1);
  kit::GuardedBuffer<float> d_out(n);

  // The timed kernel must compute the right thing at this size too, before and after timing (on
  // fresh inputs after, so a kernel that skips or caches work is caught).
  auto check = [&](const char* when) {
    grader_saxpy_expected<<<kit::kDeviceCheckBlocks, kit::kDeviceCheckThreads>>>(
        n, a, d_x.data(), d_y.data(), d_expected.data());
    KIT_CHECK_LAUNCH("grader_saxpy_expected");
    kit::spot_check(d_expected, rng, [&](std::size_t i) {
      return static_cast<float>(double(a) * x.at(i) + y.at(i));
    });
    d_out.poison();
    const kit::Launch launch = lab01::saxpy_fast(n, a, d_x.data(), d_y.data(), d_out.data());
    KIT_CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(kit::output_matches(std::string("out (") + when + ")", d_expected, d_out,
                                    kSumTolerance, kit::Shape::d1(n), launch));
  };
  check("before timing");
  if (HasFailure()) return;

  const kit::Timed student{"saxpy_fast", 3.0 * sizeof(float) * n, [&](cudaStream_t stream) {
                             lab01::saxpy_fast(n, a, d_x.data(), d_y.data(), d_out.data(), stream);
                           }};
  expect_ratio_at_least(student, kit::device_copy_ceiling(d_x.data(), d_copy.data(), n * 4ull),
                        "indexing.saxpy_vs_device_copy", "GB/s", 1e-9);

  // Every input drawn again: the expected values come from the inputs as drawn, before the call,
  // so no state a timed call left behind (in its inputs or elsewhere) can match them.
  a = rng.uniform(-2, 2);
  x = kit::draw_floats(rng, d_x, -1, 1);
  y = kit::draw_floats(rng, d_y, -1, 1);
  check("after timing, fresh inputs");
}

}  // namespace
