// Lab 07's student functions as the judge calls them (kit/remote.h), and the grader's probes that
// run beside the student's code (probes.cu).
//
// Most of this lab cannot be called directly: its functions take and return *host* memory
// (pinned arrays, HostArray), and Pipeline is an object holding streams, events and device buffers
// across calls. Host memory and CUDA handles do not cross the process boundary, so the worker
// keeps those objects (the student's Pipeline, the host buffers it reads and writes) under a
// number the judge holds, and the probes run the student's code on them with data the judge sends
// and return plain data: output arrays, the timeline, what kind of memory a pointer is. The judge
// computes every expected value itself and decides every verdict.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kit/remote.h"
#include "streams.h"

namespace lab07_probe {

/// Floats on each side of a host output that the probes allocate (4 KiB: the output stays 4 KiB
/// aligned), filled with kit::guard_value, the output itself with kit::poison_value.
constexpr std::size_t kHostGuard = 1024;
/// How many floats at the start of d_in the round-trip probe reads while the stream is held.
constexpr std::size_t kPeekFloats = 4096;

/// A float array that travels as one block of bytes (not element by element: the performance
/// step sends 2^26 of them).
struct Floats {
  std::vector<float> values;
};

/// The memory the IsPinned test asks is_pinned about, in the order the judge reports them.
enum PinnedCase : int {
  kMallocHost = 0,    ///< memory from cudaMallocHost
  kMallocHostMiddle,  ///< the middle of a cudaMallocHost array
  kHostAlloc,         ///< memory from cudaHostAlloc
  kMalloc,            ///< memory from malloc
  kVector,            ///< a std::vector's memory
  kDevice,            ///< device memory from cudaMalloc (the judge's buffer)
  kRegistered,        ///< a std::vector registered with cudaHostRegister (when allowed)
  kPinnedCases
};

/// What lab07::is_pinned said about each PinnedCase, and the CUDA error it left behind (read and
/// cleared with cudaGetLastError after the last call).
struct PinnedAnswers {
  bool registered_ok = false;  ///< cudaHostRegister worked on this machine (else no kRegistered)
  bool answer[kPinnedCases] = {};
  cudaError_t left = cudaSuccess;
};

/// Allocates the memory of every PinnedCase (`n` floats each; kDevice is `device`, the judge's
/// buffer) and asks lab07::is_pinned about each.
PinnedAnswers is_pinned_cases(std::size_t n, const float* device);

/// What lab07::make_pinned_buffers(n) returned, as the runtime sees it. The buffers stay in the
/// worker under `id` (release() frees them with the student's release functions).
struct BuffersReport {
  int id = 0;
  std::uint64_t in_address = 0, out_address = 0;  ///< data() of .in and .out (0: nullptr)
  std::uint64_t in_size = 0, out_size = 0;        ///< size() of .in and .out
  /// cudaPointerGetAttributes' type of the first and the last element of each (unregistered when
  /// the query fails; meaningless for an array that is null or empty).
  cudaMemoryType in_first = cudaMemoryTypeUnregistered, in_last = cudaMemoryTypeUnregistered;
  cudaMemoryType out_first = cudaMemoryTypeUnregistered, out_last = cudaMemoryTypeUnregistered;
};
BuffersReport make_buffers(std::size_t n);

/// Copies `values` into the .in of buffers `buffers` (from make_buffers), from there with
/// cudaMemcpy to `device` (the judge's buffer), from there into .out, and returns .out.
Floats copy_through_device(int buffers, const Floats& values, float* device);

/// What happened to one lab07::round_trip_async call queued behind `hold_ms` of other work.
struct RoundTripReport {
  double returned_ms = 0;   ///< host time until round_trip_async returned (the probe's clock)
  bool still_held = false;  ///< 50 ms after it returned, the stream was still held
  std::uint64_t early_written = 0;  ///< then, the elements of h_out already written
  std::uint64_t early_copied = 0;   ///< then, of d_in's first kPeekFloats, those already copied in
  Floats out;                       ///< h_out with its guards (kHostGuard each side), once finished
  Floats in;                        ///< h_in once finished
};

/// The round trip of the RoundTrip test in the worker: a pinned copy of `in`, a guarded pinned
/// h_out, d_in filled with 0xFF bytes, a lab07::Stream held by a kernel for `hold_ms`, then
/// round_trip_async(h_in, h_out, d_in, d_out, in.size(), iterations, stream), timed on the host.
RoundTripReport round_trip_held(const Floats& in, int iterations, float* d_in, float* d_out,
                                double hold_ms);

/// Host buffers of the probe's own for a pipeline: h_in of n floats (zeros) and h_out of n floats
/// between two guards of kHostGuard, each pinned (cudaMallocHost) or pageable (std::vector).
/// Returns their id.
int host_buffers(std::size_t n, bool pinned_in, bool pinned_out);

/// Copies `in` (exactly n floats) into h_in of buffers `buffers` and poisons h_out (and its
/// guards).
void write_input(int buffers, const Floats& in);

/// Fills h_in of buffers `buffers` with the n values kit::Random::floats(n, lo, hi) would draw
/// from a generator in state `base` (kit::Drawn names them in the judge), and poisons h_out (and
/// its guards): the input of 2^26 floats made where it is used, not sent through the socket. The
/// judge computes its expected values from the same rule, so an input made otherwise only makes
/// the output wrong.
void fill_input(int buffers, std::uint64_t base, float lo, float hi);

/// Poisons h_out of buffers `buffers` (and its guards), h_in unchanged.
void poison_output(int buffers);

/// lab07::Pipeline(capacity, num_streams), kept in the worker; returns its id.
int open_pipeline(std::size_t capacity, int num_streams);

/// Pipeline `pipeline`'s run(h_in, h_out, n, chunks, iterations) on buffers `buffers` (n is
/// theirs); an exception from run() reaches the judge as the call's own.
lab07::Timeline run_pipeline(int pipeline, int buffers, int chunks, int iterations);

/// How a run() of run_pipeline_to_end ended.
enum class Ended : std::uint8_t {
  returned = 1,          ///< returned normally
  invalid_argument = 2,  ///< threw std::invalid_argument (it refused its arguments)
  other_exception = 3,   ///< threw another std::exception
};

struct RunEnd {
  Ended ended = Ended::returned;
  std::string what;  ///< the exception's message (empty when run() returned)
};

/// The same run() for the tests of step 2, which check h_out and not the timeline: run() is steps
/// 2 and 3, and its end, read_timeline, is step 3's. So an exception from run() is caught here
/// and reported as data, and h_out as it is the moment run() ends (returns or throws) is kept for
/// read_buffers (the worker waits for the device only after the call): an exception thrown once
/// h_out is complete is step 3's to report, one thrown before is step 2's.
RunEnd run_pipeline_to_end(int pipeline, int buffers, int chunks, int iterations);

/// lab07::require_pinned(h_in, "h_in") and then (h_out, "h_out") on buffers `buffers`: what run()
/// does first, without the rest of run() (steps 2 and 3).
void require_pinned_buffers(int buffers);

/// The contents of buffers `buffers`.
struct HostContents {
  Floats in;         ///< h_in (empty unless asked for)
  Floats out;        ///< h_out now, with its guards for the probe's own buffers
  Floats at_return;  ///< h_out as run_pipeline_to_end found it when run() ended (else empty)
};
HostContents read_buffers(int buffers, bool with_in);

/// Frees the pipeline or buffers `id` (nothing when there are none).
void release(int id);

/// lab07::perf_config() (a function without parameters cannot be listed itself).
lab07::PipelineConfig perf_config(int unused);

/// h_out's whole storage (guard + n + guard floats) of host buffers `buffers`, copied into the
/// judge's device buffer `d_dst` of as many floats, after the device is idle: the judge reads it
/// back from there (256 MiB in tens of milliseconds, where the socket takes 0.45 s).
void copy_output_to(int buffers, float* d_dst);

/// lab07::chunk_range(n, chunks, c) for c = 0 .. chunks - 1, in order: one call where the judge
/// made one per chunk (1000 random cases of up to 64 chunks in PipelineHost).
std::vector<lab07::ChunkRange> chunk_ranges(std::size_t n, int chunks);

}  // namespace lab07_probe

