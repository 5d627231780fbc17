#include "kit/timing.h"

#include <algorithm>
#include <vector>

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

SampledRatio sample_ratio(const std::function<double()>& sample, double threshold,
                          const TimingOptions& options) {
  std::vector<double> ratios;
  SampledRatio result;
  for (result.batches = 1;; ++result.batches) {
    for (int i = 0; i < options.samples; ++i) ratios.push_back(sample());
    result.ratio = summarize(ratios);
    const Decision d = decide(result.ratio, threshold, options.max_spread);
    if (d != Decision::undecided || result.batches >= options.max_batches) {
      result.passed =
          d == Decision::pass || (d == Decision::undecided && result.ratio.median >= threshold);
      return result;
    }
  }
}

ThroughputComparison compare_throughput(const Timed& student, const Timed& ceiling, double threshold,
                                        const TimingOptions& options) {
  Stream stream;
  L2Flusher flusher;
  EventTimer events;
  int mismatches = 0;
  auto timed = [&](const Timed& t) {
    flusher.flush(stream);
    return static_cast<double>(time_run(events, t.run, stream, &mismatches));
  };
  for (int i = 0; i < options.warmup; ++i) {
    timed(student);
    timed(ceiling);
  }

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
  ThroughputComparison result;
  result.ratio = sampled.ratio;
  result.batches = sampled.batches;
  result.passed = sampled.passed;
  result.student_ms = summarize(student_ms).median;
  result.ceiling_ms = summarize(ceiling_ms).median;
  result.timing_mismatches = mismatches;
  result.student_rate = student.work / (result.student_ms * 1e-3);
  result.ceiling_rate = ceiling.work / (result.ceiling_ms * 1e-3);
  return result;
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
