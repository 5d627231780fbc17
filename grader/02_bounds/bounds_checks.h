// What lab 02's graders share (test_bounds.cu and the hidden tests in hidden/): the tolerances,
// how launch configurations read in messages, and the checks that run one of the lab's launchers
// on a fresh random case and compare every element, the guards around the output and the input.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <algorithm>
#include <string>
#include <vector>

#include "bounds.h"
#include "kit/check.h"
#include "kit/device_check.h"
#include "kit/remote.h"
#include "kit/test.h"

namespace lab02_grader {

using kit::Tolerance;

// a in [-2, 2], b and the inputs in [-1, 1]: results are below 3 in magnitude, where one float
// rounding is at most 2^-22 ~ 2.4e-7. a * x + b rounds once (fused) or twice, so 1e-6 admits both,
// while an element computed from the wrong input, or updated twice, is off by ~1 on average.
inline const Tolerance kScaleShiftTolerance{1e-6, 0.0,
                                            "a * x + b below 3 in magnitude: one or two roundings "
                                            "of at most 2.4e-7"};

// in + u * v with every value in [-1, 1]: results below 2 in magnitude, one or two roundings of at
// most 2.4e-7 each.
inline const Tolerance kRank1Tolerance{1e-6, 0.0,
                                       "in + u * v below 2 in magnitude: one or two roundings of "
                                       "at most 2.4e-7"};

inline std::string size_name(const ::testing::TestParamInfo<unsigned>& info) {
  return "n_" + std::to_string(info.param);
}

inline std::string dims(const dim3& d) {
  return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}

inline std::string describe_config(const dim3& grid, const dim3& block) {
  return "grid " + dims(grid) + " x block " + dims(block);
}

// ---- Steps 1, 3 and perf: the 1D scale-shift ----------------------------------------------------

// Random a, b and input of size n, and the expected a * in + b (computed in double, rounded once).
struct ScaleShiftCase {
  float a = 0, b = 0;
  std::vector<float> in, expected;
};

inline ScaleShiftCase make_scale_shift_case(unsigned n) {
  auto rng = kit::test_random();
  ScaleShiftCase c;
  c.a = rng.uniform(-2, 2);
  c.b = rng.uniform(-1, 1);
  c.in = rng.floats(n, -1, 1);
  c.expected.resize(n);
  for (unsigned i = 0; i < n; ++i) c.expected[i] = static_cast<float>(double(c.a) * c.in[i] + c.b);
  return c;
}

// Runs `launcher` (one of the lab's 1D launchers, wrapped to take (n, a, b, in, out, stream)) on a
// fresh case of size n and checks every element, the guards and the input, which sits at the
// start or at the end of its allocation (`input`, see kit::Placement). The launcher gets a stream
// that is busy when it is called: its kernel must queue behind that work, not run at once
// (kit::remote::queued_on_stream).
// The expected a*x+b computed by the grader on the device as the CPU does (in double, rounded
// once to float; no fused multiply-add): the perf test's, and the largest sizes' below.
static __global__ void grader_scale_shift_expected(unsigned n, float a, float b, const float* in,
                                                   float* out) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = static_cast<float>(__dadd_rn(__dmul_rn(double(a), double(in[i])), double(b)));
}

// Fills `expected` with a*in+b on the device and compares a sample with the CPU's rule.
inline void scale_shift_expected_on_device(unsigned n, float a, float b, const kit::Drawn& in,
                                           const kit::DeviceBuffer<float>& d_in,
                                           kit::DeviceBuffer<float>& expected, kit::Random& rng) {
  grader_scale_shift_expected<<<kit::kDeviceCheckBlocks, kit::kDeviceCheckThreads>>>(
      n, a, b, d_in.data(), expected.data());
  KIT_CHECK_LAUNCH("grader_scale_shift_expected");
  kit::spot_check(expected, rng, [&](std::size_t i) {
    return static_cast<float>(double(a) * in.at(i) + b);
  });
}

// Sizes from which check_scale_shift draws the input, computes the expected values and compares
// on the device (kit/device_check.h): the same values and messages, without 256 MiB crossing to
// the CPU and back (2^26 + 1: about a second per check on an H100). From 2^20, not 2^24: the
// hidden test's 2^24 - 1 elements took 0.9 s to draw on the host (H100 trace, session 20).
constexpr unsigned kOnDeviceFrom = 1u << 20;

