// What the grader and the benchmark of lab 07 measure besides the student's pipeline: each stage
// alone over the whole data, the serial version, the kernel's size, the ideal pipeline time; and
// the text timeline drawn from the times the student's events recorded.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <functional>
#include <iomanip>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kit/check.h"
#include "kit/stats.h"
#include "kit/timing.h"
#include "streams.h"

namespace lab07_grader {

/// Host time in milliseconds that `fn` takes, started with the device idle. The student's pipeline
/// runs on streams the grader cannot put events in, so it and the serial version it is compared
/// with are both timed this way: from the call to the moment the output is on the host.
inline double wall_ms(const std::function<void()>& fn) {
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  const auto start = std::chrono::steady_clock::now();
  fn();
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(stop - start).count();
}

/// The three stages, each timed alone over the whole data, indexed by lab07::Stage.
struct StageTimes {
  std::array<double, lab07::kStages> ms{};
  double sum() const { return ms[0] + ms[1] + ms[2]; }
  double max() const { return std::max({ms[0], ms[1], ms[2]}); }
};

/// The best a pipeline of `chunks` equal chunks can do when each stage has one engine of its own:
/// the slowest stage runs for its whole time, and the other stages add one chunk's worth each,
/// before it starts (filling the pipeline) or after it ends (draining it).
inline double ideal_ms(const StageTimes& stages, int chunks) {
  return stages.max() + (stages.sum() - stages.max()) / chunks;
}

/// The grader's own copy of the work: the student's host buffers, the grader's device buffers
/// and stream. Used to time the stages alone and the serial version.
struct Workload {
  const float* h_in = nullptr;
  float* h_out = nullptr;
  float* d_in = nullptr;
  float* d_out = nullptr;
  std::size_t n = 0;
  int iterations = 1;
  cudaStream_t stream = nullptr;

