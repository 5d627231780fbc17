#include "kit/timing.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <sstream>
#include <thread>
#include <vector>

#include <unistd.h>

#include "kit/remote.h"

namespace kit {

namespace remote {
namespace {
thread_local TimedScope* innermost_scope = nullptr;
}  // namespace
TimedScope::TimedScope() : previous_(innermost_scope) { innermost_scope = this; }
TimedScope::~TimedScope() { innermost_scope = previous_; }
TimedScope* TimedScope::current() { return innermost_scope; }
}  // namespace remote

namespace {

// Milliseconds of one run of `run` on `stream`. The runs are the student's and the ceiling's
// kernels, whose launchers may leave a launch error unread: it fails the measurement here. In a
// judge (kit/remote.h) the student's launcher runs in the worker, where the judge's events cannot
// see it: then the time is the worker's, as checked against the judge's clock (TimedScope), and a
// disagreement is counted in `mismatches`.
float time_run(EventTimer& events, const std::function<void(cudaStream_t)>& run,
               cudaStream_t stream, int* mismatches = nullptr) {
  remote::TimedScope remote_call;
  const float ms = events.time(stream, [&] { run(stream); });
  KIT_CUDA_CHECK(cudaGetLastError());
  if (!remote_call.used()) return ms;
  if (remote_call.mismatch() && mismatches != nullptr) ++*mismatches;
  return static_cast<float>(remote_call.ms());
}

class Stream {
 public:
  Stream() { KIT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  operator cudaStream_t() const { return stream_; }

 private:
  cudaStream_t stream_{};
};

std::size_t l2_bytes() {
  int device = 0, bytes = 0;
  KIT_CUDA_CHECK(cudaGetDevice(&device));
  KIT_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, device));
  return static_cast<std::size_t>(std::max(bytes, 1 << 20));
}

}  // namespace

EventTimer::EventTimer() {
  KIT_CUDA_CHECK(cudaEventCreate(&start_));
  KIT_CUDA_CHECK(cudaEventCreate(&stop_));
}

EventTimer::~EventTimer() {
  cudaEventDestroy(start_);
  cudaEventDestroy(stop_);
}

float EventTimer::time(cudaStream_t stream, const std::function<void()>& enqueue) {
  KIT_CUDA_CHECK(cudaEventRecord(start_, stream));
  enqueue();
  KIT_CUDA_CHECK(cudaEventRecord(stop_, stream));
  KIT_CUDA_CHECK(cudaEventSynchronize(stop_));
  float ms = 0;
  KIT_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return ms;
}

L2Flusher::L2Flusher() : buffer_(2 * l2_bytes()) {}

void L2Flusher::flush(cudaStream_t stream) {
  // A different value each time, so no layer can skip the write as redundant.
  value_ = (value_ + 1) & 0xFF;
  KIT_CUDA_CHECK(cudaMemsetAsync(buffer_.data(), value_, buffer_.bytes(), stream));
}

std::string describe_stop(const SampledRatio& result, const std::string& unit) {
  const SampleStop stop = result.stop;
  std::ostringstream text;
  text << (stop == SampleStop::clear       ? "clear"
           : stop == SampleStop::quartiles ? "quartiles"
                                           : "median")
       << " after " << result.pairs << " " << unit;
  if (stop == SampleStop::median_tight || stop == SampleStop::median_last)
    text << " (spread " << std::fixed << std::setprecision(3) << result.ratio.spread()
         << (stop == SampleStop::median_last ? ", undecided)" : ")");
  return text.str();
}

void trace(const std::string& what) {
  static std::FILE* const file = [] {
    const char* path = std::getenv("KIT_TRACE");
    return path != nullptr && *path != '\0' ? std::fopen(path, "a") : nullptr;
  }();
  if (file == nullptr) return;
  // Milliseconds of the monotonic clock, which every process shares: the judges' and workers'
  // lines of one grading fall on one timeline.
  const double ms = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count();
  std::fprintf(file, "%ld %.1f %s\n", static_cast<long>(getpid()), ms, what.c_str());
  std::fflush(file);
}

int default_min_samples() {
  const char* full = std::getenv("KIT_PERF_FULL");
  return full != nullptr && std::string(full) == "1" ? 0 : 7;
}

double default_clear_margin() {
  constexpr double kDefault = 0.01;
  const char* text = std::getenv("KIT_PERF_CLEAR_MARGIN");
  if (text == nullptr || *text == '\0') return kDefault;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  return *end == '\0' && value >= 0.0 && value <= 0.5 ? value : kDefault;
}