namespace kit::remote {

template <>
struct Codec<lab07_probe::Floats> {
  static void put(Writer& w, const lab07_probe::Floats& f) {
    w.pod<std::uint64_t>(f.values.size());
    if (!f.values.empty()) w.raw(f.values.data(), f.values.size() * sizeof(float));
  }
  static lab07_probe::Floats get(Reader& r) {
    const auto n = r.pod<std::uint64_t>();
    if (n > (std::uint64_t{1} << 30))
      throw Malformed("kit::remote: float array longer than a message");
    lab07_probe::Floats f;
    f.values.resize(static_cast<std::size_t>(n));
    if (n > 0) r.raw(f.values.data(), f.values.size() * sizeof(float));
    return f;
  }
};

template <>
struct Codec<lab07_probe::RoundTripReport> {
  using Report = lab07_probe::RoundTripReport;
  static void put(Writer& w, const Report& v) {
    w.pod(v.returned_ms);
    w.pod(v.still_held);
    w.pod(v.early_written);
    w.pod(v.early_copied);
    Codec<lab07_probe::Floats>::put(w, v.out);
    Codec<lab07_probe::Floats>::put(w, v.in);
  }
  static Report get(Reader& r) {
    Report v;
    v.returned_ms = r.pod<double>();
    v.still_held = r.pod<bool>();
    v.early_written = r.pod<std::uint64_t>();
    v.early_copied = r.pod<std::uint64_t>();
    v.out = Codec<lab07_probe::Floats>::get(r);
    v.in = Codec<lab07_probe::Floats>::get(r);
    return v;
  }
};

/// RunEnd holds a std::string, so it travels field by field.
template <>
struct Codec<lab07_probe::RunEnd> {
  static void put(Writer& w, const lab07_probe::RunEnd& v) {
    w.pod(v.ended);
    w.text(v.what);
  }
  static lab07_probe::RunEnd get(Reader& r) {
    lab07_probe::RunEnd v;
    v.ended = r.pod<lab07_probe::Ended>();
    v.what = r.text();
    return v;
  }
};

template <>
struct Codec<lab07_probe::HostContents> {
  using Contents = lab07_probe::HostContents;
  static void put(Writer& w, const Contents& v) {
    for (const lab07_probe::Floats* f : {&v.in, &v.out, &v.at_return})
      Codec<lab07_probe::Floats>::put(w, *f);
  }
  static Contents get(Reader& r) {
    Contents v;
    for (lab07_probe::Floats* f : {&v.in, &v.out, &v.at_return})
      *f = Codec<lab07_probe::Floats>::get(r);
    return v;
  }
};

}  // namespace kit::remote

