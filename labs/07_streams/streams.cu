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
  // TODO(streams.1): ask the runtime what kind of memory p points to (cudaPointerGetAttributes).
  // Only page-locked host memory counts; an error from the query also means "not pinned" (clear it
  // with cudaGetLastError so it does not surface in a later call).
  return false;
  // END(streams.1)
}

HostBuffers make_pinned_buffers(std::size_t n) {
  // TODO(streams.1): allocate two arrays of n floats the copy engines can reach directly, each in
  // a HostArray whose release function frees it the matching way.
  return {};
  // END(streams.1)
}

void round_trip_async(const float* h_in, float* h_out, float* d_in, float* d_out, std::size_t n,
                      int iterations, cudaStream_t stream) {
  // TODO(streams.1): copy in, run the kernel, copy out, all three on `stream`, and return without
  // waiting for any of them.
  // END(streams.1)
}

// ---- Step 2: the chunked pipeline ---------------------------------------------------------------

ChunkRange chunk_range(std::size_t n, int chunks, int c) {
  // TODO(streams.2): chunk c of `chunks` consecutive pieces of [0, n). When chunks does not divide
  // n, the pieces cannot all be equal: make sure the last elements still belong to some chunk.
  return {0, 0};
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

  // TODO(streams.2): for each chunk c: its elements (chunk_range), its stream (round robin over
  // streams_), then on that stream copy in, kernel, copy out, each stage between
  // mark(c, stage, Edge::start, stream) and mark(c, stage, Edge::stop, stream). Then wait until
  // every stream has finished, and no longer: the caller reads h_out as soon as run() returns.
  // END(streams.2)

  return read_timeline(chunks);
}

// ---- Step 3: events time every stage of every chunk ---------------------------------------------

void Pipeline::mark(int chunk, Stage stage, Edge edge, cudaStream_t stream) {
  // TODO(streams.3): record this edge's event where the stage's work is queued.
  // END(streams.3)
}

Timeline Pipeline::read_timeline(int chunks) const {
  // TODO(streams.3): every stage's start and end in milliseconds, measured from the event that
  // marks the start of chunk 0's copy-in (cudaEventElapsedTime).
  return Timeline(static_cast<std::size_t>(chunks));
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
  // TODO(streams.perf): how many chunks, over how many streams? One chunk overlaps nothing; many
  // tiny chunks pay a fixed cost each. The benchmark (bench_07_streams) times several choices.
  return {1, 1};
  // END(streams.perf)
}

}  // namespace lab07
