// Benchmark of lab 07: your pipeline over 2^26 floats for several chunk and stream counts, with
// the two ratios the performance step grades (overlap_vs_ideal, speedup_vs_serial). Use it to
// choose perf_config(); the timeline of that choice is printed first.
//
//   build/bin/bench_07_streams              your pipeline
//   build/bin/bench_07_streams_reference    the reference solution's
//   build/bin/bench_07_streams --benchmark_filter='BM_Pipeline/8/'   only 8 chunks
//   build/bin/bench_07_streams --kit_timeline_csv=FILE
//       no benchmark: a serial and a pipelined run, each stage's start and end
//       as the pipeline's events recorded them, as CSV (write_timeline_csv)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
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

// ---- --kit_timeline_csv=FILE: the timeline of the docs' figure ----

// Of `runs` runs of `chunks` chunks over `streams` streams (after a warm-up),
// the one whose span, first start to last end, is the median.
lab07::Timeline typical_run(int chunks, int streams, int runs = 5) {
  Setup& s = setup();
  lab07::Pipeline pipeline(s.n, streams);
  auto run = [&] {
    return pipeline.run(s.h_in.data(), s.h_out.data(), s.n, chunks,
                        s.w.iterations);
  };
  run();  // warm-up
  std::vector<std::pair<double, lab07::Timeline>> by_span;
  for (int r = 0; r < runs; ++r) {
    lab07::Timeline timeline = run();
    const double span = lab07_grader::summarize_overlap(timeline).span_ms;
    by_span.emplace_back(span, std::move(timeline));
  }
  std::sort(by_span.begin(), by_span.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return by_span[by_span.size() / 2].second;
}

constexpr std::array<const char*, lab07::kStages> kStageNames = {
    "copy-in", "kernel", "copy-out"};

// Writes FILE as CSV, one row per stage of each chunk:
//   run,stream,chunk,stage,start_ms,end_ms
// run "serial": perf_config()'s chunks on one stream; run "pipelined": the
// same chunks over perf_config()'s streams. Each is a typical run
// (typical_run()); its times are in ms after its first copy-in started, read
// from the pipeline's own events. A last row, run "ideal" and stage "bound",
// ends at ideal_ms(): each stage's time is the serial run's, all chunks.
void write_timeline_csv(const std::string& path) {
  const lab07::PipelineConfig config = lab07::perf_config();
  const lab07::Timeline serial = typical_run(config.chunks, 1);
  const lab07::Timeline pipelined = typical_run(config.chunks, config.streams);
  StageTimes stages;
  for (const lab07::ChunkTimes& chunk : serial)
    for (int st = 0; st < lab07::kStages; ++st)
      stages.ms[st] += chunk.stage[st].end_ms - chunk.stage[st].start_ms;
  const double ideal = lab07_grader::ideal_ms(stages, config.chunks);

  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path);
  out << "run,stream,chunk,stage,start_ms,end_ms\n";
  auto rows = [&](const char* run, const lab07::Timeline& timeline,
                  int streams) {
    for (std::size_t c = 0; c < timeline.size(); ++c)
      for (int st = 0; st < lab07::kStages; ++st)
        out << run << ',' << c % static_cast<std::size_t>(streams) << ','
            << c << ',' << kStageNames[static_cast<std::size_t>(st)] << ','
            << timeline[c].stage[st].start_ms << ','
            << timeline[c].stage[st].end_ms << '\n';
  };
  rows("serial", serial, 1);
  rows("pipelined", pipelined, config.streams);
  out << "ideal,,,bound,0," << ideal << '\n';
  if (!out.flush()) throw std::runtime_error("cannot write " + path);
  std::printf("serial, one stream:\n%s\npipelined, perf_config():\n%s\n"
              "ideal %.3f ms; wrote %s\n",
              lab07_grader::render_timeline(serial, 1).c_str(),
              lab07_grader::render_timeline(pipelined, config.streams).c_str(),
              ideal, path.c_str());
}

// The value of --kit_timeline_csv=FILE, taken out of argv; "" without it.
std::string take_timeline_flag(int& argc, char** argv) {
  constexpr const char* kFlag = "--kit_timeline_csv=";
  std::string value;
  int kept = 0;
  for (int i = 0; i < argc; ++i) {
    if (i > 0 && std::strncmp(argv[i], kFlag, std::strlen(kFlag)) == 0)
      value = argv[i] + std::strlen(kFlag);
    else
      argv[kept++] = argv[i];
  }
  argc = kept;
  argv[argc] = nullptr;
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  kit::BenchHooks hooks;
  hooks.on_device = [](const kit::DeviceInfo& device) {
    std::printf("%s; copy engines (asyncEngineCount): %d\n", kit::summary(device).c_str(),
                device.copy_engines);
  };
  const std::string timeline_csv = take_timeline_flag(argc, argv);
  if (timeline_csv.empty()) {
    // Throws, e.g., for a stub refusing its buffers.
    hooks.before_run = print_perf_config_timeline;
  } else {
    hooks.before_run = [timeline_csv] { write_timeline_csv(timeline_csv); };
    hooks.only_before_run = true;
  }
  return kit::bench_main(argc, argv, hooks);
}
