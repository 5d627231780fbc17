// Grader of lab 03, memory coalescing: steps 2 (the thread mapping of a matrix multiply), 3
// (transpose: naive, shared-memory tile, padded tile) and 4 (the kernels under memcheck), and
// the perf tests. Step 1 and how the tests work are in test_coalescing.cu; what both files use
// is in coalescing_checks.h.

#include "coalescing_checks.h"

namespace {

using namespace lab03_judge;

// ---- Arrays of more than 2^32 elements: the checks of steps 2 and 3 (see test_coalescing.cu) ----

// C (m x n) of A (m x 1) times B (1 x n): C(r, c) = a(r) b(c), one rounding of the product.
__global__ void check_huge_outer(const float* c, unsigned m, unsigned n, std::uint32_t seed_a,
                                 std::uint32_t seed_b, unsigned long long* wrong) {
  const std::size_t total = std::size_t{m} * n;
  for (std::size_t j = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; j < total;
       j += std::size_t{gridDim.x} * blockDim.x) {
    const float want = kit::index_value(j / n, seed_a) * kit::index_value(j % n, seed_b);
    if (!(c[j] == want)) kit::note_wrong(wrong, j);
  }
}

// C (1 x n) of A (1 x k) times B (k x n) where A is 1/4 at 0, 1 at k - 1 and 0 elsewhere:
// C(0, c) = b(0, c) / 4 + b(k - 1, c), exact in float whatever the order of the sum.
__global__ void check_huge_deep(const float* c, unsigned n, unsigned k, std::uint32_t seed_b,
                                unsigned long long* wrong) {
  for (std::size_t col = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; col < n;
       col += std::size_t{gridDim.x} * blockDim.x) {
    const float want = 0.25f * kit::index_value(col, seed_b) +
                       kit::index_value(std::size_t{k - 1} * n + col, seed_b);
    if (!(c[col] == want)) kit::note_wrong(wrong, col);
  }
}

// C (m x 1) of A (m x k) times B (k x 1) where B is 1/4 at 0, 1 at k - 1 and 0 elsewhere:
// C(r, 0) = a(r, 0) / 4 + a(r, k - 1), exact in float whatever the order of the sum.
__global__ void check_huge_rows(const float* c, unsigned m, unsigned k, std::uint32_t seed_a,
                                unsigned long long* wrong) {
  for (std::size_t row = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; row < m;
       row += std::size_t{gridDim.x} * blockDim.x) {
    const float want = 0.25f * kit::index_value(row * k, seed_a) +
                       kit::index_value(row * k + k - 1, seed_a);
    if (!(c[row] == want)) kit::note_wrong(wrong, row);
  }
}

// out (cols x rows) must be the transpose of an input (rows x cols) filled with index_value.
__global__ void check_huge_transpose(const float* out, unsigned rows, unsigned cols,
                                     std::uint32_t seed, unsigned long long* wrong) {
  const std::size_t total = std::size_t{rows} * cols;
  for (std::size_t j = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; j < total;
       j += std::size_t{gridDim.x} * blockDim.x) {
    const std::size_t out_row = j / rows, out_col = j % rows;  // in(out_col, out_row)
    if (!(out[j] == kit::index_value(out_col * cols + out_row, seed))) kit::note_wrong(wrong, j);
  }
}

// ---- Step 2: the thread mapping of a matrix multiply -------------------------------------------

KIT_TEST(CoalescingHost, MatmulElementTakesTheColumnFromX, "coalescing.2", host, 2,
         "matmul_element: thread (5,3,0) of block (2,1,0), blocks of 32 x 8, computes C(11, 69)") {
  const dim3 block = lab03::matmul_block();
  const MatIndex e = lab03::matmul_element(make_uint3(2, 1, 0), block, make_uint3(5, 3, 0));
  EXPECT_EQ(e.row, 11u) << "row = blockIdx.y * 8 + threadIdx.y = 1 * 8 + 3";
  EXPECT_EQ(e.col, 69u) << "col = blockIdx.x * 32 + threadIdx.x = 2 * 32 + 5";
  const MatIndex first = lab03::matmul_element(make_uint3(0, 0, 0), block, make_uint3(0, 0, 0));
  EXPECT_TRUE(first.row == 0 && first.col == 0) << "thread (0,0,0) of block (0,0,0) computes C(0, 0)";
}

KIT_TEST(CoalescingHost, MatmulGridCoversEveryElementOnce, "coalescing.2", host, 2,
         "matmul_grid and matmul_element give each element of C one thread (1000x1100, 33x65, 1x1)") {
  struct Mn { unsigned m, n; };
  for (const Mn& s : {Mn{1000, 1100}, Mn{33, 65}, Mn{1, 1}, Mn{1, 1000}, Mn{1000, 1}}) {
    const kit::Launch launch = lab03::matmul_config(s.m, s.n);
    ASSERT_GT(launch.grid.x * launch.grid.y * launch.grid.z, 0u)
        << "matmul_grid(" << s.m << ", " << s.n << ") has a zero component";
    std::vector<int> count(std::size_t(s.m) * s.n, 0);
    // What matmul_element says for every thread of the grid (bz, by, bx, tz, ty, tx order), asked
    // of the worker a slice of blocks at a time (one remote call per thread would take minutes).
    const std::uint64_t blocks = std::uint64_t(launch.grid.x) * launch.grid.y * launch.grid.z;
    const std::uint64_t kSlice = 4096;
    for (std::uint64_t first = 0; first < blocks; first += kSlice)
      for (const MatIndex& e : lab03_probe::matmul_elements(launch.grid, launch.block, first, kSlice))
        if (e.row < s.m && e.col < s.n) ++count[std::size_t(e.row) * s.n + e.col];
    const auto none = std::count(count.begin(), count.end(), 0);
    const auto several = std::count_if(count.begin(), count.end(), [](int c) { return c > 1; });
    const auto first_none = std::find(count.begin(), count.end(), 0) - count.begin();
    EXPECT_TRUE(none == 0 && several == 0)
        << "C is " << s.m << " x " << s.n << ", grid " << kit::describe_launch(launch) << ": "
        << none << " elements get no thread, " << several << " get several"
        << (none ? "; first without a thread: (row " + std::to_string(first_none / s.n) + ", col " +
                       std::to_string(first_none % s.n) + ")"
                 : std::string());
  }
}

// The model's matrices: 1024 x 1024 x 1024, so every row starts on a 128-byte boundary and every
// sampled warp is full.
constexpr unsigned kModelSize = 1024;

// Samples of one access of the matmul at loop step `i` (0 .. k-1) under the student's mapping.
template <class IndexFn>
std::vector<WarpSample> matmul_samples(IndexFn index) {
  const unsigned s = kModelSize;
  const kit::Launch launch = lab03::matmul_config(s, s);
  std::vector<WarpSample> all;
  for (unsigned i : {0u, 1u, 517u}) {
    auto part = sample_warps(launch, kArrayBase, [&](am::Coord b, am::Coord t) -> Index {
      const MatIndex e = lab03::matmul_element(as_uint3(b), launch.block, as_uint3(t));
      if (e.row >= s || e.col >= s) return std::nullopt;
      return index(e, i);
    });
    for (auto& p : part) p.where += " at loop step " + std::to_string(i);
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

KIT_TEST(CoalescingHost, ModelMatmulStoreOfCIsCoalesced, "coalescing.2", host, 2,
         "model: a warp of matmul_kernel stores 32 neighbouring elements of C (4 sectors, not 32)") {
  const std::uint64_t n = kModelSize;
  EXPECT_TRUE(global_access("the store of C[row * n + col] (1024^3)",
                            matmul_samples([&](MatIndex e, unsigned) { return e.row * n + e.col; }),
                            kCoalesced));
}

KIT_TEST(CoalescingHost, ModelMatmulLoadOfBIsCoalesced, "coalescing.2", host, 2,
         "model: a warp of matmul_kernel loads 32 neighbouring elements of B per step (4 sectors)") {
  const std::uint64_t n = kModelSize;
  EXPECT_TRUE(global_access("the load of B[i * n + col] (1024^3)",
                            matmul_samples([&](MatIndex e, unsigned i) { return i * n + e.col; }),
                            kCoalesced));
}

KIT_TEST(CoalescingHost, ModelMatmulLoadOfAIsABroadcast, "coalescing.2", host, 1,
         "model: the 32 lanes of a warp of matmul_kernel share one element of A per step (1 sector)") {
  const std::uint64_t k = kModelSize;
  EXPECT_TRUE(global_access("the load of A[row * k + i] (1024^3)",
                            matmul_samples([&](MatIndex e, unsigned i) { return e.row * k + i; }),
                            kBroadcast));
}

struct Mnk {
  unsigned m, n, k;
};

// C = A B for A m x k and B k x n, row-major, in double; `abs_sum` gets sum |a_ij b_jl| per element.
void reference_matmul(const Mnk& s, const std::vector<float>& a, const std::vector<float>& b,
                      std::vector<double>& c, std::vector<double>& abs_sum) {
  c.assign(std::size_t(s.m) * s.n, 0.0);
  abs_sum.assign(c.size(), 0.0);
  for (unsigned r = 0; r < s.m; ++r)
    for (unsigned i = 0; i < s.k; ++i) {
      const double av = a[std::size_t(r) * s.k + i];
      const float* brow = &b[std::size_t(i) * s.n];
      double* crow = &c[std::size_t(r) * s.n];
      double* srow = &abs_sum[std::size_t(r) * s.n];
      for (unsigned col = 0; col < s.n; ++col) {
        crow[col] += av * brow[col];
        srow[col] += std::fabs(av * brow[col]);
      }
    }
}

// A float dot product of k terms, summed in any order, fused or not, is within
// gamma_k * sum |a_i b_i| of the exact value, gamma_k = k u / (1 - k u) with u = 2^-24 (Higham,
// Accuracy and Stability of Numerical Algorithms, 2nd ed., section 3.1); rounding the double
// reference to float adds u |c| <= u * sum |a_i b_i|. So the bound grows linearly with k. It is a
// worst case, never reached in practice (errors grow like sqrt(k) on average), so it cannot fail a
// correct kernel, while an element built from a wrong row, a wrong column or a missing term is off
// by about 1/4 per wrong term (the mean of |a b|), far above it (k = 700: max sum ~200, bound ~0.009).
kit::Tolerance matmul_tolerance(unsigned k, double max_abs_sum) {
  const double ku = (k + 1) * kUnitRoundoff;
  std::ostringstream why;
  why << "a float dot product of k = " << k << " terms in any order: |error| <= (k + 1) u / (1 - k u) "
      << "x max sum|a b| = " << max_abs_sum << ", u = 2^-24";
  return {ku / (1.0 - ku) * max_abs_sum, 0.0, why.str()};
}

class Matmul : public kit::GpuTestWithParam<Mnk> {};

// Runs matmul on random A and B of shape s and checks C within matmul_tolerance, and that A and B
// come back unchanged; `inputs` places A and B as in check_aos_to_soa.
void check_matmul(const Mnk& s, kit::Placement inputs = kit::Placement::start) {
  auto rng = kit::test_random();
  const auto a = rng.floats(std::size_t(s.m) * s.k, -1, 1), b = rng.floats(std::size_t(s.k) * s.n, -1, 1);
  std::vector<double> c, abs_sum;
  reference_matmul(s, a, b, c, abs_sum);
  const std::vector<float> expected(c.begin(), c.end());
  const double max_abs_sum = *std::max_element(abs_sum.begin(), abs_sum.end());

  kit::DeviceBuffer<float> d_a(a, inputs), d_b(b, inputs);
  kit::GuardedBuffer<float> d_c(expected.size());
  kit::Launch launch;
  kit::remote::expect_queued_on_stream(
      d_c.data(), expected.size() * sizeof(float), [&](cudaStream_t stream) {
        launch = lab03::matmul(s.m, s.n, s.k, d_a.data(), d_b.data(), d_c.data(), stream);
      });
  EXPECT_TRUE(kit::output_matches("C", expected, d_c, matmul_tolerance(s.k, max_abs_sum),
                                  kit::Shape::d2(s.m, s.n), launch));
  EXPECT_TRUE(kit::input_unchanged("A", d_a, a));
  EXPECT_TRUE(kit::input_unchanged("B", d_b, b));
}

KIT_TEST_P(Matmul, MatchesADoublePrecisionProduct, "coalescing.2", gpu, 1,
           "matmul computes C = A B within a rounding bound that grows with k") {
  check_matmul(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Shapes, Matmul,
                         ::testing::Values(Mnk{1, 1, 1}, Mnk{33, 65, 17}, Mnk{1, 1000, 257},
                                           Mnk{1000, 1, 257}, Mnk{64, 96, 128},
                                           Mnk{1000, 1100, 700}),
                         [](const ::testing::TestParamInfo<Mnk>& info) {
                           return "m" + std::to_string(info.param.m) + "_n" +
                                  std::to_string(info.param.n) + "_k" + std::to_string(info.param.k);
                         });

// Three products past 2^32: C of 65537 x 65537 (a row offset row * n passes 2^32 - 1 in the last
// row), B of 65537 x 65537 (the offset i * n of B's row i passes it in the last term of the sum)
// and A of 65537 x 65537 (the offset row * k of A's last row passes it). 16 GiB each, one after
// the other.
constexpr unsigned kHugeSide = (1u << 16) + 1;

__global__ void deep_a(float* a, unsigned k) {  // 1/4 at 0, 1 at k - 1, 0 elsewhere
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < k; i += gridDim.x * blockDim.x)
    a[i] = i == 0 ? 0.25f : i == k - 1 ? 1.0f : 0.0f;
}

class MatmulHuge : public kit::GpuTest {};

KIT_TEST(MatmulHuge, OffsetsPass2To32, "coalescing.2", timed, 1,
         "matmul of 65537 x 1 by 1 x 65537 (C of 16 GiB), of 1 x 65537 by 65537 x 65537 (B of "
         "16 GiB) and of 65537 x 65537 by 65537 x 1 (A of 16 GiB): offsets past 2^32 reach the "
         "right elements") {
  const std::size_t side = kHugeSide, big = side * side;
  KIT_NEEDS_DEVICE_MEMORY(big * sizeof(float));
  auto rng = kit::test_random();
  const auto seed_a = static_cast<std::uint32_t>(rng.next_u64());
  const auto seed_b = static_cast<std::uint32_t>(rng.next_u64());
  {
    SCOPED_TRACE("C = A B with A 65537 x 1, B 1 x 65537: C(r, c) = a(r) b(c)");
    kit::DeviceBuffer<float> d_a(side), d_b(side), d_c(big);
    kit::fill_index_values(d_a.data(), side, seed_a);
    kit::fill_index_values(d_b.data(), side, seed_b);
    kit::poison_floats(d_c.data(), big);
    const kit::Launch launch =
        lab03::matmul(kHugeSide, kHugeSide, 1, d_a.data(), d_b.data(), d_c.data());
    const kit::WrongCount wrong = kit::count_wrong([&](unsigned long long* w) {
      check_huge_outer<<<kit::kHugeBlocks, kit::kHugeThreads>>>(d_c.data(), kHugeSide, kHugeSide, seed_a,
                                                        seed_b, w);
    });
    EXPECT_EQ(wrong.count, 0ull)
        << wrong.count << " of " << big << " elements of C wrong, the first C("
        << wrong.first / side << ", " << wrong.first % side << ") (launch: " << kit::describe_launch(launch) << ").\n"
        << "Row 65536 of C starts at 65536 x 65537 > 2^32 - 1. " << kWrapAdvice << "\n"
        << kit::seed_note();
  }
  if (HasFailure()) return;
  {
    SCOPED_TRACE("C = A B with A 1 x 65537, B 65537 x 65537: C(0, c) = b(0, c) / 4 + b(65536, c)");
    kit::DeviceBuffer<float> d_a(side), d_b(big), d_c(side);
    deep_a<<<64, 256>>>(d_a.data(), kHugeSide);
    KIT_CHECK_LAUNCH("deep_a");
    kit::fill_index_values(d_b.data(), big, seed_b);
    kit::poison_floats(d_c.data(), side);
    const kit::Launch launch =
        lab03::matmul(1, kHugeSide, kHugeSide, d_a.data(), d_b.data(), d_c.data());
    const kit::WrongCount wrong = kit::count_wrong([&](unsigned long long* w) {
      check_huge_deep<<<64, kit::kHugeThreads>>>(d_c.data(), kHugeSide, kHugeSide, seed_b, w);
    });
    EXPECT_EQ(wrong.count, 0ull)
        << wrong.count << " of " << side << " elements of C wrong, the first C(0, " << wrong.first
        << ") (launch: " << kit::describe_launch(launch) << ").\n"
        << "Row 65536 of B starts at 65536 x 65537 > 2^32 - 1. " << kWrapAdvice << "\n"
        << kit::seed_note();
  }
  if (HasFailure()) return;
  {
    SCOPED_TRACE("C = A B with A 65537 x 65537, B 65537 x 1: C(r, 0) = a(r, 0) / 4 + a(r, 65536)");
    kit::DeviceBuffer<float> d_a(big), d_b(side), d_c(side);
    kit::fill_index_values(d_a.data(), big, seed_a);
    deep_a<<<64, 256>>>(d_b.data(), kHugeSide);  // the same 1/4, 0, ..., 0, 1 as a column
    KIT_CHECK_LAUNCH("deep_a");
    kit::poison_floats(d_c.data(), side);
    const kit::Launch launch =
        lab03::matmul(kHugeSide, 1, kHugeSide, d_a.data(), d_b.data(), d_c.data());
    const kit::WrongCount wrong = kit::count_wrong([&](unsigned long long* w) {
      check_huge_rows<<<64, kit::kHugeThreads>>>(d_c.data(), kHugeSide, kHugeSide, seed_a, w);
    });
    EXPECT_EQ(wrong.count, 0ull)
        << wrong.count << " of " << side << " elements of C wrong, the first C(" << wrong.first
        << ", 0) (launch: " << kit::describe_launch(launch) << ").\n"
        << "Row 65536 of A starts at 65536 x 65537 > 2^32 - 1. " << kWrapAdvice << "\n"
        << kit::seed_note();
  }
}

// ---- Step 3: matrix transpose ------------------------------------------------------------------

KIT_TEST(CoalescingHost, TransposedOffsetUsesTheOutputRowLength, "coalescing.3", host, 2,
         "transposed_offset: element (row, col) of a rows x cols input lands at col * rows + row") {
  EXPECT_EQ(lab03::transposed_offset(0, 1, 3, 5), 3u)
      << "in a 3 x 5 input, (0, 1) becomes (1, 0) of the 5 x 3 output: offset 1 * 3 + 0";
  EXPECT_EQ(lab03::transposed_offset(2, 4, 3, 5), 14u) << "(2, 4) becomes (4, 2): 4 * 3 + 2";
  EXPECT_EQ(lab03::transposed_offset(1, 0, 3, 5), 1u) << "(1, 0) becomes (0, 1)";
  EXPECT_EQ(lab03::transposed_offset(5, 69999, 70000, 70000), 69999ull * 70000ull + 5)
      << "must not overflow 32 bits";
}

// The model's transposes: 1024 x 1024 floats (rows start on 128-byte boundaries).
constexpr std::uint64_t kInBase = kArrayBase, kOutBase = 2 * kArrayBase;

KIT_TEST(CoalescingHost, ModelNaiveTransposeReadIsCoalesced, "coalescing.3", host, 2,
         "model: a warp of transpose_naive_kernel reads 32 neighbouring floats of a row (4 sectors)") {
  const unsigned rows = kModelSize, cols = kModelSize;
  const kit::Launch launch = lab03::transpose_naive_config(rows, cols);
  auto element = [&](am::Coord b, am::Coord t) {
    return lab03::naive_transpose_element(as_uint3(b), launch.block, as_uint3(t));
  };
  const auto reads = sample_warps(launch, kInBase, [&](am::Coord b, am::Coord t) -> Index {
    const MatIndex e = element(b, t);
    if (e.row >= rows || e.col >= cols) return std::nullopt;
    return std::uint64_t(e.row) * cols + e.col;
  });
  const auto writes = sample_warps(launch, kOutBase, [&](am::Coord b, am::Coord t) -> Index {
    const MatIndex e = element(b, t);
    if (e.row >= rows || e.col >= cols) return std::nullopt;
    return lab03::transposed_offset(e.row, e.col, rows, cols);
  });
  const am::GlobalRequest w = am::global_request(writes.front().lanes, 4);
  EXPECT_TRUE(global_access("the read of in[row * cols + col] in transpose_naive_kernel (1024 x 1024)",
                            reads, kCoalesced))
      << "\n  (its write of out[col * rows + row] touches " << w.sectors
      << " sectors: one side of a naive transpose is always strided; the tile fixes that)";
}

// Offset of tile position `t` in a shared array with `pitch` floats per row, as in
// `__shared__ float tile[kTile][pitch]`: the given tile_offset of coalescing_math.cuh, computed by
// the judge itself (the layout of a C++ array is not the student's to say).
unsigned tile_offset(MatIndex t, unsigned pitch) { return t.row * pitch + t.col; }

// The student's kPaddedPitch (coalescing_math.cuh, step 3), as the worker reports it: the judge has
// no copy of its own.
unsigned student_padded_pitch() { return lab03_probe::padded_pitch(0); }

// Which input element a tiled transpose writes to each output element, simulated on the host
// with the student's tile_load, tile_store and pitch, block by block as the kernel runs.
struct SimulatedTranspose {
  std::vector<std::int64_t> out;  // input index written to each output element, -1 if none
  std::vector<int> writes;        // writes per output element
  std::string problem;            // the first impossible move, if any
};

SimulatedTranspose simulate_tiled(unsigned rows, unsigned cols, unsigned pitch) {
  const kit::Launch launch = lab03::transpose_tiled_config(rows, cols);
  SimulatedTranspose sim{std::vector<std::int64_t>(std::size_t(rows) * cols, -1),
                         std::vector<int>(std::size_t(rows) * cols, 0), ""};
  const std::int64_t kEmpty = -1;
  auto note = [&](const std::string& s) {
    if (sim.problem.empty()) sim.problem = s;
  };
  for (unsigned by = 0; by < launch.grid.y; ++by)
    for (unsigned bx = 0; bx < launch.grid.x; ++bx) {
      const uint3 block = make_uint3(bx, by, 0);
      // Room for the offset of every position inside the 32 x 32 tile, even for a pitch below kTile.
      std::vector<std::int64_t> tile(std::max(std::size_t(lab03::kTile) * pitch,
                                              std::size_t(lab03::kTile - 1) * pitch + lab03::kTile),
                                     kEmpty);
      // The worker answers for the whole block, each direction in one call (lab03_probe).
      const std::size_t moves = std::size_t{lab03::kTilePasses} * launch.block.x * launch.block.y;
      const std::vector<lab03::TileMove> loads =
          lab03_probe::tile_moves(block, launch.block, lab03::kTilePasses, false);
      const std::vector<lab03::TileMove> stores =
          lab03_probe::tile_moves(block, launch.block, lab03::kTilePasses, true);
      if (loads.size() != moves || stores.size() != moves) {
        note("the worker's answer for block (" + std::to_string(bx) + ", " + std::to_string(by) +
             ") has the wrong length");
        return sim;
      }
      std::size_t next = 0;
      for (unsigned pass = 0; pass < lab03::kTilePasses; ++pass)
        for (unsigned ty = 0; ty < launch.block.y; ++ty)
          for (unsigned tx = 0; tx < launch.block.x; ++tx) {
            const lab03::TileMove m = loads[next++];
            if (m.global.row >= rows || m.global.col >= cols) continue;
            if (m.tile.row >= lab03::kTile || m.tile.col >= lab03::kTile) {
              note("tile_load puts input (" + std::to_string(m.global.row) + ", " +
                   std::to_string(m.global.col) + ") at tile position (" + std::to_string(m.tile.row) +
                   ", " + std::to_string(m.tile.col) + "), outside the 32 x 32 tile");
              continue;
            }
            tile[tile_offset(m.tile, pitch)] = std::int64_t(m.global.row) * cols + m.global.col;
          }
      next = 0;
      for (unsigned pass = 0; pass < lab03::kTilePasses; ++pass)
        for (unsigned ty = 0; ty < launch.block.y; ++ty)
          for (unsigned tx = 0; tx < launch.block.x; ++tx) {
            const lab03::TileMove m = stores[next++];
            if (m.global.row >= cols || m.global.col >= rows) continue;
            if (m.tile.row >= lab03::kTile || m.tile.col >= lab03::kTile) {
              note("tile_store takes tile position (" + std::to_string(m.tile.row) + ", " +
                   std::to_string(m.tile.col) + "), outside the 32 x 32 tile");
              continue;
            }
            const std::size_t o = std::size_t(m.global.row) * rows + m.global.col;
            sim.out[o] = tile[tile_offset(m.tile, pitch)];
            ++sim.writes[o];
          }
    }
  return sim;
}

KIT_TEST(CoalescingHost, TiledTransposeSimulatedOnTheHostIsExact, "coalescing.3", host, 3,
         "tile_load and tile_store, replayed on the host block by block, transpose 70x45, 45x70, "
         "32x32, 1x33 and 33x1 exactly") {
  struct Rc { unsigned rows, cols; };
  const unsigned padded_pitch = student_padded_pitch();
  for (const Rc& s : {Rc{70, 45}, Rc{45, 70}, Rc{32, 32}, Rc{1, 33}, Rc{33, 1}}) {
    const SimulatedTranspose sim = simulate_tiled(s.rows, s.cols, padded_pitch);
    std::ostringstream errors;
    int wrong = 0;
    for (unsigned i = 0; i < s.cols; ++i)      // output row
      for (unsigned j = 0; j < s.rows; ++j) {  // output column
        const std::size_t o = std::size_t(i) * s.rows + j;
        const std::int64_t want = std::int64_t(j) * s.cols + i;
        if (sim.out[o] == want && sim.writes[o] == 1) continue;
        if (wrong++ < 3) {
          errors << "  out(" << i << ", " << j << ") should receive in(" << j << ", " << i << "); ";
          if (sim.writes[o] == 0)
            errors << "no thread stores it\n";
          else if (sim.out[o] < 0)
            errors << "it receives a tile position that no thread loaded\n";
          else
            errors << "it receives in(" << sim.out[o] / s.cols << ", " << sim.out[o] % s.cols << ")"
                   << (sim.writes[o] > 1 ? " (stored " + std::to_string(sim.writes[o]) + " times)" : "")
                   << "\n";
        }
      }
    EXPECT_TRUE(wrong == 0 && sim.problem.empty())
        << s.rows << " x " << s.cols << " input: " << wrong << " of " << std::size_t(s.rows) * s.cols
        << " output elements wrong\n"
        << errors.str() << (sim.problem.empty() ? "" : "  " + sim.problem + "\n");
  }
}

// Samples of every pass of a tiled transpose: `element(block, thread, pass)` gives the index of
// the element (or shared-memory byte offset, with base 0) one access touches.
template <class Fn>
std::vector<WarpSample> tile_samples(std::uint64_t base, Fn element) {
  const kit::Launch launch = lab03::transpose_tiled_config(kModelSize, kModelSize);
  std::vector<WarpSample> all;
  for (unsigned pass = 0; pass < lab03::kTilePasses; ++pass) {
    auto part = sample_warps(launch, base, [&](am::Coord b, am::Coord t) -> Index {
      return element(as_uint3(b), as_uint3(t), pass);
    });
    for (auto& p : part) p.where += ", pass " + std::to_string(pass);
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

KIT_TEST(CoalescingHost, ModelTiledTransposeGlobalAccessesAreCoalesced, "coalescing.3", host, 3,
         "model: in both phases of the tiled transpose a warp touches 32 neighbouring floats (4 sectors)") {
  const unsigned rows = kModelSize, cols = kModelSize;
  const auto loads = tile_samples(kInBase, [&](uint3 b, uint3 t, unsigned pass) -> Index {
    const lab03::TileMove m = lab03::tile_load(b, t, pass);
    if (m.global.row >= rows || m.global.col >= cols) return std::nullopt;
    return std::uint64_t(m.global.row) * cols + m.global.col;
  });
  const auto stores = tile_samples(kOutBase, [&](uint3 b, uint3 t, unsigned pass) -> Index {
    const lab03::TileMove m = lab03::tile_store(b, t, pass);
    if (m.global.row >= cols || m.global.col >= rows) return std::nullopt;
    return std::uint64_t(m.global.row) * rows + m.global.col;
  });
  EXPECT_TRUE(global_access("phase 1, the load of the input (tile_load, 1024 x 1024)", loads, kCoalesced));
  EXPECT_TRUE(global_access("phase 2, the store of the output (tile_store, 1024 x 1024)", stores, kCoalesced));
}

KIT_TEST(CoalescingHost, ModelPaddedTileHasNoBankConflicts, "coalescing.3", host, 3,
         "model: with kPaddedPitch, writing a tile row and reading a tile column are conflict-free") {
  auto shared = [](unsigned pitch, bool store_phase) {
    return tile_samples(0, [=](uint3 b, uint3 t, unsigned pass) -> Index {
      const lab03::TileMove m = store_phase ? lab03::tile_store(b, t, pass) : lab03::tile_load(b, t, pass);
      return std::uint64_t(tile_offset(m.tile, pitch));  // a word index: 4 bytes each
    });
  };
  const auto unpadded = am::shared_request(shared(lab03::kUnpaddedPitch, true).front().lanes);
  const unsigned padded_pitch = student_padded_pitch();
  const std::string pitch = " (kPaddedPitch = " + std::to_string(padded_pitch) + ")";
  EXPECT_TRUE(conflict_free("phase 1, writing the tile" + pitch, shared(padded_pitch, false)));
  EXPECT_TRUE(conflict_free("phase 2, reading the tile" + pitch, shared(padded_pitch, true)))
      << "\n  (for comparison, the unpadded tile of transpose_tiled, "
      << lab03::kUnpaddedPitch << " floats per row, needs " << am::describe(unpadded) << ")";
}

struct Rc {
  unsigned rows, cols;
};

// Runs one transpose launcher on a fresh rows x cols input and checks every element exactly,
// naming, for a wrong element, which input element landed there instead; `input` places the
// input as in check_aos_to_soa.
template <class TransposeFn>
void check_transpose(const char* name, TransposeFn transpose, Rc s,
                     kit::Placement input = kit::Placement::start) {
  auto rng = kit::test_random();
  const auto in = rng.floats(std::size_t(s.rows) * s.cols, -1, 1);
  std::vector<float> expected(in.size());
  for (unsigned r = 0; r < s.rows; ++r)
    for (unsigned c = 0; c < s.cols; ++c) expected[std::size_t(c) * s.rows + r] = in[std::size_t(r) * s.cols + c];
  kit::DeviceBuffer<float> d_in(in, input);
  kit::GuardedBuffer<float> d_out(in.size());
  kit::remote::expect_queued_on_stream(
      d_out.data(), in.size() * sizeof(float),
      [&](cudaStream_t stream) { transpose(s.rows, s.cols, d_in.data(), d_out.data(), stream); },
      name);
  auto came_from = [&](const kit::Comparison& cmp) {
    std::ostringstream s_out;
    for (const kit::Mismatch& m : cmp.first) {
      if (m.unwritten) continue;
      const auto at = std::find(in.begin(), in.end(), static_cast<float>(m.got));
      const std::size_t i = m.index / s.rows, j = m.index % s.rows;
      s_out << "  out(" << i << ", " << j << ") should be in(" << j << ", " << i << ")";
      if (at != in.end()) {
        const std::size_t k = at - in.begin();
        s_out << " but holds in(" << k / s.cols << ", " << k % s.cols << ")";
      }
      s_out << "\n";
    }
    return s_out.str();
  };
  const auto result =
      matches(std::string(name) + " out (" + std::to_string(s.cols) + " x " +
                  std::to_string(s.rows) + ")",
              expected, d_out, kit::Tolerance::exact("a transpose moves values unchanged"),
              kit::Shape::d2(s.cols, s.rows), came_from);
  EXPECT_TRUE(result) << (result ? "" : kit::race_check(d_out.download(), [&] {
    kit::GuardedBuffer<float> again(in.size());
    transpose(s.rows, s.cols, d_in.data(), again.data(), 0);
    KIT_CUDA_CHECK(cudaDeviceSynchronize());
    return again.download();
  }));
  EXPECT_TRUE(kit::input_unchanged("in", d_in, in));
}

std::string shape_name(const ::testing::TestParamInfo<Rc>& info) {
  return std::to_string(info.param.rows) + "x" + std::to_string(info.param.cols);
}

// Not a multiple of 32 on either axis, single rows and columns, and one tall enough that the
// warps of a tile block really run apart (a missing barrier shows there).
const auto kTransposeShapes = ::testing::Values(Rc{1, 1}, Rc{1, 1000}, Rc{1000, 1}, Rc{33, 65},
                                                Rc{1000, 1001}, Rc{2049, 3001});

class TransposeNaive : public kit::GpuTestWithParam<Rc> {};
KIT_TEST_P(TransposeNaive, MovesEveryElement, "coalescing.3", gpu, 1,
           "transpose_naive writes in(r, c) to out(c, r), exactly, for every element") {
  check_transpose("transpose_naive", lab03::transpose_naive, GetParam());
}
INSTANTIATE_TEST_SUITE_P(Shapes, TransposeNaive, kTransposeShapes, shape_name);

class TransposeTiled : public kit::GpuTestWithParam<Rc> {};
KIT_TEST_P(TransposeTiled, MovesEveryElement, "coalescing.3", gpu, 1,
           "transpose_tiled (32 x 32 shared tile) writes in(r, c) to out(c, r), exactly") {
  check_transpose("transpose_tiled", lab03::transpose_tiled, GetParam());
}
INSTANTIATE_TEST_SUITE_P(Shapes, TransposeTiled, kTransposeShapes, shape_name);

class TransposePadded : public kit::GpuTestWithParam<Rc> {};
KIT_TEST_P(TransposePadded, MovesEveryElement, "coalescing.3", gpu, 1,
           "transpose_padded (padded shared tile) writes in(r, c) to out(c, r), exactly") {
  check_transpose("transpose_padded", lab03::transpose_padded, GetParam());
}
INSTANTIATE_TEST_SUITE_P(Shapes, TransposePadded, kTransposeShapes, shape_name);

// The tiled transposes on the hardware (see CoalescingCounters above): a 512 x 1024 input is
// whole tiles, so both phases of a coalesced kernel touch exactly the sectors their bytes fill,
// and a padded tile takes one shared-memory wavefront per access.
constexpr Rc kCounterShape{512, 1024};

KIT_TEST(CoalescingCounters, TiledTransposesTouchOnlyTheSectorsTheyNeed, "coalescing.3", counter,
         2, "on the GPU (Nsight Compute): transpose_tiled and transpose_padded of 512 x 1024 "
            "touch no more global sectors than their bytes fill") {
  check_transpose("transpose_tiled", lab03::transpose_tiled, kCounterShape);
  check_transpose("transpose_padded", lab03::transpose_padded, kCounterShape);
  expect_counters({"coalescing.global_sectors_vs_ideal"});
}

KIT_TEST(CoalescingCounters, PaddedTileHasNoBankConflict, "coalescing.3", counter, 2,
         "on the GPU (Nsight Compute): transpose_padded of 512 x 1024 writes and reads its tile "
         "with no shared-memory bank conflict") {
  check_transpose("transpose_padded", lab03::transpose_padded, kCounterShape);
  expect_counters({"coalescing.shared_wavefronts_vs_ideal"});
}

// The three transposes of a 65537 x 65537 input (2 x 16 GiB): the offset of the last row,
// 65536 x 65537, passes 2^32 - 1, in the input and in the output.
class TransposeHuge : public kit::GpuTest {};

KIT_TEST(TransposeHuge, OffsetsPass2To32, "coalescing.3", timed, 1,
         "transpose_naive, transpose_tiled and transpose_padded of 65537 x 65537 (2 x 16 GiB): "
         "offsets past 2^32 reach the right elements") {
  const std::size_t side = kHugeSide, big = side * side;
  KIT_NEEDS_DEVICE_MEMORY(2 * big * sizeof(float));
  auto rng = kit::test_random();
  const auto seed = static_cast<std::uint32_t>(rng.next_u64());
  kit::DeviceBuffer<float> d_in(big), d_out(big);
  kit::fill_index_values(d_in.data(), big, seed);
  using Transpose = kit::Launch (*)(unsigned, unsigned, const float*, float*, cudaStream_t);
  const std::pair<const char*, Transpose> transposes[] = {
      {"transpose_naive", lab03::transpose_naive},
      {"transpose_tiled", lab03::transpose_tiled},
      {"transpose_padded", lab03::transpose_padded}};
  for (const auto& [name, transpose] : transposes) {
    SCOPED_TRACE(name);
    kit::poison_floats(d_out.data(), big);
    const kit::Launch launch = transpose(kHugeSide, kHugeSide, d_in.data(), d_out.data(), 0);
    const kit::WrongCount wrong = kit::count_wrong([&](unsigned long long* w) {
      check_huge_transpose<<<kit::kHugeBlocks, kit::kHugeThreads>>>(d_out.data(), kHugeSide, kHugeSide,
                                                            seed, w);
    });
    EXPECT_EQ(wrong.count, 0ull)
        << name << ": " << wrong.count << " of " << big << " elements wrong, the first out("
        << wrong.first / side << ", " << wrong.first % side
        << ") (launch: " << kit::describe_launch(launch) << ").\n"
        << "Row 65536 of the input, and of the output, starts at 65536 x 65537 > 2^32 - 1. "
        << kWrapAdvice << "\n" << kit::seed_note();
  }
}

// ---- Step 4: the kernels under memcheck ---------------------------------------------------------

// A tiled transpose with its input at the end of its allocation: nothing written outside the
// output, the input unchanged. Its output is checked in step 3 only: without its barrier it is a
// race, whose outcome under the sanitizer no test may depend on.
template <class TransposeFn>
void check_transpose_bounds(const char* name, TransposeFn transpose, Rc s) {
  auto rng = kit::test_random();
  const auto in = rng.floats(std::size_t(s.rows) * s.cols, -1, 1);
  kit::DeviceBuffer<float> d_in(in, kit::Placement::end);
  kit::GuardedBuffer<float> d_out(in.size());
  transpose(s.rows, s.cols, d_in.data(), d_out.data(), 0);
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  const auto hits = d_out.guard_writes();
  EXPECT_TRUE(hits.empty()) << name << " out: " << kit::describe_guard_writes(hits, in.size())
                            << "\n" << kit::seed_note();
  EXPECT_TRUE(kit::input_unchanged("in", d_in, in));
}

class CoalescingMemcheck : public kit::GpuTest {};

KIT_TEST(CoalescingMemcheck, NoKernelReadsOutsideItsInputs, "coalescing.4", memcheck, 4,
         "under memcheck, aos_to_soa, integrate_soa, matmul and the three transposes read "
         "nothing outside their inputs (each input ends its allocation)") {
  // Shapes whose inputs are whole multiples of 16 bytes (kit::Placement::end), with threads left
  // over past the last row and column.
  constexpr auto kAtEnd = kit::Placement::end;
  {
    SCOPED_TRACE("aos_to_soa, 1000 particles");
    check_aos_to_soa(1000, kAtEnd);
  }
  {
    SCOPED_TRACE("integrate_soa, 1000 particles");
    check_integrate_soa(1000, kAtEnd);
  }
  {
    SCOPED_TRACE("matmul, A 36 x 20, B 20 x 44");
    check_matmul({36, 44, 20}, kAtEnd);
  }
  constexpr Rc kShape{33, 68};
  {
    SCOPED_TRACE("transpose_naive, 33 x 68");
    check_transpose("transpose_naive", lab03::transpose_naive, kShape, kAtEnd);
  }
  for (const auto& [name, transpose] :
       {std::pair{"transpose_tiled", lab03::transpose_tiled},
        std::pair{"transpose_padded", lab03::transpose_padded}}) {
    SCOPED_TRACE(std::string(name) + ", 33 x 68");
    check_transpose_bounds(name, transpose, kShape);
  }
}

// ---- Performance -------------------------------------------------------------------------------

// The grader's own naive transpose, the baseline of the "x times naive" bar: a copy the student
// cannot slow down. One element per thread, 32 x 8 blocks; the read is coalesced, the write
// strides by `rows` floats.
__global__ void grader_naive_transpose_kernel(unsigned rows, unsigned cols, const float* __restrict__ in,
                                              float* __restrict__ out) {
  const unsigned col = threadIdx.x + blockIdx.x * blockDim.x;
  const unsigned row = threadIdx.y + blockIdx.y * blockDim.y;
  if (col < cols && row < rows) out[std::size_t(col) * rows + row] = in[std::size_t(row) * cols + col];
}

void grader_naive_transpose(unsigned rows, unsigned cols, const float* in, float* out, cudaStream_t stream) {
  const dim3 block(32, 8);
  const dim3 grid((cols + 31) / 32, (rows + 7) / 8);
  grader_naive_transpose_kernel<<<grid, block, 0, stream>>>(rows, cols, in, out);
  KIT_CHECK_LAUNCH("grader_naive_transpose_kernel");
}

// The grader's own copy of the bad-mapping matmul (row of C from threadIdx.x), the baseline of
// the mapping bar.
__global__ void grader_bad_matmul_kernel(unsigned m, unsigned n, unsigned k, const float* __restrict__ a,
                                         const float* __restrict__ b, float* __restrict__ c) {
  const unsigned row = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  float acc = 0.0f;
  for (unsigned i = 0; i < k; ++i) acc += a[std::size_t(row) * k + i] * b[std::size_t(i) * n + col];
  c[std::size_t(row) * n + col] = acc;
}

void grader_bad_matmul(unsigned m, unsigned n, unsigned k, const float* a, const float* b, float* c,
                       cudaStream_t stream) {
  const dim3 block(32, 8);
  const dim3 grid((m + 31) / 32, (n + 7) / 8);
  grader_bad_matmul_kernel<<<grid, block, 0, stream>>>(m, n, k, a, b, c);
  KIT_CHECK_LAUNCH("grader_bad_matmul_kernel");
}

// Reference for the perf-size matmul, on the GPU in double (a host product of 2048^3 would take
// seconds): C and sum |a b| per element.
__global__ void grader_double_matmul_kernel(unsigned m, unsigned n, unsigned k, const float* a,
                                            const float* b, double* c, double* abs_sum) {
  const unsigned col = threadIdx.x + blockIdx.x * blockDim.x;
  const unsigned row = threadIdx.y + blockIdx.y * blockDim.y;
  if (row >= m || col >= n) return;
  double acc = 0.0, mag = 0.0;
  for (unsigned i = 0; i < k; ++i) {
    const double p = double(a[std::size_t(row) * k + i]) * b[std::size_t(i) * n + col];
    acc += p;
    mag += fabs(p);
  }
  c[std::size_t(row) * n + col] = acc;
  abs_sum[std::size_t(row) * n + col] = mag;
}

// 8192 x 8192 floats: 256 MiB read and 256 MiB written, several times any L2 cache.
constexpr unsigned kPerfRows = 8192, kPerfCols = 8192;

// The two transpose bars: transpose_padded on 8192 x 8192 timed against a baseline that moves the
// same bytes, its output checked before timing and after it, on a fresh input.
class TransposePerf : public kit::PerfTest {
 protected:
  void compare_with(const std::function<kit::Timed(const float* d_in)>& baseline, const std::string& key) {
    // The input is drawn and the output checked on the device (kit/device_check.h).
    auto rng = kit::test_random();
    const std::size_t count = std::size_t(kPerfRows) * kPerfCols;
    kit::DeviceBuffer<float> d_in(count);
    auto d_expected = kit::DeviceBuffer<float>::judge_only(count);
    kit::Drawn in = kit::draw_floats(rng, d_in, -1, 1);
    kit::GuardedBuffer<float> d_out(count);
    check(in, d_in, d_expected, d_out, rng, "before timing");
    if (HasFailure()) return;

    const kit::Timed student{"transpose_padded", kBytes, [&](cudaStream_t stream) {
                               lab03::transpose_padded(kPerfRows, kPerfCols, d_in.data(), d_out.data(),
                                                       stream);
                             }};
    expect_ratio_at_least(student, baseline(d_in.data()), key, "GB/s", 1e-9);

    in = kit::draw_floats(rng, d_in, -1, 1);
    check(in, d_in, d_expected, d_out, rng, "after timing, fresh input");
  }

  // Bytes one transpose moves: every element read once and written once.
  static constexpr double kBytes = 2.0 * kPerfRows * kPerfCols * sizeof(float);

 private:
  // The expected output is the grader's naive transpose of the input as drawn, made before the
  // student's call (which cannot move it) and spot-checked against the draw on the CPU.
  static void check(const kit::Drawn& in, const kit::DeviceBuffer<float>& d_in,
                    kit::DeviceBuffer<float>& d_expected, kit::GuardedBuffer<float>& d_out,
                    kit::Random& rng, const char* when) {
    grader_naive_transpose(kPerfRows, kPerfCols, d_in.data(), d_expected.data(), 0);
    kit::spot_check(d_expected, rng, [&](std::size_t i) {
      // Output element i is input (row i % rows, column i / rows).
      return in.at(i % kPerfRows * kPerfCols + i / kPerfRows);
    });
    d_out.poison();
    lab03::transpose_padded(kPerfRows, kPerfCols, d_in.data(), d_out.data());
    KIT_CUDA_CHECK(cudaDeviceSynchronize());
    const std::string what = std::string("transpose_padded out (") + when + ")";
    const auto exact = kit::Tolerance::exact("a transpose moves values unchanged");
    if (kit::passes_on_device(d_expected, d_out, exact)) return;
    EXPECT_TRUE(matches(what, d_expected.download(), d_out, exact,
                        kit::Shape::d2(kPerfCols, kPerfRows)));
  }
};

KIT_TEST(TransposePerf, PaddedTransposeNearCopyBandwidth, "coalescing.perf", perf, 10,
         "transpose_padded on 8192 x 8192 moves its bytes at a large fraction of cudaMemcpy's rate") {
  kit::DeviceBuffer<float> d_copy(std::size_t(kPerfRows) * kPerfCols);
  compare_with([&](const float* d_in) { return kit::device_copy_ceiling(d_in, d_copy.data(), d_copy.bytes()); },
               "coalescing.transpose_vs_device_copy");
}

KIT_TEST(TransposePerf, PaddedTransposeBeatsTheNaiveOne, "coalescing.perf", perf, 5,
         "transpose_padded on 8192 x 8192 runs several times faster than a naive transpose, same run") {
  kit::DeviceBuffer<float> d_naive_out(std::size_t(kPerfRows) * kPerfCols);
  compare_with(
      [&](const float* d_in) {
        return kit::Timed{"the grader's naive transpose", kBytes, [&, d_in](cudaStream_t stream) {
                            grader_naive_transpose(kPerfRows, kPerfCols, d_in, d_naive_out.data(), stream);
                          }};
      },
      "coalescing.transpose_vs_naive");
}

using CoalescingPerf = kit::PerfTest;

KIT_TEST(CoalescingPerf, FixedMatmulMappingBeatsTheBadOne, "coalescing.perf", perf, 10,
         "matmul with your mapping runs several times faster than the row-from-threadIdx.x one at 2048^3") {
  const unsigned s = 2048;
  auto rng = kit::test_random();
  auto a = rng.floats(std::size_t(s) * s, -1, 1);
  const auto b = rng.floats(std::size_t(s) * s, -1, 1);
  kit::DeviceBuffer<float> d_a(a), d_b(b), d_bad_c(std::size_t(s) * s);
  kit::DeviceBuffer<double> d_ref(std::size_t(s) * s), d_abs(std::size_t(s) * s);
  kit::GuardedBuffer<float> d_c(std::size_t(s) * s);

  auto check = [&](const char* when) {
    grader_double_matmul_kernel<<<dim3(s / 32, s / 8), dim3(32, 8)>>>(s, s, s, d_a.data(), d_b.data(),
                                                                     d_ref.data(), d_abs.data());
    KIT_CHECK_LAUNCH("grader_double_matmul_kernel");
    d_c.poison();
    const kit::Launch launch = lab03::matmul(s, s, s, d_a.data(), d_b.data(), d_c.data());
    KIT_CUDA_CHECK(cudaDeviceSynchronize());
    const auto ref = d_ref.download(), mag = d_abs.download();
    const std::vector<float> expected(ref.begin(), ref.end());
    EXPECT_TRUE(kit::output_matches(std::string("C (") + when + ")", expected, d_c,
                                    matmul_tolerance(s, *std::max_element(mag.begin(), mag.end())),
                                    kit::Shape::d2(s, s), launch));
  };
  check("before timing");
  if (HasFailure()) return;

  const double flops = 2.0 * s * s * s;
  const kit::Timed student{"matmul", flops, [&](cudaStream_t stream) {
                             lab03::matmul(s, s, s, d_a.data(), d_b.data(), d_c.data(), stream);
                           }};
  const kit::Timed bad{"the bad-mapping matmul", flops, [&](cudaStream_t stream) {
                         grader_bad_matmul(s, s, s, d_a.data(), d_b.data(), d_bad_c.data(), stream);
                       }};
  expect_ratio_at_least(student, bad, "coalescing.matmul_fixed_vs_bad_mapping", "TFLOP/s", 1e-12);

  a = rng.floats(a.size(), -1, 1);
  d_a.upload(a);
  check("after timing, fresh input");
}

}  // namespace
