/// @file bench_main.h
/// @brief What every lab's Google Benchmark program shares: its main() and its timing loops.
///
/// A lab benchmark registers its benchmarks as usual and ends with one line:
///
/// @code
/// KIT_BENCHMARK_MAIN();
/// @endcode
///
/// On a machine without a usable GPU the program prints `not run:` and why (kit::summary(), e.g.
/// `no CUDA device (no NVIDIA driver found)`) and exits 0, like the graders' GPU tests. Otherwise
/// it names the GPU in the benchmark's context (`gpu: ...`), runs the benchmarks, and turns an
/// exception thrown by one of them (a CUDA error, an unfinished stub that refuses its input) into
/// `benchmark stopped: <what>` on stderr and exit code 1, instead of a crash.
///
/// Inside a benchmark, time each iteration with bench_time_ms() (one kit::median_ms() measurement
/// per iteration) or bench_run_seconds() (one run per iteration), so every benchmark times the
/// way the graders do: CUDA events, the L2 cache flushed before each run, medians.
#pragma once

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <exception>
#include <functional>
#include <vector>

#include "kit/device_info.h"
#include "kit/stats.h"
#include "kit/timing.h"

namespace kit {

/// Optional lab-specific additions to bench_main().
struct BenchHooks {
  /// Called once a GPU is found, before the command line is read: for a line about the GPU that
  /// the lab needs (lab 07 prints its copy engines).
  std::function<void(const DeviceInfo&)> on_device;
  /// Called after the command line is read, just before the benchmarks run (lab 07 prints the
  /// timeline of its perf configuration). An exception stops the program as one from a benchmark
  /// does.
  std::function<void()> before_run;
  /// True: before_run is the whole program and no benchmark runs (lab 07's
  /// --kit_timeline_csv measures a timeline instead).
  bool only_before_run = false;
};

/// The main() of a lab benchmark (see the file comment): returns 0 when the benchmarks ran or no
/// GPU is usable, 1 when a benchmark threw.
inline int bench_main(int argc, char** argv, const BenchHooks& hooks = {}) {
  const DeviceInfo device = query_device();
  if (!device.available) {
    std::printf("not run: %s\n", summary(device).c_str());
    return 0;
  }
  if (hooks.on_device) hooks.on_device(device);
  benchmark::AddCustomContext("gpu", summary(device));
  benchmark::Initialize(&argc, argv);
  try {
    if (hooks.before_run) hooks.before_run();
    if (!hooks.only_before_run) benchmark::RunSpecifiedBenchmarks();
  } catch (const std::exception& e) {  // e.g. an unfinished stub whose launch fails
    std::fprintf(stderr, "benchmark stopped: %s\n", e.what());
    return 1;
  }
  benchmark::Shutdown();
  return 0;
}

/// Each benchmark iteration is one kit::median_ms() measurement of `run` (`samples` runs after
/// `warmup`, the L2 flushed before each), reported as the iteration's manual time
/// (register the benchmark with UseManualTime()). Returns the last iteration's median in
/// milliseconds.
inline double bench_time_ms(benchmark::State& state, const std::function<void(cudaStream_t)>& run,
                            int samples = 21, int warmup = 3) {
  double ms = 0;
  for (auto _ : state) {
    ms = median_ms(run, samples, warmup);
    state.SetIterationTime(ms * 1e-3);
  }
  return ms;
}

/// Each benchmark iteration is one run of `run` on the default stream, timed with CUDA events
/// after the L2 is flushed, and reported as the iteration's manual time (register the benchmark
/// with UseManualTime()). Returns the median over the iterations, in seconds, so that one slow
/// iteration does not move the rate a benchmark derives from it.
inline double bench_run_seconds(benchmark::State& state,
                                const std::function<void(cudaStream_t)>& run) {
  L2Flusher flusher;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<double> seconds;
  for (auto _ : state) {
    flusher.flush(0);
    cudaEventRecord(start);
    run(0);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    state.SetIterationTime(ms * 1e-3);
    seconds.push_back(ms * 1e-3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return summarize(seconds).median;
}

}  // namespace kit

/// Defines main() as kit::bench_main() without hooks: the last line of a lab benchmark, written
/// `KIT_BENCHMARK_MAIN();` (the trailing declaration takes the semicolon).
#define KIT_BENCHMARK_MAIN()                                               \
  int main(int argc, char** argv) { return ::kit::bench_main(argc, argv); } \
  int main(int, char**)