template <class Launcher>
void check_scale_shift(Launcher launcher, unsigned n,
                       kit::Placement input = kit::Placement::start) {
  if (n >= kOnDeviceFrom) {
    // make_scale_shift_case's draws, in its order: a, b, then the input.
    auto rng = kit::test_random();
    const float a = rng.uniform(-2, 2), b = rng.uniform(-1, 1);
    kit::DeviceBuffer<float> d_in(n, input);
    auto d_expected = kit::DeviceBuffer<float>::judge_only(n);
    const kit::Drawn in = kit::draw_floats(rng, d_in, -1, 1);
    scale_shift_expected_on_device(n, a, b, in, d_in, d_expected, rng);
    const kit::DeviceBuffer<float> original = kit::device_copy(d_in);
    kit::GuardedBuffer<float> d_out(n);
    kit::Launch launch;
    kit::remote::expect_queued_on_stream(
        d_out.data(), std::size_t{n} * sizeof(float),
        [&](cudaStream_t stream) { launch = launcher(n, a, b, d_in.data(), d_out.data(), stream); });
    EXPECT_TRUE(kit::output_matches("out", d_expected, d_out, kScaleShiftTolerance,
                                    kit::Shape::d1(n), launch));
    EXPECT_TRUE(kit::input_unchanged("in", d_in, original));
    return;
  }
  const ScaleShiftCase c = make_scale_shift_case(n);
  kit::DeviceBuffer<float> d_in(c.in, input);
  kit::GuardedBuffer<float> d_out(n);
  kit::Launch launch;
  kit::remote::expect_queued_on_stream(
      d_out.data(), std::size_t{n} * sizeof(float),
      [&](cudaStream_t stream) {
        launch = launcher(n, c.a, c.b, d_in.data(), d_out.data(), stream);
      });
  EXPECT_TRUE(kit::output_matches("out", c.expected, d_out, kScaleShiftTolerance, kit::Shape::d1(n),
                                  launch));
  EXPECT_TRUE(kit::input_unchanged("in", d_in, c.in));
}

inline std::string grid_name(unsigned blocks) {
  return blocks == 0 ? std::string("the default grid") : std::to_string(blocks) + "-block grid";
}

// scale_shift_grid_stride over n elements with `blocks` blocks (0: its default grid), checked as
// check_scale_shift does; also checks that a forced grid is launched as given, and that the
// default grid has no more blocks than the elements need. Returns the launch it used.
inline kit::Launch check_grid_stride(unsigned n, unsigned blocks,
                                     kit::Placement input = kit::Placement::start) {
  kit::Launch used;
  check_scale_shift(
      [&](unsigned count, float a, float b, const float* in, float* out, cudaStream_t stream) {
        used = lab02::scale_shift_grid_stride(count, a, b, in, out, blocks, stream);
        return used;
      },
      n, input);
  if (blocks > 0) {
    EXPECT_EQ(used.grid.x, blocks) << "a forced grid must be launched as given";
  } else {
    EXPECT_LE(used.grid.x, lab02::ceil_div(n, lab02::kBlock1d))
        << "the default grid has more blocks than elements need";
  }
  return used;
}

