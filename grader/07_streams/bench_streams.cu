// Benchmark of lab 07: your pipeline over 2^26 floats for several chunk and stream counts, with
// the two ratios the performance step grades (overlap_vs_ideal, speedup_vs_serial). Use it to
// choose perf_config(); the timeline of that choice is printed first.
//
//   build/bin/bench_07_streams              your pipeline
//   build/bin/bench_07_streams_reference    the reference solution's
//   build/bin/bench_07_streams --benchmark_filter='BM_Pipeline/8/'   only 8 chunks
#include <benchmark/benchmark.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "kit/bench_main.h"
#include "kit/buffers.h"
#include "kit/device_info.h"
#include "kit/random.h"
#include "kit/stats.h"
#include "pipeline_timing.h"
#include "streams.h"

namespace {

using kit::EventTimer;
using lab07_grader::StageTimes;
using lab07_grader::Workload;

/// What every benchmark shares: 2^26 floats each way, pinned, and the kernel sized like the copy.
struct Setup {
  static constexpr std::size_t n = std::size_t{1} << 26;
  kit::PinnedBuffer<float> h_in{n}, h_out{n};
  kit::DeviceBuffer<float> d_in{n}, d_out{n};
  lab07::Stream stream;
  EventTimer timer;
  Workload w;

  Setup() {
    kit::Random rng(7);
    for (std::size_t i = 0; i < n; ++i) h_in[i] = rng.uniform(-1, 1);
    w = Workload{h_in.data(), h_out.data(), d_in.data(), d_out.data(), n, 1, stream};
    w.iterations = lab07_grader::iterations_like_copy_in(w, timer);
  }
};

Setup& setup() {
  static Setup s;
  return s;
}

void BM_Pipeline(benchmark::State& state) {
  const auto chunks = static_cast<int>(state.range(0));
  const auto streams = static_cast<int>(state.range(1));
  Setup& s = setup();
  lab07::Pipeline pipeline(s.n, streams);
  pipeline.run(s.h_in.data(), s.h_out.data(), s.n, chunks, s.w.iterations);  // warm-up
  std::vector<double> pipeline_ms, overlap, speedup;
  for (auto _ : state) {
    const double ms = lab07_grader::wall_ms(
        [&] { pipeline.run(s.h_in.data(), s.h_out.data(), s.n, chunks, s.w.iterations); });
    state.SetIterationTime(ms * 1e-3);
    const StageTimes stages = lab07_grader::time_stages(s.w, s.timer);
    pipeline_ms.push_back(ms);
    overlap.push_back(lab07_grader::ideal_ms(stages, chunks) / ms);
    speedup.push_back(lab07_grader::serial_ms(s.w) / ms);
  }
  // Medians, as the grader uses.
  state.counters["ms"] = kit::summarize(pipeline_ms).median;
  state.counters["overlap_vs_ideal"] = kit::summarize(overlap).median;
  state.counters["speedup_vs_serial"] = kit::summarize(speedup).median;
}

BENCHMARK(BM_Pipeline)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(11)
    ->ArgNames({"chunks", "streams"})
    ->ArgsProduct({{1, 2, 4, 8, 16, 32, 64}, {1, 2, 3, 4, 8}});

// The timeline of perf_config(), as the performance step prints it.
void print_perf_config_timeline() {
  const lab07::PipelineConfig config = lab07::perf_config();
  Setup& s = setup();
  lab07::Pipeline pipeline(s.n, config.streams);
  pipeline.run(s.h_in.data(), s.h_out.data(), s.n, config.chunks, s.w.iterations);  // warm-up
  const lab07::Timeline timeline =
      pipeline.run(s.h_in.data(), s.h_out.data(), s.n, config.chunks, s.w.iterations);
  const StageTimes stages = lab07_grader::time_stages(s.w, s.timer);
  std::printf(
      "perf_config(): %d chunks over %d streams; kernel of %d iterations per element; "
      "stages alone: copy-in %.2f, kernel %.2f, copy-out %.2f ms; ideal %.2f ms\n%s\n",
      config.chunks, config.streams, s.w.iterations, stages.ms[0], stages.ms[1], stages.ms[2],
      lab07_grader::ideal_ms(stages, config.chunks),
      lab07_grader::render_timeline(timeline, config.streams).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  kit::BenchHooks hooks;
  hooks.on_device = [](const kit::DeviceInfo& device) {
    std::printf("%s; copy engines (asyncEngineCount): %d\n", kit::summary(device).c_str(),
                device.copy_engines);
  };
  hooks.before_run = print_perf_config_timeline;  // throws, e.g., for a stub refusing its buffers
  return kit::bench_main(argc, argv, hooks);
}