// Student functions: chunk_range is called directly. is_pinned is listed because the judge
// compiles the kit's work.cu (launch_work, for its own serial version and stage timings), whose
// require_pinned calls it; the tests ask it about host memory through is_pinned_cases instead.
#define KIT_LAB_REMOTE(X)                                                                  \
  X(lab07, chunk_range, lab07::ChunkRange, (std::size_t, int, int))                        \
  X(lab07_probe, chunk_ranges, std::vector<lab07::ChunkRange>, (std::size_t, int))         \
  X(lab07_probe, copy_output_to, void, (int, float*))                                      \
  X(lab07, is_pinned, bool, (const void*))                                                 \
  X(lab07_probe, is_pinned_cases, lab07_probe::PinnedAnswers, (std::size_t, const float*)) \
  X(lab07_probe, make_buffers, lab07_probe::BuffersReport, (std::size_t))                  \
  X(lab07_probe, copy_through_device, lab07_probe::Floats,                                 \
    (int, const lab07_probe::Floats&, float*))                                             \
  X(lab07_probe, round_trip_held, lab07_probe::RoundTripReport,                            \
    (const lab07_probe::Floats&, int, float*, float*, double))                             \
  X(lab07_probe, host_buffers, int, (std::size_t, bool, bool))                             \
  X(lab07_probe, write_input, void, (int, const lab07_probe::Floats&))                     \
  X(lab07_probe, fill_input, void, (int, std::uint64_t, float, float))                     \
  X(lab07_probe, poison_output, void, (int))                                               \
  X(lab07_probe, open_pipeline, int, (std::size_t, int))                                   \
  X(lab07_probe, run_pipeline, lab07::Timeline, (int, int, int, int))                      \
  X(lab07_probe, run_pipeline_to_end, lab07_probe::RunEnd, (int, int, int, int))           \
  X(lab07_probe, require_pinned_buffers, void, (int))                                      \
  X(lab07_probe, read_buffers, lab07_probe::HostContents, (int, bool))                     \
  X(lab07_probe, release, void, (int))                                                     \
  X(lab07_probe, perf_config, lab07::PipelineConfig, (int))