// scale_shift_grid_stride in place (out == in) over n elements with `blocks` blocks (0: its
// default grid): every element must be updated exactly once. `several` says how, with this grid,
// an element comes to get several threads (the end of a failure's message).
inline void check_grid_stride_in_place(
    unsigned n, unsigned blocks,
    const std::string& several =
        "a loop that steps by less than the whole grid hands some elements to several threads") {
  const ScaleShiftCase c = make_scale_shift_case(n);
  // The data sits inside the guards: poisoned first (arming the guards), then overwritten.
  kit::GuardedBuffer<float> d_x(n);
  KIT_CUDA_CHECK(cudaMemcpy(d_x.data(), c.in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  const kit::Launch launch =
      lab02::scale_shift_grid_stride(n, c.a, c.b, d_x.data(), d_x.data(), blocks);
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  // An element left as it was, or updated twice (a*(a*x+b)+b), is wrong here.
  EXPECT_TRUE(kit::output_matches("x (updated in place)", c.expected, d_x, kScaleShiftTolerance,
                                  kit::Shape::d1(n), launch))
      << "each element must be handled by exactly one thread: " << several;
}

// ---- Step 2: the rank-1 update ------------------------------------------------------------------

struct Shape2 {
  unsigned rows, cols;
};

inline std::string shape_name(const ::testing::TestParamInfo<Shape2>& info) {
  return std::to_string(info.param.rows) + "x" + std::to_string(info.param.cols);
}

// rank1_update on a fresh random rows x cols case: every element, the guards and the inputs, which
// sit at the start or at the end of their allocations (`inputs`, see kit::Placement).
inline void check_rank1_update(unsigned rows, unsigned cols,
                               kit::Placement inputs = kit::Placement::start) {
  auto rng = kit::test_random();
  const auto in = rng.floats(std::size_t(rows) * cols, -1, 1);
  const auto u = rng.floats(rows, -1, 1), v = rng.floats(cols, -1, 1);
  std::vector<float> expected(in.size());
  for (unsigned r = 0; r < rows; ++r)
    for (unsigned c = 0; c < cols; ++c) {
      const std::size_t i = std::size_t(r) * cols + c;
      expected[i] = static_cast<float>(double(in[i]) + double(u[r]) * v[c]);
    }

  kit::DeviceBuffer<float> d_in(in, inputs), d_u(u, inputs), d_v(v, inputs);
  kit::GuardedBuffer<float> d_out(in.size());
  kit::Launch launch;
  kit::remote::expect_queued_on_stream(
      d_out.data(), in.size() * sizeof(float), [&](cudaStream_t stream) {
        launch = lab02::rank1_update(rows, cols, d_in.data(), d_u.data(), d_v.data(),
                                     d_out.data(), stream);
      });
  EXPECT_TRUE(kit::output_matches("out", expected, d_out, kRank1Tolerance,
                                  kit::Shape::d2(rows, cols), launch));
  EXPECT_TRUE(kit::input_unchanged("in", d_in, in));
  EXPECT_TRUE(kit::input_unchanged("u", d_u, u));
  EXPECT_TRUE(kit::input_unchanged("v", d_v, v));
}

// ---- Step 4: launch configurations --------------------------------------------------------------

struct Config {
  dim3 grid, block;
};

struct InvalidConfig {
  dim3 grid, block;
  std::string culprit;                // "grid" or "block": the message must name it
  std::vector<std::string> must_say;  // the value and the limit (or "zero")
  std::string why;
};

// validate_launch must return normally for a valid configuration.
inline void expect_accepted(const Config& c) {
  try {
    lab02::validate_launch(c.grid, c.block);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "validate_launch rejected the valid " << describe_config(c.grid, c.block)
                  << ": " << e.what();
  }
}

// validate_launch must throw std::invalid_argument naming the culprit, the value and the limit.
inline void expect_rejected(const InvalidConfig& c) {
  const std::string config = describe_config(c.grid, c.block);
  try {
    lab02::validate_launch(c.grid, c.block);
    ADD_FAILURE() << "validate_launch accepted " << config << " (" << c.why << ")";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    std::vector<std::string> missing;
    if (message.find(c.culprit) == std::string::npos) missing.push_back(c.culprit);
    for (const std::string& word : c.must_say)
      if (message.find(word) == std::string::npos) missing.push_back(word);
    if (!missing.empty()) {
      std::string list;
      for (const std::string& word : missing) list += (list.empty() ? "\"" : ", \"") + word + "\"";
      ADD_FAILURE() << "validate_launch rejected " << config << " (" << c.why
                    << ") with the message \"" << message << "\", which does not say " << list
                    << ": name the " << c.culprit << ", the value and the limit";
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "validate_launch rejected " << config << " with a different exception ("
                  << e.what() << "); throw std::invalid_argument";
  }
}

// The grader's own rule: a launch is valid when no dimension is 0, the block holds at most
// kMaxThreadsPerBlock threads, and each dimension is within its limit.
inline bool valid_launch(dim3 grid, dim3 block) {
  const unsigned b[3] = {block.x, block.y, block.z}, g[3] = {grid.x, grid.y, grid.z};
  if (1ull * block.x * block.y * block.z > lab02::kMaxThreadsPerBlock) return false;
  for (int axis = 0; axis < 3; ++axis)
    if (b[axis] == 0 || g[axis] == 0 || b[axis] > lab02::kMaxBlockDim[axis] ||
        g[axis] > lab02::kMaxGridDim[axis])
      return false;
  return true;
}

// One dimension drawn for a random launch: often at a limit or next to it, sometimes 0, small,
// or anywhere up to twice the limit.
template <class Rng>
unsigned random_dimension(Rng& rng, unsigned limit) {
  const long long l = limit;
  switch (rng.uniform_int(0, 5)) {
    case 0: return static_cast<unsigned>(rng.uniform_int(l - 2, std::min(l + 2, 4294967295ll)));
    case 1: return static_cast<unsigned>(rng.uniform_int(1, 8));
    case 2: return rng.uniform_int(0, 9) == 0 ? 0u : 1u;
    case 3: return static_cast<unsigned>(rng.uniform_int(1, std::min(2 * l, 4294967295ll)));
    default: return static_cast<unsigned>(rng.uniform_int(1, std::min(l, 64ll)));
  }
}

}  // namespace lab02_grader
