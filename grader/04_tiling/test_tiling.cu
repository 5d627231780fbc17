// Grader of lab 04, shared-memory tiling.
//
//   python3 grader/kit.py grade 04          every test, each in its own process, with a score
//   build/bin/grade_04_tiling               the same tests in one process (quick, no score)
//   build/bin/grade_04_tiling --gtest_filter='TilingHost*'   the index checks: no GPU needed
//
// Steps: 1 the index arithmetic of a tiled multiply (host), 2 the tiled matmul, 3 the register-
// blocked matmul, 4 both under racecheck and synccheck, perf both against cuBLAS FP32 (pedantic:
// no TF32) and step 2 against a naive coalesced kernel, all measured in this run at 4096^3.
//
// Correctness: every product is compared element by element with a bound on FP32 rounding that
// holds for any order of summation (see product_bound): with a double-precision host product for
// moderate shapes, odd ones included, and with cuBLAS for large ones. Outputs are poisoned first,
// guarded on both sides, and the inputs must come back unchanged.
//
// Hardware counters: TiledCounters runs matmul_tiled under Nsight Compute when the runner grades
// it (a plain run of this binary skips it) and holds its shared-memory bank conflicts to a bar.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "gemm_baselines.cuh"
#include "kit/check.h"
#include "kit/device_check.h"
#include "kit/remote.h"
#include "kit/diagnose.h"
#include "kit/test.h"
#include "remote.h"
#include "tiling.h"