  std::size_t bytes() const { return n * sizeof(float); }
  void copy_in() const {
    KIT_CUDA_CHECK(cudaMemcpyAsync(d_in, h_in, bytes(), cudaMemcpyHostToDevice, stream));
  }
  void kernel() const {
    lab07::launch_work(d_in, d_out, n, iterations,
                       stream);
  }
  void copy_out() const {
    KIT_CUDA_CHECK(cudaMemcpyAsync(h_out, d_out, bytes(), cudaMemcpyDeviceToHost, stream));
  }
};

/// Each stage alone, over the whole data, timed with events.
inline StageTimes time_stages(const Workload& w, kit::EventTimer& timer) {
  StageTimes t;
  t.ms[lab07::kCopyIn] = timer.time(w.stream, [&] { w.copy_in(); });
  t.ms[lab07::kKernel] = timer.time(w.stream, [&] { w.kernel(); });
  t.ms[lab07::kCopyOut] = timer.time(w.stream, [&] { w.copy_out(); });
  return t;
}

/// The serial version: copy in, kernel, copy out of the whole data back to back on one stream,
/// timed like the student's pipeline (host time until the output is on the host).
inline double serial_ms(const Workload& w) {
  return wall_ms([&] {
    w.copy_in();
    w.kernel();
    w.copy_out();
    KIT_CUDA_CHECK(cudaStreamSynchronize(w.stream));
  });
}

/// Median of three event timings of the kernel with `iterations`.
inline double kernel_ms(Workload w, int iterations, kit::EventTimer& timer) {
  w.iterations = iterations;
  std::vector<double> times;
  for (int i = 0; i < 3; ++i) times.push_back(timer.time(w.stream, [&] { w.kernel(); }));
  return kit::summarize(times).median;
}

/// The iterations per element that make the kernel over the whole data take about `target_ms`.
/// The kernel's time is a fixed cost plus a cost per iteration: measured at two counts large
/// enough for the arithmetic (not memory) to decide, then checked and corrected once.
inline int calibrate_iterations(const Workload& w, double target_ms, kit::EventTimer& timer) {
  constexpr int kLow = 256, kHigh = 1024;
  kernel_ms(w, kLow, timer);  // warm-up: module load, clocks
  const double low = kernel_ms(w, kLow, timer), high = kernel_ms(w, kHigh, timer);
  const double per_iteration = std::max((high - low) / (kHigh - kLow), 1e-9);
  auto clamp = [](double k) { return static_cast<int>(std::clamp(std::lround(k), 1L, 1L << 20)); };
  int iterations = clamp(kLow + (target_ms - low) / per_iteration);
  const double got = kernel_ms(w, iterations, timer);
  if (got > 0 && std::fabs(got - target_ms) > 0.05 * target_ms)
    iterations = clamp(iterations * target_ms / got);
  return iterations;
}

/// The iterations that make the kernel take about as long as copying the data in (the copy-in
/// timed alone, median of three): the grader's way of making the three stages comparable.
inline int iterations_like_copy_in(const Workload& w, kit::EventTimer& timer) {
  std::vector<double> copy;
  for (int i = 0; i < 3; ++i) copy.push_back(timer.time(w.stream, [&] { w.copy_in(); }));
  return calibrate_iterations(w, kit::summarize(copy).median, timer);
}

/// Each stage alone, the median of `rounds` timings of each.
inline StageTimes median_stage_times(const Workload& w, kit::EventTimer& timer, int rounds = 3) {
  std::array<std::vector<double>, lab07::kStages> times;
  for (int r = 0; r < rounds; ++r) {
    const StageTimes t = time_stages(w, timer);
    for (int s = 0; s < lab07::kStages; ++s) times[s].push_back(t.ms[s]);
  }
  StageTimes median;
  for (int s = 0; s < lab07::kStages; ++s) median.ms[s] = kit::summarize(times[s]).median;
  return median;
}

/// How busy the pipeline kept each stage, and how much ran at once, from its timeline.
struct OverlapSummary {
  double span_ms = 0;                         ///< first start to last end
  std::array<double, lab07::kStages> busy{};  ///< fraction of the span some chunk was in the stage
  double overlapped = 0;  ///< fraction of the span with two or more stages running
};

inline OverlapSummary summarize_overlap(const lab07::Timeline& timeline) {
  OverlapSummary s;
  if (timeline.empty()) return s;
  double first = INFINITY, last = -INFINITY;
  std::vector<std::pair<double, int>> edges;  // (time, +1 start / -1 end), all stages
  std::array<std::vector<std::pair<double, double>>, lab07::kStages> intervals;
  for (const lab07::ChunkTimes& chunk : timeline)
    for (int st = 0; st < lab07::kStages; ++st) {
      const double a = chunk.stage[st].start_ms, b = chunk.stage[st].end_ms;
      if (!(b > a)) continue;  // empty, or NaN
      first = std::min(first, a);
      last = std::max(last, b);
      intervals[st].push_back({a, b});
      edges.push_back({a, +1});
      edges.push_back({b, -1});
    }
  if (!(last > first)) return s;
  s.span_ms = last - first;
  for (int st = 0; st < lab07::kStages; ++st) {  // length of the union of each stage's intervals
    auto& iv = intervals[st];
    std::sort(iv.begin(), iv.end());
    double covered = 0, end = -INFINITY;
    for (const auto& [a, b] : iv) {
      if (a > end) {
        covered += b - a;
        end = b;
      } else if (b > end) {
        covered += b - end;
        end = b;
      }
    }
    s.busy[st] = covered / s.span_ms;
  }
  std::sort(edges.begin(),
            edges.end());  // at equal times ends (-1) come first: touching is not overlap
  int running = 0;
  double previous = first, overlapped = 0;
  for (const auto& [t, step] : edges) {
    if (running >= 2) overlapped += t - previous;
    running += step;
    previous = t;
  }
  s.overlapped = overlapped / s.span_ms;
  return s;
}

/// The letter of each stage in the timeline.
constexpr std::array<char, lab07::kStages> kStageLetters = {'H', 'K', 'D'};

/// The timeline as text, one row per stream (chunk c ran on stream c % streams), one character per
/// `span / width` of time: H while the chunk copies in, K while its kernel runs, D while it copies
/// out, a space while the stream is idle. For example
///
///     stream 0 |HHHHKKKKDDDD        HHHHKKKKDDDD    |
///     stream 1 |    HHHHKKKKDDDD        HHHHKKKKDDDD|
inline std::string render_timeline(const lab07::Timeline& timeline, int streams, int width = 96) {
  std::ostringstream out;
  double first = INFINITY, last = -INFINITY;
  for (const lab07::ChunkTimes& chunk : timeline)
    for (const lab07::StageTime& t : chunk.stage)
      if (std::isfinite(t.start_ms) && std::isfinite(t.end_ms) && t.end_ms >= t.start_ms) {
        first = std::min(first, static_cast<double>(t.start_ms));
        last = std::max(last, static_cast<double>(t.end_ms));
      }
  if (timeline.empty() || streams < 1 || !(last > first)) {
    out << "  (no timeline: the pipeline recorded no stage with a start and a later end)\n";
    return out.str();
  }
  const double cell = (last - first) / width;
  out << std::fixed << std::setprecision(3);
  out << "  " << timeline.size() << " chunks over " << streams << " stream"
      << (streams == 1 ? "" : "s") << ", " << (last - first)
      << " ms from the first copy-in to the last copy-out; one character = " << cell
      << " ms; H copy-in, K kernel, D copy-out\n";
  for (int s = 0; s < streams; ++s) {
    std::string row(static_cast<std::size_t>(width), ' ');
    for (int j = 0; j < width; ++j) {
      const double a = first + j * cell, b = a + cell;
      double best = 0;
      for (std::size_t c = static_cast<std::size_t>(s); c < timeline.size();
           c += static_cast<std::size_t>(streams))
        for (int st = 0; st < lab07::kStages; ++st) {
          const lab07::StageTime& t = timeline[c].stage[st];
          const double covered = std::min(b, static_cast<double>(t.end_ms)) -
                                 std::max(a, static_cast<double>(t.start_ms));
          if (covered > best) {  // false for NaN
            best = covered;
            row[static_cast<std::size_t>(j)] = kStageLetters[static_cast<std::size_t>(st)];
          }
        }
    }
    out << "  stream " << std::setw(2) << s << " |" << row << "|\n";
  }
  // The time axis under the rows: 0 under the first column, the span under the last.
  std::ostringstream span;
  span << std::fixed << std::setprecision(2) << (last - first) << " ms";
  const std::size_t row_start = 13;  // "  stream NN |"
  std::string axis(row_start + static_cast<std::size_t>(width) + 1, ' ');
  axis.replace(row_start, 4, "0 ms");
  axis.replace(axis.size() - span.str().size(), span.str().size(), span.str());
  out << axis << "\n";
  const OverlapSummary o = summarize_overlap(timeline);
  out << std::setprecision(0) << "  busy: copy-in " << 100 * o.busy[0] << "%, kernel "
      << 100 * o.busy[1] << "%, copy-out " << 100 * o.busy[2]
      << "% of the time; two or more stages at once " << 100 * o.overlapped << "% of the time\n";
  if (o.overlapped < 0.05)
    out << "  no two stages ran at the same time: the chunks ran one after another\n";
  return out.str();
}

}  // namespace lab07_grader
