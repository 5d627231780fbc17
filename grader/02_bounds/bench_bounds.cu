// Benchmark of lab 02: the step-1 kernel, the grid-stride kernel with grids of several sizes, and
// scale_shift_fast, each with its throughput and its ratio to the device copy bandwidth (the
// ratio the performance step grades, for scale_shift_fast on 2^26 elements).
//
//   build/bin/bench_02_bounds             your kernels
//   build/bin/bench_02_bounds_reference   the reference solution's
#include <benchmark/benchmark.h>

#include <functional>

#include "bounds.h"
#include "kit/bench_main.h"
#include "kit/buffers.h"
#include "kit/random.h"
#include "kit/timing.h"

namespace {

using Launcher =
    std::function<void(unsigned n, const float* in, float* out, cudaStream_t stream)>;

// Times `launcher` on n elements (L2 flushed before each run) and reports GB/s, counting one float
// read and one written per element, next to the copy bandwidth of the same buffers.
void time_launcher(benchmark::State& state, unsigned n, const Launcher& launcher) {
  kit::Random rng(1);
  kit::DeviceBuffer<float> in(rng.floats(n, -1, 1)), out(n), copy(n);
  const kit::Timed copy_run = kit::device_copy_ceiling(in.data(), copy.data(), n * sizeof(float));
  const double ceiling = copy_run.work / (kit::median_ms(copy_run.run) * 1e-3);

  // The median, as the grader uses: one slow iteration should not move the reported rate.
  const double seconds = kit::bench_run_seconds(
      state, [&](cudaStream_t stream) { launcher(n, in.data(), out.data(), stream); });
  const double rate = 2.0 * sizeof(float) * n / seconds;
  state.counters["GB/s"] = rate * 1e-9;
  state.counters["copy_GB/s"] = ceiling * 1e-9;
  state.counters["copy_ratio"] = rate / ceiling;
}

// Step 1: one thread per element, ceil_div(n, 256) blocks.
void BM_ScaleShift(benchmark::State& state) {
  time_launcher(state, static_cast<unsigned>(state.range(0)),
                [](unsigned n, const float* in, float* out, cudaStream_t stream) {
                  lab02::scale_shift(n, 1.5f, 0.5f, in, out, stream);
                });
}

// Step 3 with a forced grid: range(1) blocks (0: the launcher's default grid).
void BM_GridStride(benchmark::State& state) {
  const auto blocks = static_cast<unsigned>(state.range(1));
  time_launcher(state, static_cast<unsigned>(state.range(0)),
                [blocks](unsigned n, const float* in, float* out, cudaStream_t stream) {
                  lab02::scale_shift_grid_stride(n, 1.5f, 0.5f, in, out, blocks, stream);
                });
}

// The performance step.
void BM_ScaleShiftFast(benchmark::State& state) {
  time_launcher(state, static_cast<unsigned>(state.range(0)),
                [](unsigned n, const float* in, float* out, cudaStream_t stream) {
                  lab02::scale_shift_fast(n, 1.5f, 0.5f, in, out, stream);
                });
}

BENCHMARK(BM_ScaleShift)->UseManualTime()->Unit(benchmark::kMicrosecond)->Arg(1 << 26);
// Grids of 132 blocks (one per SM on an H100), 1056 (a full GPU: 8 blocks of 256 threads per SM),
// 8448 (eight waves) and the default.
BENCHMARK(BM_GridStride)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->ArgNames({"n", "blocks"})
    ->Args({1 << 26, 132})
    ->Args({1 << 26, 1056})
    ->Args({1 << 26, 8448})
    ->Args({1 << 26, 0});
BENCHMARK(BM_ScaleShiftFast)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->Arg(1 << 24)
    ->Arg(1 << 26);

}  // namespace

KIT_BENCHMARK_MAIN();