namespace {

using lab04::MatIndex;
using lab04_grader::Cublas;

constexpr double kUnitRoundoff = 1.0 / (1 << 24);  // float: 2^-24, half an ulp of 1

// ---- Rounding bound -----------------------------------------------------------------------------

// Any FP32 evaluation of a dot product of length k, in any order, with or without FMA, is within
// gamma_k * sum_j |a_j b_j| of the exact value, gamma_k = k u / (1 - k u) (Higham, "Accuracy and
// Stability of Numerical Algorithms", 3.1). The bound grows with k because every addition may
// round; it is per element because it scales with the magnitudes that element sums.
double gamma(unsigned k) { return k * kUnitRoundoff / (1.0 - k * kUnitRoundoff); }

std::string bound_reason(unsigned k, double factor) {
  std::ostringstream s;
  s << "each element may differ by " << (factor == 1.0 ? "" : "2 x ") << "gamma_k * sum_j |a_ij b_jc|, gamma_k = k u / (1 - k u) = "
    << gamma(k) << " for k = " << k
    << ": the rounding bound of any FP32 summation order"
    << (factor == 1.0 ? "" : ", for your result and cuBLAS's each");
  return s.str();
}

// ---- Inputs and the host reference --------------------------------------------------------------

struct Shape3 {
  unsigned m, n, k;
  std::string name() const {
    return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  }
};

// A and B with entries uniform in [-1, 1], on host and device.
struct Operands {
  Shape3 s;
  std::vector<float> a, b;
  kit::DeviceBuffer<float> d_a, d_b;
  Operands(const Shape3& shape, kit::Random& rng)
      : s(shape),
        a(rng.floats(std::size_t(shape.m) * shape.k, -1.0f, 1.0f)),
        b(rng.floats(std::size_t(shape.k) * shape.n, -1.0f, 1.0f)),
        d_a(a),
        d_b(b) {}
  void refill(kit::Random& rng) {
    a = rng.floats(a.size(), -1.0f, 1.0f);
    b = rng.floats(b.size(), -1.0f, 1.0f);
    d_a.upload(a);
    d_b.upload(b);
  }
};

// A B in double, and |A| |B| (the bound's sums), row by row.
void host_product(const Operands& op, std::vector<double>& exact, std::vector<double>& abs_sum) {
  const auto [m, n, k] = op.s;
  exact.assign(std::size_t(m) * n, 0.0);
  abs_sum.assign(std::size_t(m) * n, 0.0);
  for (unsigned r = 0; r < m; ++r) {
    double* e = &exact[std::size_t(r) * n];
    double* s = &abs_sum[std::size_t(r) * n];
    for (unsigned j = 0; j < k; ++j) {
      const double x = op.a[std::size_t(r) * k + j];
      const float* brow = &op.b[std::size_t(j) * n];
      for (unsigned c = 0; c < n; ++c) {
        e[c] += x * brow[c];
        s[c] += std::fabs(x * brow[c]);
      }
    }
  }
}

// ---- Checking a product -------------------------------------------------------------------------

// How a kernel cuts C into blocks, to name the block that owns a wrong element.
struct Ownership {
  unsigned tile_rows, tile_cols;  // C elements per block
  bool one_per_thread;            // step 2: thread (col % tile, row % tile)
};
// The student's tile sizes, asked of the worker once (they may differ from the stub's).
const lab04_probe::TileSizes& student_sizes() {
  static const lab04_probe::TileSizes sizes = lab04_probe::tile_sizes(0);
  return sizes;
}
Ownership tiled_ownership() { return {student_sizes().tile, student_sizes().tile, true}; }
Ownership blocked_ownership() { return {student_sizes().block_m, student_sizes().block_n, false}; }

std::string owner(const Ownership& o, unsigned row, unsigned col) {
  std::ostringstream s;
  s << "block (" << col / o.tile_cols << "," << row / o.tile_rows << ",0)";
  if (o.one_per_thread) s << " thread (" << col % o.tile_cols << "," << row % o.tile_rows << ",0)";
  return s.str();
}

// Compares the device product `out` with `expected` element by element, allowing
// factor * gamma_k * abs_sum per element; names the first wrong elements, their owners, how many
// were never written, any write outside C, and the seed.
template <class Ref>
::testing::AssertionResult product_matches(const std::string& what, const Shape3& s,
                                           const std::vector<Ref>& expected,
                                           const std::vector<Ref>& abs_sum, double factor,
                                           const kit::GuardedBuffer<float>& out,
                                           const Ownership& own) {
  std::ostringstream problems;
  const auto hits = out.guard_writes();
  if (!hits.empty()) problems << what << ": " << kit::describe_guard_writes(hits, out.size()) << "\n";
  const std::vector<float> got = out.download();
  const double g = factor * gamma(s.k);
  std::size_t wrong = 0, unwritten = 0, shown = 0;
  double worst = 0.0;  // largest error as a fraction of its bound
  std::ostringstream first;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double e = expected[i];
    const double allowed = g * abs_sum[i] * 1.0001 + 1e-30;
    const bool poisoned = kit::is_poison(got[i]);
    const double err = std::fabs(double(got[i]) - e);
    if (!poisoned && std::isfinite(err)) worst = std::max(worst, err / allowed);
    if (!poisoned && err <= allowed) continue;
    ++wrong;
    unwritten += poisoned;
    if (shown++ < 5) {
      const unsigned row = unsigned(i / s.n), col = unsigned(i % s.n);
      first << "  C(" << row << "," << col << ") ";
      if (poisoned)
        first << "was never written";
      else
        first << "= " << got[i] << ", expected " << e << " (error " << err << ", allowed " << allowed << ")";
      first << "; owner " << owner(own, row, col) << "\n";
    }
  }
  if (wrong > 0) {
    problems << what << " (" << s.m << " x " << s.k << " times " << s.k << " x " << s.n << "): " << wrong
             << " of " << got.size() << " elements wrong";
    if (unwritten > 0) problems << " (" << unwritten << " never written)";
    problems << "\n" << first.str() << "  largest error among written elements: " << worst
             << " x its bound\n  tolerance: " << bound_reason(s.k, factor) << "\n";
  }
  if (problems.str().empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << problems.str() << kit::seed_note();
}

using MatmulFn = kit::Launch (*)(unsigned, unsigned, unsigned, const float*, const float*, float*,
                                 cudaStream_t);

struct Kernel {
  const char* name;
  MatmulFn run;
  Ownership (*ownership)();  // asked when needed: the student's tile sizes come from the worker
};
const Kernel kTiled{"matmul_tiled", lab04::matmul_tiled, tiled_ownership};
const Kernel kBlocked{"matmul_blocked", lab04::matmul_blocked, blocked_ownership};

// The race note (kit/diagnose.h) for `kernel`'s wrong product `c` of the operands in `op`.
std::string race_check(const Kernel& kernel, const Operands& op, const kit::GuardedBuffer<float>& c) {
  return kit::race_check(c.download(), [&] {
    kit::GuardedBuffer<float> again(c.size());
    kernel.run(op.s.m, op.s.n, op.s.k, op.d_a.data(), op.d_b.data(), again.data(), 0);
    KIT_CUDA_CHECK(cudaDeviceSynchronize());
    return again.download();
  });
}

// Runs `kernel` on fresh random operands of shape `s` and checks it against the double-precision
// host product; the inputs must come back unchanged.
void check_against_host(const Kernel& kernel, const Shape3& s) {
  auto rng = kit::test_random();
  const Operands op(s, rng);
  std::vector<double> exact, abs_sum;
  host_product(op, exact, abs_sum);
  kit::GuardedBuffer<float> c(std::size_t(s.m) * s.n);
  // The stream it is given is busy when it is called: its kernel must queue behind that work.
  const std::string what = std::string(kernel.name) + " " + s.name();
  kit::remote::expect_queued_on_stream(
      c.data(), c.size() * sizeof(float), [&](cudaStream_t stream) {
        kernel.run(s.m, s.n, s.k, op.d_a.data(), op.d_b.data(), c.data(), stream);
      }, what);
  const auto result = product_matches(what, s, exact, abs_sum, 1.0, c, kernel.ownership());
  EXPECT_TRUE(result) << (result ? "" : race_check(kernel, op, c));
  EXPECT_TRUE(kit::input_unchanged("A", op.d_a, op.a));
  EXPECT_TRUE(kit::input_unchanged("B", op.d_b, op.b));
}

// cuBLAS's product of the operands in `op`, the sums |A| |B| of its rounding bound, and copies of
// the operands as handed out. Made before the student's call, in judge-only buffers the worker can
// never map: nothing the call does (to its inputs or anywhere else) moves what it is checked
// against.
struct CublasReference {
  kit::DeviceBuffer<float> product, abs_sum, a, b;
};

CublasReference cublas_reference(const Operands& op, Cublas& cublas) {
  const Shape3 s = op.s;
  const std::size_t count = std::size_t(s.m) * s.n;
  CublasReference ref{kit::DeviceBuffer<float>::judge_only(count),
                      kit::DeviceBuffer<float>::judge_only(count), kit::device_copy(op.d_a),
                      kit::device_copy(op.d_b)};
  cublas.sgemm(s.m, s.n, s.k, op.d_a.data(), op.d_b.data(), ref.product.data(), 0);
  cublas.abs_product(s.m, s.n, s.k, op.d_a.data(), op.d_b.data(), ref.abs_sum.data());
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  return ref;
}

// product_matches()'s rule for element i against cuBLAS, on the device: wrong when unwritten or
// off by more than g = 2 gamma_k times cuBLAS's |A| |B|, that sum first widened (in float, as on
// the host) by `widen` for its own rounding. No fused multiply-add: the bound rounds as the CPU's.
struct OutsideProductBound {
  const float* expected;
  const float* abs_sum;
  const float* got;
  double g, widen;
  __device__ bool operator()(std::size_t i) const {
    const float sum = static_cast<float>(__dmul_rn(abs_sum[i], widen));
    const double allowed = __dadd_rn(__dmul_rn(__dmul_rn(g, sum), 1.0001), 1e-30);
    const float v = got[i];
    const double err = fabs(double(v) - double(expected[i]));
    return kit::detail::poisoned_on_device(v) || !(err <= allowed);
  }
};

// Checks `c`, which `kernel` computed from the operands in `op`, against cuBLAS's product of the
// same operands (`ref`, made before the call): each may be off by the rounding bound, which cuBLAS
// computes too (|A| |B|). The inputs must come back unchanged. A passing product is checked on the
// device; any other is read back, and product_matches() names what is wrong.
::testing::AssertionResult matches_reference(const Kernel& kernel, const Operands& op,
                                             const CublasReference& ref,
                                             const kit::GuardedBuffer<float>& c,
                                             const std::string& when) {
  const Shape3 s = op.s;
  const auto a_kept = kit::input_unchanged("A", op.d_a, ref.a);
  const auto b_kept = kit::input_unchanged("B", op.d_b, ref.b);
  if (!a_kept) return a_kept;
  if (!b_kept) return b_kept;
  // cuBLAS's |A||B| carries its own rounding, at most gamma_k relative: widen by that.
  const double widen = 1.0 + 2.0 * gamma(s.k);
  if (c.guard_writes().empty() &&
      kit::count_where(c.size(), OutsideProductBound{ref.product.data(), ref.abs_sum.data(),
                                                     c.data(), 2.0 * gamma(s.k), widen}) == 0)
    return ::testing::AssertionSuccess();
  std::vector<float> sums = ref.abs_sum.download();
  for (float& x : sums) x = static_cast<float>(x * widen);
  return product_matches(std::string(kernel.name) + " " + s.name() + " vs cuBLAS" + when, s,
                         ref.product.download(), sums, 2.0, c, kernel.ownership());
}

// Runs `kernel` on the operands in `op` into a fresh poisoned output and checks it with cuBLAS.
::testing::AssertionResult run_matches_cublas(const Kernel& kernel, const Operands& op,
                                              Cublas& cublas, const std::string& when) {
  const CublasReference ref = cublas_reference(op, cublas);
  kit::GuardedBuffer<float> c(std::size_t(op.s.m) * op.s.n);
  kernel.run(op.s.m, op.s.n, op.s.k, op.d_a.data(), op.d_b.data(), c.data(), 0);
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  auto result = matches_reference(kernel, op, ref, c, when);
  if (!result) result << race_check(kernel, op, c);
  return result;
}

// ---- Step 1: the index arithmetic, on the host --------------------------------------------------

using TilingHost = kit::HostTest;

KIT_TEST(TilingHost, PhaseCountCoversK, "tiling.1", host, 2,
         "phase_count rounds up: k = 700 in tiles of 16 takes 44 phases, the last one partial") {
  EXPECT_EQ(lab04::phase_count(700, 16), 44u) << "43 full tiles of 16 cover 688; 12 columns remain";
  EXPECT_EQ(lab04::phase_count(17, 16), 2u) << "one full tile and one column";
  EXPECT_EQ(lab04::phase_count(16, 16), 1u) << "exactly one tile";
  EXPECT_EQ(lab04::phase_count(1, 32), 1u) << "a single column still needs a phase";
  auto rng = kit::test_random();
  for (int i = 0; i < 1000; ++i) {
    const auto k = unsigned(rng.uniform_int(1, 1 << 20));
    const auto tile = unsigned(rng.uniform_int(1, 64));
    const unsigned p = lab04::phase_count(k, tile);
    ASSERT_TRUE(std::size_t(p) * tile >= k && std::size_t(p - 1) * tile < k)
        << "phase_count(" << k << ", " << tile << ") = " << p
        << ": the phases must cover all k columns, and the last one must not be empty\n"
        << kit::seed_note();
  }
}

KIT_TEST(TilingHost, TileElementsFollowThePhase, "tiling.1", host, 2,
         "a_tile_element and b_tile_element: position [ty][tx] of phase p holds A(row0 + ty, p * "
         "tile + tx) and B(p * tile + ty, col0 + tx)") {
  const MatIndex a = lab04::a_tile_element(32, 3, 5, 7, 16);
  EXPECT_TRUE(a.row == 37 && a.col == 55)
      << "block rows from 32, phase 3, thread (ty 5, tx 7), tile 16: expected A(37, 55) (row 32 + 5, "
         "column 3 * 16 + 7), got A("
      << a.row << ", " << a.col << ")";
  const MatIndex b = lab04::b_tile_element(64, 2, 5, 7, 16);
  EXPECT_TRUE(b.row == 37 && b.col == 71)
      << "block columns from 64, phase 2, thread (ty 5, tx 7), tile 16: expected B(37, 71) (row 2 * "
         "16 + 5, column 64 + 7), got B("
      << b.row << ", " << b.col << ")";
  // Neighbouring tx must copy neighbouring floats of a row (coalesced loads).
  const MatIndex a0 = lab04::a_tile_element(0, 1, 2, 0, 32), a1 = lab04::a_tile_element(0, 1, 2, 1, 32);
  const MatIndex b0 = lab04::b_tile_element(0, 1, 2, 0, 32), b1 = lab04::b_tile_element(0, 1, 2, 1, 32);
  EXPECT_TRUE(a1.row == a0.row && a1.col == a0.col + 1 && b1.row == b0.row && b1.col == b0.col + 1)
      << "threads tx and tx + 1 should copy neighbouring elements of the same row, so that a warp "
         "reads 32 neighbouring floats";
  auto rng = kit::test_random();  // and cases drawn from the seed
  for (int i = 0; i < 1000; ++i) {
    const auto tile = static_cast<unsigned>(rng.uniform_int(1, 64));
    const auto p = static_cast<unsigned>(rng.uniform_int(0, 4096));
    const auto ty = static_cast<unsigned>(rng.uniform_int(0, tile - 1));
    const auto tx = static_cast<unsigned>(rng.uniform_int(0, tile - 1));
    const auto origin = static_cast<unsigned>(rng.uniform_int(0, 1 << 16));
    const MatIndex ga = lab04::a_tile_element(origin, p, ty, tx, tile);
    const MatIndex gb = lab04::b_tile_element(origin, p, ty, tx, tile);
    ASSERT_TRUE(ga.row == origin + ty && ga.col == p * tile + tx && gb.row == p * tile + ty &&
                gb.col == origin + tx)
        << "origin " << origin << ", phase " << p << ", thread (ty " << ty << ", tx " << tx
        << "), tile " << tile << ": expected A(" << origin + ty << ", " << p * tile + tx
        << ") and B(" << p * tile + ty << ", " << origin + tx << "), got A(" << ga.row << ", "
        << ga.col << ") and B(" << gb.row << ", " << gb.col << "), drawn from the seed\n"
        << kit::seed_note();
  }
}

KIT_TEST(TilingHost, LoadOrZeroPadsOutsideTheMatrix, "tiling.1", host, 2,
         "load_or_zero returns the element inside the matrix and 0 outside it, reading nothing "
         "there") {
  // A 3 x 5 matrix followed by NaNs: reading past it would show.
  std::vector<float> storage(3 * 5 + 64, std::nanf(""));
  for (unsigned i = 0; i < 15; ++i) storage[i] = float(i + 1);
  // The student's load_or_zero runs in the worker, on its own copy of this storage.
  const auto load_or_zero = [&](unsigned rows, unsigned cols, MatIndex e) {
    return lab04_probe::load_or_zero_on_host(storage, rows, cols, e);
  };
  EXPECT_EQ(load_or_zero(3, 5, {0, 0}), 1.0f);
  EXPECT_EQ(load_or_zero(3, 5, {1, 2}), 8.0f) << "element (1, 2) of a 3 x 5 matrix is at 1 * 5 + 2";
  EXPECT_EQ(load_or_zero(3, 5, {2, 4}), 15.0f) << "the last element";
  EXPECT_EQ(load_or_zero(3, 5, {3, 0}), 0.0f) << "row 3 is past the last row: 0";
  EXPECT_EQ(load_or_zero(3, 5, {0, 5}), 0.0f)
      << "column 5 is past the last column (even though m[5] exists: it is row 1): 0";
  EXPECT_EQ(load_or_zero(3, 5, {40, 40}), 0.0f) << "far outside: 0";
}

KIT_TEST(TilingHost, LoadOrZeroIndexesPast2To32, "tiling.1", host, 1,
         "load_or_zero of an element whose offset passes 2^32 - 1 (a 131075 x 65536 matrix: "
         "about 2^33 elements) reads that element") {
  // Drawn from the seed: a row past 65536 of a 2^16-column matrix, so row * cols passes 2^32,
  // and the element's value.
  auto rng = kit::test_random();
  const unsigned rows = 131075, cols = 65536;
  const lab04::MatIndex e{static_cast<unsigned>(rng.uniform_int(65537, rows - 1)),
                          static_cast<unsigned>(rng.uniform_int(0, cols - 1))};
  const float value = static_cast<float>(rng.uniform_int(2, 9999));
  const std::size_t offset = std::size_t{e.row} * cols + e.col;
  const float got = lab04_probe::load_or_zero_past_2_to_32(rows, cols, e, value);
  std::ostringstream why;
  why << "element (" << e.row << ", " << e.col << ") of a " << rows << " x " << cols
      << " matrix, " << value << ", is at offset " << offset << ", past 2^32 - 1";
  if (got == -value)
    why << "; your load_or_zero read offset " << (offset & 0xffffffffu)
        << ": the offset wrapped past 2^32 - 1 in 32-bit arithmetic. Compute it in std::size_t "
           "(static_cast<std::size_t>(e.row) * cols + e.col)";
  EXPECT_EQ(got, value) << why.str() << "\n" << kit::seed_note();
}

// Replays one thread of the tiled kernel on the host: for output C(r, c) of block (bx, by), thread
// (tx, ty), every phase and every position j of the tiles, the thread multiplies a_tile[ty][j]
// (copied by thread (ty, j)) with b_tile[j][tx] (copied by thread (j, tx)). Those must be A(r, x)
// and B(x, c) for the same x, each x in 0..k-1 exactly once, and x >= k only as padding.
std::string replay_element(const Shape3& s, unsigned tile, unsigned r, unsigned c) {
  const unsigned row0 = r / tile * tile, col0 = c / tile * tile, ty = r % tile, tx = c % tile;
  std::vector<int> used(s.k, 0);
  std::ostringstream where;
  where << "C(" << r << "," << c << ") of a " << s.name() << " product, tile " << tile << " (block ("
        << c / tile << "," << r / tile << "), thread (" << tx << "," << ty << ")): ";
  const unsigned phases = lab04::phase_count(s.k, tile);
  // The worker answers for all of the thread's phases in one call (lab04_probe::tile_elements).
  // More than 2^20 positions is no tiling of k <= 1100: say so rather than wait for them.
  if (std::uint64_t{phases} * tile > (std::uint64_t{1} << 20))
    return where.str() + "phase_count(" + std::to_string(s.k) + ", " + std::to_string(tile) +
           ") = " + std::to_string(phases) + " phases of " + std::to_string(tile) +
           " positions each, far more than k = " + std::to_string(s.k) + " needs";
  const std::vector<MatIndex> elements =
      lab04_probe::tile_elements(row0, col0, ty, tx, tile, phases);
  if (elements.size() != 2 * std::size_t{phases} * tile)
    return where.str() + "the worker's answer has " + std::to_string(elements.size()) +
           " tile elements, not " + std::to_string(2 * std::size_t{phases} * tile);
  for (unsigned p = 0; p < phases; ++p)
    for (unsigned j = 0; j < tile; ++j) {
      const MatIndex ea = elements[2 * (std::size_t{p} * tile + j)];
      const MatIndex eb = elements[2 * (std::size_t{p} * tile + j) + 1];
      auto step = [&] {
        std::ostringstream text;
        text << "in phase " << p << ", a_tile[" << ty << "][" << j << "] holds A(" << ea.row << ","
             << ea.col << ") and b_tile[" << j << "][" << tx << "] holds B(" << eb.row << ","
             << eb.col << ")";
        return where.str() + text.str();
      };
      if (ea.row != r) return step() + ", but this row of C needs row " + std::to_string(r) + " of A";
      if (eb.col != c) return step() + ", but this column of C needs column " + std::to_string(c) + " of B";
      if (ea.col != eb.row) return step() + ": A's column and B's row must be the same index";
      if (ea.col < s.k) ++used[ea.col];
    }
  for (unsigned x = 0; x < s.k; ++x)
    if (used[x] != 1)
      return where.str() + "the product A(" + std::to_string(r) + "," + std::to_string(x) + ") B(" +
             std::to_string(x) + "," + std::to_string(c) + ") is summed " + std::to_string(used[x]) +
             " times over " + std::to_string(phases) + " phases; it must be summed once";
  return "";
}

KIT_TEST(TilingHost, TilesSumEveryProductExactlyOnce, "tiling.1", host, 4,
         "replayed on the host, the phases of every sampled thread sum A(r, x) B(x, c) once for each "
         "x < k, on shapes 1x1x1, 33x65x17, 1000x1100x700 and tiles 16 and 32") {
  auto rng = kit::test_random();
  for (const Shape3 s : {Shape3{1, 1, 1}, Shape3{33, 65, 17}, Shape3{1000, 1100, 700}, Shape3{64, 64, 64}})
    for (const unsigned tile : {16u, 32u, student_sizes().tile}) {
      std::vector<MatIndex> samples = {{0, 0}, {s.m - 1, s.n - 1}, {s.m - 1, 0}, {0, s.n - 1}};
      for (int i = 0; i < 20; ++i)
        samples.push_back({unsigned(rng.uniform_int(0, s.m - 1)), unsigned(rng.uniform_int(0, s.n - 1))});
      for (const MatIndex e : samples) {
        const std::string problem = replay_element(s, tile, e.row, e.col);
        ASSERT_TRUE(problem.empty()) << problem << "\n" << kit::seed_note();
      }
    }
}

// ---- Steps 2 and 3: correct products on the GPU ---------------------------------------------------

// Moderate shapes, compared with the host: tiny, odd, exact multiples of the tiles, and shapes just
// around step 3's 128 x 128 tile; k from 1 (a single partial phase) to 700 (44 phases of 16).
const Shape3 kHostShapes[] = {
    {1, 1, 1},     {33, 65, 17},  {1000, 1100, 700}, {64, 64, 64},  {31, 1, 45},
    {1, 77, 1},    {300, 200, 1}, {129, 127, 130},   {256, 258, 48}};

std::string shape_name(const ::testing::TestParamInfo<Shape3>& info) {
  return "m" + std::to_string(info.param.m) + "_n" + std::to_string(info.param.n) + "_k" +
         std::to_string(info.param.k);
}

class TiledProduct : public kit::GpuTestWithParam<Shape3> {};
class BlockedProduct : public kit::GpuTestWithParam<Shape3> {};

KIT_TEST_P(TiledProduct, MatchesTheExactProduct, "tiling.2", gpu, 2,
           "matmul_tiled matches a double-precision host product within the FP32 rounding bound") {
  check_against_host(kTiled, GetParam());
}

KIT_TEST_P(BlockedProduct, MatchesTheExactProduct, "tiling.3", gpu, 2,
           "matmul_blocked matches a double-precision host product within the FP32 rounding bound") {
  check_against_host(kBlocked, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Shapes, TiledProduct, ::testing::ValuesIn(kHostShapes), shape_name);
INSTANTIATE_TEST_SUITE_P(Shapes, BlockedProduct, ::testing::ValuesIn(kHostShapes), shape_name);

class TiledLarge : public kit::GpuTest {};
class BlockedLarge : public kit::GpuTest {};

void check_large(const Kernel& kernel) {
  Cublas cublas;
  auto rng = kit::test_random();
  for (const Shape3 s : {Shape3{2048, 2048, 2048}, Shape3{1531, 2047, 1999}}) {
    const Operands op(s, rng);
    EXPECT_TRUE(run_matches_cublas(kernel, op, cublas, ""));
  }
}

KIT_TEST(TiledLarge, MatchesCublas, "tiling.2", gpu, 4,
         "matmul_tiled matches cuBLAS on 2048x2048x2048 and 1531x2047x1999") {
  check_large(kTiled);
}

// On the hardware: the runner runs this test under Nsight Compute (kit::CounterTest), which
// counts the shared-memory wavefronts the kernel's tile accesses took against the fewest they
// need. A warp that reads a row of a tile, or one element of it (a broadcast), takes one; a warp
// that walks a column of an unpadded 32 x 32 tile takes 32. One shape of whole tiles (every phase
// full) and one of edge blocks and a partial last phase, so both kinds of phase are read.
const Shape3 kCounterShapes[] = {{256, 256, 256}, {129, 127, 130}};

using TiledCounters = kit::CounterTest;

KIT_TEST(TiledCounters, TileAccessesHaveNoBankConflict, "tiling.2", counter, 3,
         "on the GPU (Nsight Compute): matmul_tiled on 256x256x256 and 129x127x130 writes and "
         "reads its tiles with no shared-memory bank conflict") {
  for (const Shape3& s : kCounterShapes) check_against_host(kTiled, s);
  expect_counters({"tiling.shared_wavefronts_vs_ideal"});
}

KIT_TEST(BlockedLarge, MatchesCublas, "tiling.3", gpu, 4,
         "matmul_blocked matches cuBLAS on 2048x2048x2048 and 1531x2047x1999") {
  check_large(kBlocked);
}

// ---- Step 4: no race, no barrier out of step ----------------------------------------------------

// Both products once more, under compute-sanitizer (the runner runs each test under its tool), on
// a shape with edge blocks and interior ones and several phases of either kernel's tiles, so that
// every barrier of the phase loop is passed by every kind of block. racecheck reports a
// shared-memory access that no barrier orders against another thread's: a barrier missing or in the
// wrong place, or a warp that reads what its own threads wrote with nothing in between. synccheck
// reports a __syncthreads() that some threads of a block, or of a warp, do not reach. Either may
// leave every sum right on the GPU the tests ran on, and be wrong on the next one.
// Small, for the sanitizers (racecheck instruments every shared-memory access): matmul_tiled gets
// interior and edge blocks and several phases, the last one partial, with tiles of 32 (3 x 2
// blocks, 3 phases) or 16 (5 x 4 blocks, 5 phases); matmul_blocked one partial 128 x 128 block and
// 5 phases of 16.
const Shape3 kSanitizedShape{65, 63, 66};

class TilingRaces : public kit::GpuTest {};
class TilingBarriers : public kit::GpuTest {};

KIT_TEST(TilingRaces, NoSharedMemoryHazard, "tiling.4", racecheck, 2,
         "under racecheck, matmul_tiled and matmul_blocked get 65x63x66 right, and no thread's "
         "shared-memory access races another's") {
  check_against_host(kTiled, kSanitizedShape);
  check_against_host(kBlocked, kSanitizedShape);
}

KIT_TEST(TilingBarriers, EveryBarrierReachedByTheWholeBlock, "tiling.4", synccheck, 2,
         "under synccheck, matmul_tiled and matmul_blocked get 65x63x66 right, and every thread "
         "of a block reaches each __syncthreads()") {
  check_against_host(kTiled, kSanitizedShape);
  check_against_host(kBlocked, kSanitizedShape);
}

// ---- Performance: 4096^3 against cuBLAS FP32 and the naive kernel --------------------------------

constexpr unsigned kPerfSize = 4096;
// Elements of C checked after each timed run, at random places (TilingPerf::measure).
constexpr int kTimedChecks = 4;

// What a perf test measures the student's kernel against.
enum class Ceiling { cublas, naive };

// The perf tests' one cuBLAS handle in a process, made ahead of the turn when the runner starts
// the process early (KIT_BEFORE_TURN): its creation is no part of any test's time.
Cublas& perf_cublas() {
  static Cublas handle;
  return handle;
}

void make_perf_cublas() { perf_cublas(); }

class TilingPerf : public kit::PerfTest {
 protected:
  // Times `kernel` against `ceiling` on 4096^3. The kernel's result is checked against cuBLAS
  // before timing, and after it: new random values in the same input buffers, the output poisoned,
  // and the very call that was timed run once more. A kernel that skips work it has "already
  // done", or serves a cached result, fails here. One cuBLAS handle (perf_cublas) serves the
  // checks and the cuBLAS ceiling.
  void measure(const Kernel& kernel, Ceiling ceiling, const std::string& key) {
    const Shape3 s{kPerfSize, kPerfSize, kPerfSize};
    Cublas& cublas = perf_cublas();
    auto rng = kit::test_random();
    Operands op(s, rng);
    ASSERT_TRUE(run_matches_cublas(kernel, op, cublas, " (before timing)"));

    kit::GuardedBuffer<float> c(std::size_t(s.m) * s.n);
    kit::DeviceBuffer<float> c_ceiling(std::size_t(s.m) * s.n);
    const double flops = 2.0 * s.m * s.n * s.k;
    // Every timed run multiplies new random matrices (kit::Timed::fresh: drawn on the device,
    // outside the time), and kTimedChecks elements of its C at random places are checked once it
    // has ended against sums computed here from the same draws (kit::Timed::check). A product
    // kept from an earlier call, or patched where the inputs changed, is wrong: every call must
    // multiply.
    kit::Drawn a_drawn, b_drawn;
    int runs = 0;
    bool reported = false;
    const kit::Timed student{
        kernel.name, flops,
        [&](cudaStream_t stream) {
          kernel.run(s.m, s.n, s.k, op.d_a.data(), op.d_b.data(), c.data(), stream);
        },
        [&](cudaStream_t) {
          a_drawn = kit::draw_floats(rng, op.d_a, -1.0f, 1.0f);
          b_drawn = kit::draw_floats(rng, op.d_b, -1.0f, 1.0f);
          ++runs;
        },
        [&] {
          for (int q = 0; q < kTimedChecks && !reported; ++q) {
            const auto row = static_cast<unsigned>(rng.uniform_int(0, s.m - 1));
            const auto col = static_cast<unsigned>(rng.uniform_int(0, s.n - 1));
            double exact = 0.0, abs_sum = 0.0;
            for (unsigned j = 0; j < s.k; ++j) {
              const double term = double(a_drawn.at(std::size_t(row) * s.k + j)) *
                                  b_drawn.at(std::size_t(j) * s.n + col);
              exact += term;
              abs_sum += std::fabs(term);
            }
            float got = 0.0f;
            KIT_CUDA_CHECK(cudaMemcpy(&got, c.data() + std::size_t(row) * s.n + col,
                                      sizeof got, cudaMemcpyDeviceToHost));
            const double allowed = 2.0 * gamma(s.k) * abs_sum * 1.0001 + 1e-30;
            if (std::fabs(double(got) - exact) <= allowed) continue;
            reported = true;
            ADD_FAILURE() << kernel.name << " during timing: in timed run " << runs
                          << " (warm-ups included) C(" << row << "," << col << ") = " << got
                          << ", expected " << exact << " (allowed error " << allowed
                          << "). Each timed run multiplies new random A and B; a result kept "
                          << "from an earlier call is not their product: every call must "
                          << "multiply. Owner: " << owner(kernel.ownership(), row, col) << "\n"
                          << kit::seed_note();
          }
        }};
    const kit::Timed bar =
        ceiling == Ceiling::cublas
            ? kit::Timed{"cuBLAS SGEMM (FP32, pedantic)", flops,
                         [&](cudaStream_t stream) {
                           cublas.sgemm(s.m, s.n, s.k, op.d_a.data(), op.d_b.data(), c_ceiling.data(), stream);
                         }}
            : kit::Timed{"naive coalesced matmul", flops, [&](cudaStream_t stream) {
                           lab04_grader::naive_matmul(s.m, s.n, s.k, op.d_a.data(), op.d_b.data(),
                                                      c_ceiling.data(), stream);
                         }};
    expect_ratio_at_least(student, bar, key, "TFLOP/s", 1e-12);

    op.refill(rng);
    const CublasReference ref = cublas_reference(op, cublas);
    c.poison();
    student.run(0);
    KIT_CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(matches_reference(kernel, op, ref, c,
                                  " (after timing: fresh inputs, same call as timed)"));
  }
};

KIT_BEFORE_TURN(TilingPerf, make_perf_cublas);

KIT_TEST(TilingPerf, TiledReachesAFractionOfCublas, "tiling.perf", perf, 4,
         "matmul_tiled at 4096^3 against cuBLAS FP32 (no TF32), same run") {
  measure(kTiled, Ceiling::cublas, "tiling.tiled_vs_cublas");
}

KIT_TEST(TilingPerf, TiledBeatsTheNaiveKernel, "tiling.perf", perf, 4,
         "matmul_tiled at 4096^3 against the naive coalesced one-thread-per-element kernel, same run") {
  measure(kTiled, Ceiling::naive, "tiling.tiled_vs_naive");
}

KIT_TEST(TilingPerf, BlockedRunsNearCublas, "tiling.perf", perf, 8,
         "matmul_blocked at 4096^3 against cuBLAS FP32 (no TF32), same run") {
  measure(kBlocked, Ceiling::cublas, "tiling.blocked_vs_cublas");
}

}  // namespace