SampledRatio sample_ratio(const std::function<double()>& sample, double threshold,
                          const TimingOptions& options) {
  const int batch = std::max(1, options.samples);
  const int last = batch * std::max(1, options.max_batches);
  const int chunk = std::max(0, options.min_samples);  // 0: no early stop
  std::vector<double> ratios;
  SampledRatio result;
  auto finish = [&](bool passed, SampleStop stop) {
    result.passed = passed;
    result.stop = stop;
    result.stopped = describe_stop(result);
    return result;
  };
  for (;;) {
    // Measure up to the next checkpoint: the end of a chunk or of a batch, whichever comes first.
    const int n = static_cast<int>(ratios.size());
    int next = (n / batch + 1) * batch;
    if (chunk > 0) next = std::min(next, (n / chunk + 1) * chunk);
    while (static_cast<int>(ratios.size()) < next) ratios.push_back(sample());
    result.pairs = next;
    result.batches = (next + batch - 1) / batch;
    result.ratio = summarize(ratios);
    if (next % batch == 0) {
      // The rule from before the early stop, unchanged, at the same points.
      const Decision d = decide(result.ratio, threshold, options.max_spread);
      if (d != Decision::undecided) {
        const bool by_quartiles = result.ratio.q1 >= threshold || result.ratio.q3 < threshold;
        return finish(d == Decision::pass,
                      by_quartiles ? SampleStop::quartiles : SampleStop::median_tight);
      }
      if (next >= last) return finish(result.ratio.median >= threshold, SampleStop::median_last);
    }
    if (chunk > 0 && next % chunk == 0) {
      const MedianInterval interval = median_interval(ratios, options.confidence);
      if (interval.lo > threshold * (1.0 + options.clear_margin))
        return finish(true, SampleStop::clear);
      if (interval.hi < threshold * (1.0 - options.clear_margin))
        return finish(false, SampleStop::clear);
    }
  }
}

ThroughputComparison remeasure_while_clocks_disagree(
    const std::function<ThroughputComparison()>& measure, int attempts,
    const std::function<void()>& pause) {
  ThroughputComparison result = measure();
  auto clocks_disagreed = [](const ThroughputComparison& r) {
    return r.timing_mismatches > 0 && 2 * r.timing_mismatches >= r.student_runs;
  };
  for (int made = 1; made < attempts && !result.passed && clocks_disagreed(result); ++made) {
    if (pause) pause();
    result = measure();
    result.measurements = made + 1;
  }
  return result;
}

namespace {

ThroughputComparison measure_throughput(const Timed& student, const Timed& ceiling,
                                        double threshold, const TimingOptions& options) {
  Stream stream;
  L2Flusher flusher;
  EventTimer events;
  int mismatches = 0;
  auto timed = [&](const Timed& t) {
    if (t.fresh) t.fresh(stream);  // before the flush: new inputs are not left in the L2
    flusher.flush(stream);
    const double ms = time_run(events, t.run, stream, &mismatches);
    if (t.check) {
      KIT_CUDA_CHECK(cudaStreamSynchronize(stream));
      t.check();
    }
    return ms;
  };
  trace("timing " + student.name + " vs " + ceiling.name + ": warm-up");
  for (int i = 0; i < options.warmup; ++i) {
    timed(student);
    timed(ceiling);
  }
  trace("timing: sampling");

  std::vector<double> student_ms, ceiling_ms;
  int pairs = 0;
  const SampledRatio sampled = sample_ratio(
      [&] {
        // Alternate which one goes first within each batch, so drift within a pair does not
        // favour either.
        const int i = pairs++ % options.samples;
        double s, c;
        if (i % 2 == 0) {
          s = timed(student);
          c = timed(ceiling);
        } else {
          c = timed(ceiling);
          s = timed(student);
        }
        student_ms.push_back(s);
        ceiling_ms.push_back(c);
        return (student.work / s) / (ceiling.work / c);
      },
      threshold, options);
  trace("timing: " + std::to_string(sampled.pairs) + " pairs sampled");
  ThroughputComparison result;
  result.ratio = sampled.ratio;
  result.batches = sampled.batches;
  result.pairs = sampled.pairs;
  result.stopped = sampled.stopped;
  result.passed = sampled.passed;
  result.student_ms = summarize(student_ms).median;
  result.ceiling_ms = summarize(ceiling_ms).median;
  result.timing_mismatches = mismatches;
  result.student_runs = options.warmup + sampled.pairs;
  result.student_rate = student.work / (result.student_ms * 1e-3);
  result.ceiling_rate = ceiling.work / (result.ceiling_ms * 1e-3);
  return result;
}

}  // namespace

ThroughputComparison compare_throughput(const Timed& student, const Timed& ceiling, double threshold,
                                        const TimingOptions& options) {
  return remeasure_while_clocks_disagree(
      [&] { return measure_throughput(student, ceiling, threshold, options); },
      kClockMeasurements, [&] {
        trace("timing: the judge's clock disagreed on a failing verdict: measuring again");
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
      });
}

double median_ms(const std::function<void(cudaStream_t)>& run, int samples, int warmup) {
  Stream stream;
  L2Flusher flusher;
  EventTimer events;
  for (int i = 0; i < warmup; ++i) {
    flusher.flush(stream);
    time_run(events, run, stream);
  }
  std::vector<double> times;
  for (int i = 0; i < samples; ++i) {
    flusher.flush(stream);
    times.push_back(time_run(events, run, stream));
  }
  return summarize(times).median;
}

Timed device_copy_ceiling(const void* src, void* dst, std::size_t bytes) {
  return {"device-to-device cudaMemcpy", 2.0 * static_cast<double>(bytes),
          [=](cudaStream_t stream) {
            KIT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
          }};
}

}  // namespace kit
