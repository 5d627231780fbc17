// Lab 07, streams: keep the copy engines and the SMs busy at the same time.
//
// Step 1 allocates pinned host memory and queues one asynchronous round trip (copy in, kernel, copy
// out) on a stream. Step 2 cuts the data into chunks and deals them out to several streams, so
// that one chunk's copy-in runs while another's kernel and a third's copy-out do. Step 3 times
// every stage of every chunk with CUDA events; the grader draws the timeline from those times.
//
// Edit the TODO regions, then grade:
//     python3 grader/kit.py grade 07
// The handout (docs/labs/07_streams.md) explains each step; `python3 grader/kit.py hint 07 2`
// gives hints one at a time. `build/bin/bench_07_streams` times your pipeline for several chunk
// and stream counts.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "kit/check.h"
#include "streams.h"

namespace lab07 {

// ---- Step 1: pinned memory and an asynchronous round trip ---------------------------------------

bool is_pinned(const void* p) {
  // DONE(streams.1): ask the runtime what kind of memory p points to (cudaPointerGetAttributes).
  // Only page-locked host memory counts; an error from the query also means "not pinned" (clear it
  // with cudaGetLastError so it does not surface in a later call).
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
  // END(streams.1)
}

HostBuffers make_pinned_buffers(std::size_t n) {
  // DONE(streams.1): allocate two arrays of n floats the copy engines can reach directly, each in
  // a HostArray whose release function frees it the matching way.
  auto allocate = [](std::size_t count) {
    float* p = nullptr;
    KIT_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&p), count * sizeof(float)));
    return HostArray(p, count, [](float* q) { cudaFreeHost(q); });
  };
  return {allocate(n), allocate(n)};
  // END(streams.1)
}

void round_trip_async(const float* h_in, float* h_out, float* d_in, float* d_out, std::size_t n,
                      int iterations, cudaStream_t stream) {
  // DONE(streams.1): copy in, run the kernel, copy out, all three on `stream`, and return without
  // waiting for any of them.
  const std::size_t bytes = n * sizeof(float);
  KIT_CUDA_CHECK(cudaMemcpyAsync(d_in, h_in, bytes, cudaMemcpyHostToDevice, stream));
  launch_work(d_in, d_out, n, iterations, stream);
  KIT_CUDA_CHECK(cudaMemcpyAsync(h_out, d_out, bytes, cudaMemcpyDeviceToHost, stream));
  // END(streams.1)
}

// ---- Step 2: the chunked pipeline ---------------------------------------------------------------

ChunkRange chunk_range(std::size_t n, int chunks, int c) {
  // DONE(streams.2): chunk c of `chunks` consecutive pieces of [0, n). When chunks does not divide
  // n, the pieces cannot all be equal: make sure the last elements still belong to some chunk.
  const auto count = static_cast<std::size_t>(chunks);
  const std::size_t chunk_size = (n + count - 1) / count;
  const std::size_t begin = std::min(n, static_cast<std::size_t>(c) * chunk_size);
  return {begin, std::min(n, begin + chunk_size)};
  // END(streams.2)
}

Pipeline::Pipeline(std::size_t capacity, int num_streams)
    : capacity_(capacity), d_in_(capacity), d_out_(capacity) {
  if (num_streams < 1) throw std::invalid_argument("a pipeline needs at least one stream");
  streams_.resize(static_cast<std::size_t>(num_streams));  // each Stream creates its CUDA stream
}

Timeline Pipeline::run(const float* h_in, float* h_out, std::size_t n, int chunks, int iterations) {
  require_pinned(h_in, "h_in");
  require_pinned(h_out, "h_out");
  if (n > capacity_)
    throw std::invalid_argument("n = " + std::to_string(n) +
                                " is more than the pipeline's capacity " +
                                std::to_string(capacity_));
  if (chunks < 1) throw std::invalid_argument("chunks must be at least 1");
  prepare_events(chunks);

  // DONE(streams.2): for each chunk c: its elements (chunk_range), its stream (round robin over
  // streams_), then on that stream copy in, kernel, copy out, each stage between
  // mark(c, stage, Edge::start, stream) and mark(c, stage, Edge::stop, stream). Then wait until
  // every stream has finished, and no longer: the caller reads h_out as soon as run() returns.
  for (int c = 0; c < chunks; ++c) {
    const ChunkRange range = chunk_range(n, chunks, c);
    const std::size_t bytes = range.size() * sizeof(float);
    const cudaStream_t stream = streams_[static_cast<std::size_t>(c) % streams_.size()];
    float* d_in = d_in_.data() + range.begin;
    float* d_out = d_out_.data() + range.begin;

    mark(c, kCopyIn, Edge::start, stream);
    KIT_CUDA_CHECK(
        cudaMemcpyAsync(d_in, h_in + range.begin, bytes, cudaMemcpyHostToDevice, stream));
    mark(c, kCopyIn, Edge::stop, stream);

    mark(c, kKernel, Edge::start, stream);
    launch_work(d_in, d_out, range.size(), iterations, stream);
    mark(c, kKernel, Edge::stop, stream);

    mark(c, kCopyOut, Edge::start, stream);
    KIT_CUDA_CHECK(
        cudaMemcpyAsync(h_out + range.begin, d_out, bytes, cudaMemcpyDeviceToHost, stream));
    mark(c, kCopyOut, Edge::stop, stream);
  }
  for (const Stream& stream : streams_) KIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  // END(streams.2)

  return read_timeline(chunks);
}

// ---- Step 3: events time every stage of every chunk ---------------------------------------------

void Pipeline::mark(int chunk, Stage stage, Edge edge, cudaStream_t stream) {
  // DONE(streams.3): record this edge's event where the stage's work is queued.
  KIT_CUDA_CHECK(cudaEventRecord(event(chunk, stage, edge), stream));
  // END(streams.3)
}

Timeline Pipeline::read_timeline(int chunks) const {
  // DONE(streams.3): every stage's start and end in milliseconds, measured from the event that
  // marks the start of chunk 0's copy-in (cudaEventElapsedTime).
  const cudaEvent_t origin = event(0, kCopyIn, Edge::start);
  Timeline timeline(static_cast<std::size_t>(chunks));
  for (int c = 0; c < chunks; ++c) {
    for (int s = 0; s < kStages; ++s) {
      StageTime& time = timeline[static_cast<std::size_t>(c)].stage[s];
      const auto stage = static_cast<Stage>(s);
      KIT_CUDA_CHECK(cudaEventElapsedTime(&time.start_ms, origin, event(c, stage, Edge::start)));
      KIT_CUDA_CHECK(cudaEventElapsedTime(&time.end_ms, origin, event(c, stage, Edge::stop)));
    }
  }
  return timeline;
  // END(streams.3)
}

cudaEvent_t Pipeline::event(int chunk, Stage stage, Edge edge) const {
  const std::size_t index =
      (static_cast<std::size_t>(chunk) * kStages + stage) * 2 + static_cast<std::size_t>(edge);
  return events_.at(index);
}

void Pipeline::prepare_events(int chunks) {
  const std::size_t needed = static_cast<std::size_t>(chunks) * kStages * 2;
  if (events_.size() < needed) events_.resize(needed);  // each Event creates its CUDA event
}

// ---- Performance step ---------------------------------------------------------------------------

PipelineConfig perf_config() {
  // DONE(streams.perf): how many chunks, over how many streams? One chunk overlaps nothing; many
  // tiny chunks pay a fixed cost each. The benchmark (bench_07_streams) times several choices.
  return {4, 4};
  // END(streams.perf)
}

}  // namespace lab07
