#include "kit/timing.h"

#include <algorithm>
#include <vector>

namespace kit {
namespace {

// One pair of CUDA events; destroyed on scope exit.
class EventPair {
 public:
  EventPair() {
    KIT_CUDA_CHECK(cudaEventCreate(&start_));
    KIT_CUDA_CHECK(cudaEventCreate(&stop_));
  }
  ~EventPair() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;

  // Milliseconds taken by `run` on `stream`.
  float time(const std::function<void(cudaStream_t)>& run, cudaStream_t stream) {
    KIT_CUDA_CHECK(cudaEventRecord(start_, stream));
    run(stream);
    KIT_CUDA_CHECK(cudaEventRecord(stop_, stream));
    KIT_CUDA_CHECK(cudaEventSynchronize(stop_));
    KIT_CUDA_CHECK(cudaGetLastError());
    float ms = 0;
    KIT_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return ms;
  }

 private:
  cudaEvent_t start_{}, stop_{};
};

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

L2Flusher::L2Flusher() : buffer_(2 * l2_bytes()) {}

void L2Flusher::flush(cudaStream_t stream) {
  // A different value each time, so no layer can skip the write as redundant.
  value_ = (value_ + 1) & 0xFF;
  KIT_CUDA_CHECK(cudaMemsetAsync(buffer_.data(), value_, buffer_.bytes(), stream));
}

ThroughputComparison compare_throughput(const Timed& student, const Timed& ceiling, double threshold,
                                        const TimingOptions& options) {
  Stream stream;
  L2Flusher flusher;
  EventPair events;
  auto timed = [&](const Timed& t) {
    flusher.flush(stream);
    return static_cast<double>(events.time(t.run, stream));
  };
  for (int i = 0; i < options.warmup; ++i) {
    timed(student);
    timed(ceiling);
  }

  std::vector<double> ratios, student_ms, ceiling_ms;
  ThroughputComparison result;
  for (result.batches = 1;; ++result.batches) {
    for (int i = 0; i < options.samples; ++i) {
      // Alternate which one goes first, so drift within a pair does not favour either.
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
      ratios.push_back((student.work / s) / (ceiling.work / c));
    }
    result.ratio = summarize(ratios);
    const Decision d = decide(result.ratio, threshold, options.max_spread);
    if (d != Decision::undecided || result.batches >= options.max_batches) {
      result.passed = d == Decision::pass ||
                      (d == Decision::undecided && result.ratio.median >= threshold);
      break;
    }
  }
  result.student_ms = summarize(student_ms).median;
  result.ceiling_ms = summarize(ceiling_ms).median;
  result.student_rate = student.work / (result.student_ms * 1e-3);
  result.ceiling_rate = ceiling.work / (result.ceiling_ms * 1e-3);
  return result;
}

double median_ms(const std::function<void(cudaStream_t)>& run, int samples, int warmup) {
  Stream stream;
  L2Flusher flusher;
  EventPair events;
  for (int i = 0; i < warmup; ++i) {
    flusher.flush(stream);
    events.time(run, stream);
  }
  std::vector<double> times;
  for (int i = 0; i < samples; ++i) {
    flusher.flush(stream);
    times.push_back(events.time(run, stream));
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
