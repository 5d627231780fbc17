// Grader of lab 07, streams.
//
//   python3 grader/kit.py grade 07          every test, each in its own process, with a score
//   build/bin/grade_07_streams              the same tests in one process (quick, no score)
//   KIT_SEED=1234 build/bin/grade_07_streams --gtest_filter='*PipelineRun*'   replay one failure
//
// Steps: 1 pinned host memory and an asynchronous round trip on a stream, 2 the chunked pipeline
// over several streams, 3 events that time every stage of every chunk, perf the pipeline against
// the ideal overlap bound and against the serial version. Host outputs are pinned arrays with
// guard regions on both sides, poisoned before every run.
//
// This grader is a judge (kit/remote.h): the student's code runs in a worker process. Host memory
// and the student's Pipeline (streams, events) cannot cross to the judge, so the worker keeps them
// and the probes of probes.cu run the student's code on them with the judge's data (WorkerHost,
// WorkerPipeline below); what comes back is plain data (outputs with their guards, the timeline,
// memory types), checked here against values the judge computes. The serial version and the
// stages timed alone run here, with the kit's work kernel (labs/07_streams/work.cu, compiled into
// the judge) on the judge's own pinned buffers.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kit/check.h"
#include "kit/parallel.h"
#include "kit/random.h"
#include "kit/remote.h"
#include "kit/test.h"
#include "pipeline_timing.h"
#include "remote.h"
#include "sampled_ratio.h"
#include "streams.h"

namespace {

using kit::EventTimer;
using lab07_grader::StageTimes;
using lab07_grader::Workload;

const kit::Tolerance kExact = kit::Tolerance::exact(
    "work() is the same chain of fused multiply-adds on the host and on the GPU, each rounded "
    "once, so the results agree bit for bit");

constexpr std::size_t kBig = (1u << 20) + 7;  // no chunk count above 1 used here divides it

std::string mib(std::size_t bytes) {
  std::ostringstream out;
  out.precision(3);
  out << static_cast<double>(bytes) / (1 << 20) << " MiB";
  return out.str();
}

std::vector<float> expected_output(const float* in, std::size_t n, int iterations) {
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = lab07::work(in[i], iterations);
  return out;
}

/// A pinned copy of `values`.
kit::PinnedBuffer<float> pinned_copy(const std::vector<float>& values) {
  kit::PinnedBuffer<float> buffer(values.size());
  std::copy(values.begin(), values.end(), buffer.data());
  return buffer;
}

// ---- Host buffers and pipelines in the worker ---------------------------------------------------

/// True when the worker of the running test was lost (crashed, timed out, CUDA error): the judge
/// recorded that as the test's verdict (kit_status), and the worker's objects are gone with it.
bool worker_lost() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (info == nullptr) return false;
  const ::testing::TestResult* result = info->result();
  for (int i = 0; i < result->test_property_count(); ++i)
    if (std::string(result->GetTestProperty(i).key()) == "kit_status") return true;
  return false;
}

/// Frees a worker object when the judge's handle goes out of scope (not when its worker is gone:
/// that would start a fresh worker only to be told there is no such object).
void release_in_worker(int id) {
  if (id == 0 || worker_lost()) return;
  try {
    lab07_probe::release(id);
  } catch (...) {  // a destructor does not throw; a lost worker is already the verdict
  }
}

/// A host output as the worker read it: n floats between two guard regions of `guard` floats
/// (none for the student's own buffers), poisoned before the run so that an element nothing wrote
/// is seen.
class HostOutput {
 public:
  HostOutput(std::vector<float> storage, std::size_t n, std::size_t guard)
      : storage_(std::move(storage)), n_(n), guard_(guard) {
    if (storage_.size() != n_ + 2 * guard_)
      throw std::runtime_error("kit judge: the worker returned " + std::to_string(storage_.size()) +
                               " floats for an output of " + std::to_string(n_));
  }

  std::size_t size() const noexcept { return n_; }
  const float* data() const noexcept { return storage_.data() + guard_; }
  std::vector<float> values() const { return {data(), data() + n_}; }
  std::vector<kit::GuardHit> guard_writes() const {
    const std::vector<float> before(storage_.data(), storage_.data() + guard_);
    const std::vector<float> after(data() + n_, data() + n_ + guard_);
    return kit::find_guard_writes(before, after, n_);
  }

 private:
  std::vector<float> storage_;
  std::size_t n_;
  std::size_t guard_;
};

/// Host buffers h_in and h_out of n floats in the worker: the probe's own (pinned or pageable,
/// h_out between guards), or what the student's make_pinned_buffers(n) returned. Freed with it.
class WorkerHost {
 public:
  /// The probe's own buffers, h_in zeros and h_out poisoned.
  explicit WorkerHost(std::size_t n, bool pinned_in = true, bool pinned_out = true)
      : id_(lab07_probe::host_buffers(n, pinned_in, pinned_out)),
        n_(n),
        guard_(lab07_probe::kHostGuard) {}
  /// lab07::make_pinned_buffers(n) in the worker; `report` says what it returned.
  static WorkerHost student(std::size_t n, lab07_probe::BuffersReport* report) {
    *report = lab07_probe::make_buffers(n);
    return WorkerHost(report->id, n, 0);
  }
  ~WorkerHost() { release_in_worker(id_); }
  WorkerHost(WorkerHost&& other) noexcept
      : id_(std::exchange(other.id_, 0)), n_(other.n_), guard_(other.guard_) {}
  WorkerHost(const WorkerHost&) = delete;
  WorkerHost& operator=(const WorkerHost&) = delete;
  WorkerHost& operator=(WorkerHost&&) = delete;

  int id() const noexcept { return id_; }

  /// Copies `in` into h_in and poisons h_out.
  void write(const std::vector<float>& in) { lab07_probe::write_input(id_, {in}); }
  /// Fills h_in in the worker with the next n values of rng.uniform(lo, hi) (what rng.floats
  /// would draw; the worker computes them, nothing crosses the socket) and poisons h_out.
  kit::Drawn fill(kit::Random& rng, float lo, float hi) {
    const kit::Drawn drawn{rng.advance(n_), lo, hi};
    lab07_probe::fill_input(id_, drawn.base, lo, hi);
    return drawn;
  }
  /// Poisons h_out.
  void poison_output() { lab07_probe::poison_output(id_); }
  /// h_out now (after the worker waited for the device), carried through the GPU: the worker
  /// copies h_out's storage into a device buffer of the judge's, which the judge reads back
  /// (2^26 floats took 0.45 s through the socket, as read() carries them).
  HostOutput output() const {
    kit::DeviceBuffer<float> staging(n_ + 2 * guard_);
    lab07_probe::copy_output_to(id_, staging.data());
    return HostOutput(staging.download(), n_, guard_);
  }

  struct Contents {
    std::vector<float> in;         ///< h_in (empty unless asked for)
    HostOutput now;                ///< h_out now
    std::vector<float> at_return;  ///< h_out's storage when run() ended (run_to_end)
  };
  Contents read(bool with_in) const {
    lab07_probe::HostContents c = lab07_probe::read_buffers(id_, with_in);
    return {std::move(c.in.values), HostOutput(std::move(c.out.values), n_, guard_),
            std::move(c.at_return.values)};
  }
  /// h_out as it was when the run() of WorkerPipeline::run_to_end ended.
  HostOutput at_return(Contents& c) const { return HostOutput(std::move(c.at_return), n_, guard_); }

 private:
  WorkerHost(int id, std::size_t n, std::size_t guard) : id_(id), n_(n), guard_(guard) {}
  int id_;
  std::size_t n_;
  std::size_t guard_;
};

/// A lab07::Pipeline(capacity, num_streams) in the worker, destroyed with this handle.
class WorkerPipeline {
 public:
  WorkerPipeline(std::size_t capacity, int num_streams)
      : id_(lab07_probe::open_pipeline(capacity, num_streams)), streams_(num_streams) {}
  ~WorkerPipeline() { release_in_worker(id_); }
  WorkerPipeline(const WorkerPipeline&) = delete;
  WorkerPipeline& operator=(const WorkerPipeline&) = delete;

  /// run(h_in, h_out, n, chunks, iterations) on `host`'s buffers (n is theirs).
  lab07::Timeline run(WorkerHost& host, int chunks, int iterations) {
    return lab07_probe::run_pipeline(id_, host.id(), chunks, iterations);
  }
  /// The same run() for step 2's tests: how it ended, exception included, and the worker keeps
  /// h_out as it was the moment run() ended (WorkerHost::read). See lab07_probe::RunEnd.
  lab07_probe::RunEnd run_to_end(WorkerHost& host, int chunks, int iterations) {
    return lab07_probe::run_pipeline_to_end(id_, host.id(), chunks, iterations);
  }
  int num_streams() const { return streams_; }

 private:
  int id_;
  int streams_;
};

/// "chunk 3 [300, 400) on stream 3", from the student's chunk_range, for element `i`.
std::string chunk_of(std::size_t i, std::size_t n, int chunks, int streams) {
  for (int c = 0; c < chunks; c++) {
    const lab07::ChunkRange r = lab07::chunk_range(n, chunks, c);
    if (r.begin <= i && i < r.end)
      return "chunk " + std::to_string(c) + " [" + std::to_string(r.begin) + ", " +
             std::to_string(r.end) + ") on stream " + std::to_string(c % streams);
  }
  return "no chunk: chunk_range(" + std::to_string(n) + ", " + std::to_string(chunks) +
         ", c) leaves it out for every c";
}

/// Checks a guarded host output against `expected`; names the chunk of each wrong element (from
/// the student's chunk_range, step 2) when `chunks` > 0, and no chunk for step 1's round trip.
::testing::AssertionResult host_output_matches(const std::string& what,
                                               const std::vector<float>& expected,
                                               const HostOutput& out, int chunks, int streams) {
  std::string problems;
  const auto hits = out.guard_writes();
  if (!hits.empty()) problems += what + ": " + kit::describe_guard_writes(hits, out.size()) + "\n";
  const kit::Comparison cmp = kit::compare_values(expected, out.values(), kExact);
  if (!cmp.ok()) {
    problems +=
        kit::describe_mismatches(what, cmp, kExact, kit::Shape::d1(out.size()), nullptr) + "\n";
    if (chunks > 0) {
      problems += "  where the first wrong elements belong:\n";
      for (const kit::Mismatch& m : cmp.first)
        problems += "    element " + std::to_string(m.index) + ": " +
                    chunk_of(m.index, out.size(), chunks, streams) + "\n";
    }
  }
  if (problems.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << problems << kit::seed_note();
}

/// Checks h_out as it was the moment run() ended (`out`, as the worker found it then): run() must
/// not return before h_out is complete. `later` is the same output once the worker had waited for
/// the device; `end` says how run() ended. An exception thrown once h_out was complete came from
/// the end of run(), read_timeline, which is step 3's code: step 3's tests report it.
void expect_complete_output(const std::vector<float>& expected, const HostOutput& out,
                            const HostOutput& later, int chunks, int streams,
                            const lab07_probe::RunEnd& end) {
  const ::testing::AssertionResult at_end =
      host_output_matches("h_out", expected, out, chunks, streams);
  if (at_end) return;
  const bool threw = end.ended != lab07_probe::Ended::returned;
  const std::string exception =
      threw ? "run() threw before h_out was complete: " + end.what + "\n" : std::string();
  if (host_output_matches("h_out", expected, later, chunks, streams)) {
    ADD_FAILURE() << exception << "h_out was not complete when run() "
                  << (threw ? "threw" : "returned")
                  << ", and was a moment later: run() must wait until every stream has finished "
                     "(cudaStreamSynchronize on each) before it reads the timeline and returns\n"
                     "at the end of run(): "
                  << at_end.message();
    return;
  }
  ADD_FAILURE() << exception << at_end.message();
}

// ---- Pinned or not: the grader's own check ------------------------------------------------------

const char* memory_type_name(cudaMemoryType type) {
  switch (type) {
    case cudaMemoryTypeUnregistered:
      return "unregistered (pageable) host memory";
    case cudaMemoryTypeHost:
      return "pinned host memory";
    case cudaMemoryTypeDevice:
      return "device memory";
    case cudaMemoryTypeManaged:
      return "managed memory";
  }
  return "unknown memory";
}

/// Empty when an array whose first and last elements are memory of types `first` and `last` is
/// pinned host memory; otherwise why not, starting "your <name> is ...". (The types are what the
/// runtime reports in the worker, where the array is: lab07_probe::make_buffers.)
std::string pinned_problem(cudaMemoryType first, cudaMemoryType last, const std::string& name) {
  const cudaMemoryType types[] = {first, last};
  for (int q = 0; q < 2; ++q) {
    const cudaMemoryType type = types[q];
    if (type == cudaMemoryTypeHost) continue;
    if (type == cudaMemoryTypeUnregistered)
      return lab07::pageable_message(name) + (q == 0 ? "" : " (its last element is not pinned)");
    return "your " + name + " is " + memory_type_name(type) +
           ", not host memory: the pipeline's host buffers must be pinned host memory "
           "(cudaMallocHost)";
  }
  return "";
}

/// Empty when make_pinned_buffers(n) returned two separate pinned arrays of n floats (as `report`
/// describes them); otherwise what is wrong.
std::string buffer_problems(const lab07_probe::BuffersReport& report, std::size_t n) {
  struct Array {
    const char* field;
    const char* name;
    std::uint64_t address, size;
    cudaMemoryType first, last;
  };
  const Array arrays[] = {
      {"in", "h_in", report.in_address, report.in_size, report.in_first, report.in_last},
      {"out", "h_out", report.out_address, report.out_size, report.out_first, report.out_last}};
  std::string problems;
  for (const Array& array : arrays) {
    if (array.address == 0 || array.size != n) {
      problems += std::string("make_pinned_buffers(") + std::to_string(n) + ")." + array.field +
                  " holds " + std::to_string(array.size) + " floats at " +
                  (array.address ? "a valid address" : "nullptr") + "; expected " +
                  std::to_string(n) + " floats\n";
      continue;
    }
    const std::string pinned = pinned_problem(array.first, array.last, array.name);
    if (!pinned.empty()) problems += pinned + "\n";
  }
  if (!problems.empty()) return problems;
  const std::uint64_t in = report.in_address, out = report.out_address, bytes = n * sizeof(float);
  if (in < out + bytes && out < in + bytes)
    problems += "make_pinned_buffers(" + std::to_string(n) +
                ") returned overlapping arrays: in and out must be separate\n";
  return problems;
}

// ---- Step 1 -------------------------------------------------------------------------------------

using PinnedMemory = kit::GpuTest;

KIT_TEST(PinnedMemory, IsPinnedTellsPageLockedFromPageable, "streams.1", gpu, 2,
         "is_pinned: true for cudaMallocHost, cudaHostAlloc and cudaHostRegister memory, false "
         "for malloc, std::vector and cudaMalloc memory") {
  constexpr std::size_t n = 1 << 16;
  // The host memory is the worker's (host memory cannot cross to the judge): the probe allocates
  // each kind and asks the student's is_pinned about it; the device memory is the judge's. What
  // each answer should be is decided here.
  kit::DeviceBuffer<float> device(n);
  const lab07_probe::PinnedAnswers answers = lab07_probe::is_pinned_cases(n, device.data());

  struct Case {
    const char* what;
    lab07_probe::PinnedCase which;
    bool pinned;
  };
  std::vector<Case> cases = {
      {"memory from cudaMallocHost", lab07_probe::kMallocHost, true},
      {"the middle of a cudaMallocHost array", lab07_probe::kMallocHostMiddle, true},
      {"memory from cudaHostAlloc", lab07_probe::kHostAlloc, true},
      {"memory from malloc", lab07_probe::kMalloc, false},
      {"a std::vector's memory", lab07_probe::kVector, false},
      {"device memory from cudaMalloc", lab07_probe::kDevice, false}};
  if (answers.registered_ok)  // not allowed on every machine: otherwise that case is left out
    cases.push_back(
        {"a std::vector registered with cudaHostRegister", lab07_probe::kRegistered, true});
  for (const Case& c : cases) {
    const bool got = answers.answer[c.which];
    EXPECT_EQ(got, c.pinned) << "is_pinned(" << c.what << ") returned " << std::boolalpha << got
                             << ", expected " << c.pinned;
  }
  const cudaError_t left = answers.left;
  EXPECT_EQ(left, cudaSuccess) << "is_pinned left an error behind (" << cudaGetErrorName(left)
                               << "): a later CUDA call would report it as its own; clear it "
                                  "with cudaGetLastError()";
}

KIT_TEST(PinnedMemory, MakePinnedBuffersReturnsTwoPinnedArrays, "streams.1", gpu, 2,
         "make_pinned_buffers(n) returns two separate pinned arrays of n floats each "
         "(n = 1, 1000, 2^20 + 7)") {
  auto rng = kit::test_random();
  for (const std::size_t n : {std::size_t{1}, std::size_t{1000}, kBig}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    // The buffers live in the worker (they are host memory); the report says what they are.
    lab07_probe::BuffersReport report;
    const WorkerHost buffers = WorkerHost::student(n, &report);
    const std::string problems = buffer_problems(report, n);
    EXPECT_TRUE(problems.empty()) << problems;
    if (!problems.empty()) continue;
    // Every element can be reached: the values go to the device (the judge's buffer) from `in`
    // with cudaMemcpy, and back into `out`, which comes back here.
    const std::vector<float> values = rng.floats(n, -1, 1);
    kit::DeviceBuffer<float> device(n);
    const std::vector<float> out =
        lab07_probe::copy_through_device(buffers.id(), {values}, device.data()).values;
    EXPECT_TRUE(out.size() == n && std::equal(values.begin(), values.end(), out.begin()))
        << "values copied to the device from make_pinned_buffers(n).in did not come back "
           "whole into .out";
  }
}

std::string size_name(const ::testing::TestParamInfo<std::size_t>& info) {
  return "n_" + std::to_string(info.param);
}

class RoundTrip : public kit::GpuTestWithParam<std::size_t> {};

KIT_TEST_P(RoundTrip, QueuesOnItsStreamAndReturnsAtOnce, "streams.1", gpu, 1,
           "round_trip_async queues copy-in, kernel and copy-out on the stream it is given and "
           "returns without waiting") {
  // The stream is held this long before the round trip can run. A call that waits for the GPU
  // returns after it; one that queues its work returns within milliseconds, so half of it leaves
  // a loaded machine 200 ms for the call, and the 50 ms check after it as much again.
  constexpr double kHoldMs = 400;
  const std::size_t n = GetParam();
  auto rng = kit::test_random();
  const int iterations = static_cast<int>(rng.uniform_int(1, 16));
  const std::vector<float> in = rng.floats(n, -1, 1);
  kit::DeviceBuffer<float> d_in(n), d_out(n);
  // The host buffers and the stream must be the worker's: the probe makes a pinned h_in (a copy of
  // `in`) and a guarded pinned h_out, loads the kernel's module, holds a stream with a kernel for
  // kHoldMs, calls round_trip_async on that stream and times its return on the host; 50 ms later
  // it notes whether the stream is still held and how much of h_out was written; then it waits
  // for the stream and returns h_out (with its guards) and h_in. The verdict is taken here.
  const lab07_probe::RoundTripReport report =
      lab07_probe::round_trip_held({in}, iterations, d_in.data(), d_out.data(), kHoldMs);
  const HostOutput h_out(report.out.values, n, lab07_probe::kHostGuard);
  const double returned_ms = report.returned_ms;
  EXPECT_LT(returned_ms, kHoldMs / 2)
      << "round_trip_async returned after " << returned_ms << " ms, although work queued ahead of "
      << "it kept the stream busy for " << kHoldMs << " ms: it waited for the GPU (a cudaMemcpy, "
      << "or a synchronize). Queue all three steps with cudaMemcpyAsync and launch_work on "
      << "`stream`, and return.";

  const bool still_held = report.still_held;
  const std::size_t early = report.early_written;
  if (still_held && early > 0)
    ADD_FAILURE() << early << " of " << n << " elements of h_out were written while `stream` "
                  << "was still held by earlier work: part of your round trip ran on another "
                  << "stream (the default stream?). Pass `stream` to both cudaMemcpyAsync calls "
                  << "and to launch_work.";
  if (still_held && report.early_copied > 0)
    ADD_FAILURE() << report.early_copied << " of the first "
                  << std::min(n, lab07_probe::kPeekFloats) << " elements of d_in were copied in while `stream` was still held by earlier "
                  << "work: the copy-in ran on another stream (the default stream?). Pass `stream` "
                  << "to the cudaMemcpyAsync that copies h_in to d_in.";
  EXPECT_TRUE(host_output_matches("h_out", expected_output(in.data(), n, iterations), h_out,
                                  /*chunks=*/0, /*streams=*/0));
  EXPECT_TRUE(report.in.values == in) << "h_in was modified";
}

INSTANTIATE_TEST_SUITE_P(Sizes, RoundTrip, ::testing::Values(std::size_t{1}, std::size_t{33}, kBig),
                         size_name);

// Only step 1's is_pinned decides this test: run() refuses a pageable buffer in its given start
// (require_pinned) before any code of steps 2 and 3 runs, and pinned buffers are not run at all
// (that would run steps 2 and 3) but handed to require_pinned, run()'s first call, directly.
KIT_TEST(PinnedMemory, RunRefusesPageableBuffers, "streams.1", gpu, 2,
         "Pipeline::run throws std::invalid_argument naming h_in or h_out when either is "
         "pageable, and require_pinned, the first thing run() does, accepts pinned buffers") {
  constexpr std::size_t n = 1000;
  // The pipeline and the host buffers are the worker's: pinned (cudaMallocHost) or pageable
  // (std::vector) as asked; how run() ended comes back with the exception's message.
  WorkerPipeline pipeline(n, 2);
  WorkerHost pageable_in(n, false, true), pageable_out(n, true, false), pinned(n, true, true);
  auto expect_refused = [&](WorkerHost& buffers, const std::string& name) {
    const lab07_probe::RunEnd end = pipeline.run_to_end(buffers, 2, 1);
    if (end.ended != lab07_probe::Ended::invalid_argument) {
      ADD_FAILURE() << "run() "
                    << (end.ended == lab07_probe::Ended::returned
                            ? std::string("accepted")
                            : "threw another exception (" + end.what + ") for")
                    << " a pageable " << name
                    << ": it must refuse it with std::invalid_argument (see require_pinned)";
      return;
    }
    EXPECT_TRUE(end.what.find("pageable") != std::string::npos &&
                end.what.find(name) != std::string::npos)
        << "run() refused a pageable " << name << " with the message \"" << end.what
        << "\", which should name " << name << " and say it is pageable";
  };
  expect_refused(pageable_in, "h_in");
  expect_refused(pageable_out, "h_out");
  try {
    lab07_probe::require_pinned_buffers(pinned.id());
  } catch (const std::invalid_argument& e) {
    ADD_FAILURE() << "require_pinned, which run() calls first, refused pinned buffers from "
                     "cudaMallocHost: "
                  << e.what() << "\n(is_pinned must say true for them)";
  }
}

// ---- Step 2 -------------------------------------------------------------------------------------

using PipelineHost = kit::HostTest;

/// Empty when chunk_range(n, chunks, c) for c = 0 .. chunks-1 covers [0, n) in order with no chunk
/// over ceil(n / chunks); otherwise what is wrong, with the ranges.
std::string chunking_problem(std::size_t n, int chunks) {
  const std::size_t largest = (n + static_cast<std::size_t>(chunks) - 1) / chunks;
  std::ostringstream ranges, problem;
  std::size_t next = 0;
  const std::vector<lab07::ChunkRange> all = lab07_probe::chunk_ranges(n, chunks);
  if (all.size() != static_cast<std::size_t>(chunks))
    return "the worker's answer has " + std::to_string(all.size()) + " chunks, not " +
           std::to_string(chunks);
  for (int c = 0; c < chunks; c++) {
    const lab07::ChunkRange r = all[static_cast<std::size_t>(c)];
    if (c < 8) ranges << " [" << r.begin << ", " << r.end << ")";
    if (c == 8 && chunks > 9) ranges << " ...";
    if (problem.tellp() > 0) continue;
    if (r.end < r.begin)
      problem << "chunk " << c << " ends before it begins";
    else if (r.begin != next)
      problem << "chunk " << c << " starts at " << r.begin << " but the chunks before it end at "
              << next
              << (r.begin > next ? ": the elements between are in no chunk"
                                 : ": some elements are in two chunks");
    else if (r.size() > largest)
      problem << "chunk " << c << " holds " << r.size()
              << " elements, more than ceil(n / chunks) = " << largest;
    next = std::max(next, r.end);
  }
  if (problem.tellp() == 0 && next != n)
    problem << "the chunks end at " << next << ", not at n = " << n
            << (next < n ? ": the last elements are in no chunk" : "");
  if (problem.tellp() == 0) return "";
  return "chunk_range(" + std::to_string(n) + ", " + std::to_string(chunks) +
         ", c): " + problem.str() + "; the chunks are" + ranges.str();
}

KIT_TEST(PipelineHost, ChunkRangeCoversEveryElementOnceInOrder, "streams.2", host, 2,
         "chunk_range cuts n elements into chunks covering [0, n) in order, none over "
         "ceil(n / chunks): 10 in 4, 33 in 7, 1 in 16, 2^20 + 7 in 16, and 1000 random cases") {
  const std::pair<std::size_t, int> fixed[] = {{10, 4},   {33, 7}, {1, 16}, {kBig, 16},
                                               {kBig, 1}, {64, 8}, {3, 3},  {1000, 7}};
  for (const auto& [n, chunks] : fixed) {
    const std::string problem = chunking_problem(n, chunks);
    EXPECT_TRUE(problem.empty()) << problem;
  }
  auto rng = kit::test_random();
  for (int i = 0; i < 1000; ++i) {
    const auto n = static_cast<std::size_t>(rng.uniform_int(1, 1 << 26));
    const auto chunks = static_cast<int>(rng.uniform_int(1, 64));
    const std::string problem = chunking_problem(n, chunks);
    ASSERT_TRUE(problem.empty()) << problem << "\n" << kit::seed_note();
  }
}

struct PipelineCase {
  std::size_t n;
  int chunks;
  int streams;
};

std::string case_name(const ::testing::TestParamInfo<PipelineCase>& info) {
  return "n_" + std::to_string(info.param.n) + "_" + std::to_string(info.param.chunks) + "chunks_" +
         std::to_string(info.param.streams) + "streams";
}

/// Runs `pipeline` once over fresh inputs of n elements and checks the output and the input.
/// (The pipeline and its pinned host buffers are the worker's; h_out is read there the moment
/// run() ends, and again once the device is idle.)
void check_pipeline(WorkerPipeline& pipeline, std::size_t n, int chunks, kit::Random& rng) {
  const int iterations = static_cast<int>(rng.uniform_int(1, 16));
  const std::vector<float> in = rng.floats(n, -1, 1);
  WorkerHost host(n);
  host.write(in);
  const lab07_probe::RunEnd end = pipeline.run_to_end(host, chunks, iterations);
  WorkerHost::Contents contents = host.read(/*with_in=*/true);
  expect_complete_output(expected_output(in.data(), n, iterations), host.at_return(contents),
                         contents.now, chunks, pipeline.num_streams(), end);
  EXPECT_TRUE(contents.in == in) << "h_in was modified";
}

class PipelineRun : public kit::GpuTestWithParam<PipelineCase> {};

KIT_TEST_P(PipelineRun, WritesEveryElementOnce, "streams.2", gpu, 1,
           "run() writes work(h_in[i]) to every h_out[i], nothing outside h_out, h_in unchanged") {
  const std::size_t n = GetParam().n;
  const int chunks = GetParam().chunks, streams = GetParam().streams;
  auto rng = kit::test_random();
  WorkerPipeline pipeline(n, streams);
  check_pipeline(pipeline, n, chunks, rng);
}

INSTANTIATE_TEST_SUITE_P(Chunks, PipelineRun,
                         ::testing::Values(PipelineCase{kBig, 1, 4}, PipelineCase{kBig, 3, 4},
                                           PipelineCase{kBig, 4, 4}, PipelineCase{kBig, 7, 4},
                                           PipelineCase{kBig, 16, 4}, PipelineCase{kBig, 7, 1},
                                           PipelineCase{kBig, 16, 3}, PipelineCase{kBig, 3, 8},
                                           PipelineCase{1, 1, 4}, PipelineCase{1, 3, 4},
                                           PipelineCase{1, 16, 4}, PipelineCase{33, 4, 4},
                                           PipelineCase{33, 7, 4}, PipelineCase{33, 16, 4}),
                         case_name);

// A shape drawn from the seed, besides the listed ones: a pipeline right only on the shapes above
// (a table of their chunk edges, say) fails here.
using PipelineDrawn = kit::GpuTest;

KIT_TEST(PipelineDrawn, WritesEveryElementOnceOnAShapeFromTheSeed, "streams.2", gpu, 1,
         "run() on 1 to 2^22 elements, 1 to 64 chunks and 1 to 8 streams drawn from the seed: "
         "every element once, nothing outside h_out") {
  auto rng = kit::test_random();
  const auto n = static_cast<std::size_t>(rng.uniform_int(1, 1 << 22));
  const auto chunks = static_cast<int>(rng.uniform_int(1, 64));
  const auto streams = static_cast<int>(rng.uniform_int(1, 8));
  SCOPED_TRACE(std::to_string(n) + " elements, " + std::to_string(chunks) + " chunks, " +
               std::to_string(streams) + " streams, drawn from the seed; " + kit::seed_note());
  WorkerPipeline pipeline(n, streams);
  check_pipeline(pipeline, n, chunks, rng);
}

using PipelineReuse = kit::GpuTest;

KIT_TEST(PipelineReuse, RunsAgainOnFreshData, "streams.2", gpu, 2,
         "one Pipeline runs twice: 2^20 + 7 elements in 7 chunks, then 1000 in 3 chunks on "
         "fresh data; both outputs exact") {
  auto rng = kit::test_random();
  WorkerPipeline pipeline(kBig, 4);
  {
    SCOPED_TRACE("first run: 2^20 + 7 elements, 7 chunks");
    check_pipeline(pipeline, kBig, 7, rng);
  }
  {
    SCOPED_TRACE("second run: 1000 elements, 3 chunks");
    check_pipeline(pipeline, 1000, 3, rng);
  }
}

// Whether run() waited for every stream shows in h_out only when the streams finish far apart.
// Each chunk here is a kernel of two full waves of blocks (every SM at its thread limit), each wave
// about 17 ms on an H100 (2^21 dependent steps per thread; 2^22 until 2026-11-29, which doubled
// the test's seconds and caught no more): a later kernel's blocks start only once the earlier
// kernel's have all been dispatched, so chunk 2 on stream 2 finishes tens of milliseconds after
// chunk 0 on stream 0, and a run() that waited only for stream 0 returns with chunks 1 and 2
// still poison. The copy the worker takes of h_out at that moment takes about a
// millisecond; the margin is for a worker that the CPU scheduler holds back for a while, as on a
// loaded machine. (With 2^18 steps, 4 ms apart, one such run on an H100 found h_out complete.)
// The inputs are fixed points of one step of work() (x * kWorkScale + kWorkShift rounds back to
// x: floats within about 1e-4 of 1), so the expected output is the input itself, whatever the
// number of steps.
using PipelineWaits = kit::GpuTest;

KIT_TEST(PipelineWaits, WaitsForTheLastStreamToFinish, "streams.2", gpu, 1,
         "run() with 3 chunks on 3 streams, each kernel keeping the whole GPU busy for "
         "milliseconds, up to 4 times: h_out complete when run() returns, not only stream 0's "
         "chunk") {
  constexpr int kChunks = 3;
  constexpr int kIterations = 1 << 21;
  int sms = 0, threads_per_sm = 0;
  KIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  KIT_CUDA_CHECK(
      cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, 0));
  const std::size_t n = static_cast<std::size_t>(kChunks) * 2 * static_cast<std::size_t>(sms) *
                        static_cast<std::size_t>(threads_per_sm);
  auto rng = kit::test_random();
  std::vector<float> in = rng.floats(n, 0.99990f, 1.00007f);
  for (const float x : in)
    if (lab07::work(x, 1) != x)
      throw std::logic_error("kit grader: an input of PipelineWaits is not a fixed point of work()");
  SCOPED_TRACE(std::to_string(n) + " elements (2 waves of " + std::to_string(sms) + " SMs x " +
               std::to_string(threads_per_sm) + " threads per chunk), " +
               std::to_string(kChunks) + " chunks on " + std::to_string(kChunks) + " streams, " +
               std::to_string(kIterations) + " steps of work() per element; " + kit::seed_note());
  WorkerPipeline pipeline(n, kChunks);
  WorkerHost host(n);
  // Which chunk the GPU finishes last is its own choice: where the three kernels overlap, stream
  // 0's chunk can end last, and a run() that waits for stream 0 alone then returns with h_out
  // complete (the H100 selftests of 2026-11-23, -26 and -27 each saw it once). So the run is
  // repeated, h_out poisoned each time, until one run shows the early return, at most kTrials
  // times. A run() that waits for every stream passes every one of them.
  constexpr int kTrials = 4;
  for (int trial = 0; trial < kTrials && !HasFailure(); ++trial) {
    host.write(in);
    const lab07_probe::RunEnd end = pipeline.run_to_end(host, kChunks, kIterations);
    WorkerHost::Contents contents = host.read(/*with_in=*/false);
    expect_complete_output(in, host.at_return(contents), contents.now, kChunks, kChunks, end);
  }
}

// ---- Step 3 -------------------------------------------------------------------------------------

/// What is wrong with the timeline run() returned (empty when nothing is), given the times of
/// each stage alone over all n elements and the time the call to run() took. Without
/// `check_durations` a stage's length is not compared with its length alone (under
/// compute-sanitizer, where instrumentation changes every duration).
std::string timeline_problems(const lab07::Timeline& timeline, std::size_t n, int chunks,
                              int streams, const StageTimes& alone, double run_ms,
                              bool check_durations) {
  constexpr double kEps = 0.002;  // ms: float rounding of event times
  constexpr const char* kNames[] = {"copy-in", "kernel", "copy-out"};
  std::ostringstream out;
  out.precision(4);
  int found = 0;
  auto problem = [&]() -> std::ostream& {
    ++found;
    return out << "  ";
  };
  if (timeline.size() != static_cast<std::size_t>(chunks)) {
    problem() << "run() returned " << timeline.size() << " timeline entries for " << chunks
              << " chunks: read_timeline must return one per chunk\n";
    return out.str();
  }
  for (int c = 0; c < chunks && found < 6; ++c)
    for (int s = 0; s < lab07::kStages; ++s) {
      const lab07::StageTime& t = timeline[c].stage[s];
      if (!std::isfinite(t.start_ms) || !std::isfinite(t.end_ms))
        problem() << "chunk " << c << ", " << kNames[s] << ": start " << t.start_ms << ", end "
                  << t.end_ms << ": every stage of every chunk needs both times\n";
      else if (t.end_ms < t.start_ms - kEps)
        problem() << "chunk " << c << ", " << kNames[s] << " ends at " << t.end_ms
                  << " ms, before it starts at " << t.start_ms << " ms\n";
    }
  if (found > 0) return out.str();

  const float origin = timeline[0].stage[lab07::kCopyIn].start_ms;
  if (std::fabs(origin) > kEps)
    problem() << "chunk 0's copy-in starts at " << origin << " ms: times are measured from the "
              << "start of chunk 0's copy-in, so it starts at 0\n";
  for (int c = 0; c < chunks && found < 6; ++c) {
    const auto& stage = timeline[c].stage;
    for (int s = 1; s < lab07::kStages; ++s)
      if (stage[s].start_ms < stage[s - 1].end_ms - kEps)
        problem() << "chunk " << c << ": its " << kNames[s] << " starts at " << stage[s].start_ms
                  << " ms, before its " << kNames[s - 1] << " ends at " << stage[s - 1].end_ms
                  << " ms; in one stream each stage starts after the one before it\n";
    if (c >= streams) {
      const auto& previous = timeline[c - streams].stage;
      if (stage[lab07::kCopyIn].start_ms < previous[lab07::kCopyOut].end_ms - kEps)
        problem() << "chunk " << c << " starts its copy-in at " << stage[lab07::kCopyIn].start_ms
                  << " ms, before chunk " << c - streams << " (the chunk before it on stream "
                  << c % streams << ") ends its copy-out at " << previous[lab07::kCopyOut].end_ms
                  << " ms\n";
    }
    const std::size_t size = lab07::chunk_range(n, chunks, c).size();
    for (int s = 0; s < lab07::kStages && size > 0 && check_durations; ++s) {
      // A chunk's share of a stage takes about its share of the stage's time alone (sharing an
      // engine with other chunks only slows it down). Stages whose half share is under 0.02 ms
      // are not checked (launch and event noise). A quarter of the share is the bar: room for
      // noise and for the judge's copies alone being slower than the worker's (see
      // TimesEveryStageOfEveryChunk: once 2.2x); events on the wrong stream give about 5% of it.
      const double share = alone.ms[s] * static_cast<double>(size) / n;
      const double took = stage[s].end_ms - stage[s].start_ms;
      if (0.5 * share >= 0.02 && took < 0.25 * share)
        problem() << "chunk " << c << "'s " << kNames[s] << " took " << took << " ms, but "
                  << (s == lab07::kKernel ? "its share of the kernel's work"
                                          : "copying its " + mib(size * sizeof(float)))
                  << " takes about " << share << " ms on its own: were its events recorded on "
                  << "the chunk's stream, around the stage's work?\n";
    }
  }
  double first = INFINITY, last = -INFINITY;
  for (const lab07::ChunkTimes& chunk : timeline)
    for (const lab07::StageTime& t : chunk.stage) {
      first = std::min(first, static_cast<double>(t.start_ms));
      last = std::max(last, static_cast<double>(t.end_ms));
    }
  if (last - first > 1.02 * run_ms + 0.05)
    problem() << "the timeline spans " << last - first << " ms, but the whole call to run() took "
              << run_ms << " ms\n";
  return out.str();
}

class EventsTimeline : public kit::GpuTestWithParam<PipelineCase> {};

KIT_TEST_P(EventsTimeline, TimesEveryStageOfEveryChunk, "streams.3", timed, 2,
           "run() returns one time entry per chunk: measured from chunk 0's copy-in, stages in "
           "stream order, each as long as its work needs, all within the call") {
  const std::size_t n = GetParam().n;
  const int chunks = GetParam().chunks, streams = GetParam().streams;
  auto rng = kit::test_random();
  const std::vector<float> in = rng.floats(n, -1, 1);
  // The student's pipeline runs in the worker, on pinned buffers of the probe's holding `in`. Set
  // up first: the worker of a grading run starts beside the judge's first test, and its start-up
  // (CUDA context, allocations) must not overlap the stages timed alone below. Once, on an H100,
  // this test came first and the judge's copies alone took 2.2x as long as the same copies in the
  // reference's pipeline timed a moment later.
  WorkerPipeline pipeline(n, streams);
  WorkerHost host(n);
  host.write(in);
  // The stages alone are timed here, on the judge's own pinned buffers and with the kit's kernel.
  const kit::PinnedBuffer<float> h_in = pinned_copy(in);
  kit::PinnedBuffer<float> h_out(n);
  kit::DeviceBuffer<float> d_in(n), d_out(n);
  lab07::Stream stream;
  EventTimer timer;
  Workload w{h_in.data(), h_out.data(), d_in.data(), d_out.data(), n, 8, stream};
  // Size the kernel like the copy, so that every stage has a length worth checking.
  if (n >= (1u << 20)) w.iterations = lab07_grader::iterations_like_copy_in(w, timer);
  const StageTimes alone = lab07_grader::median_stage_times(w, timer);

  pipeline.run(host, chunks, w.iterations);  // warm-up
  lab07::Timeline timeline;
  // How long the call to run() took: the worker's events around the call (kit code, TimedScope),
  // believed only where the judge's clock agrees; and never more than the judge's own clock around
  // the whole remote call, which bounds it from above.
  double run_ms = 0;
  {
    kit::remote::TimedScope call;
    const auto start = std::chrono::steady_clock::now();
    timeline = pipeline.run(host, chunks, w.iterations);
    const double judge_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    run_ms = call.used() ? std::min(call.ms(), judge_ms) : judge_ms;
  }
  const bool sanitized = kit::under_compute_sanitizer();
  const std::string problems =
      timeline_problems(timeline, n, chunks, streams, alone, run_ms, !sanitized);
  EXPECT_TRUE(problems.empty()) << "the timeline run() returned is wrong:\n"
                                << problems << "the timeline as recorded (" << n << " elements, "
                                << w.iterations << " iterations):\n"
                                << lab07_grader::render_timeline(timeline, streams);
  // Skipped, not passed: the durations were not checked.
  if (sanitized && problems.empty())
    GTEST_SKIP() << "stage durations not checked under compute-sanitizer (it changes every "
                    "duration); everything else in the timeline was checked and is right";
}

INSTANTIATE_TEST_SUITE_P(Chunks, EventsTimeline,
                         ::testing::Values(PipelineCase{1u << 24, 8, 4},
                                           PipelineCase{(1u << 22) + 5, 7, 3},
                                           PipelineCase{33, 16, 4}),
                         case_name);

// ---- Performance --------------------------------------------------------------------------------

/// One round of the perf tests: the three stages alone (events), the serial version and the
/// student's pipeline (host time).
struct Round {
  double pipeline_ms = 0, ideal_ms = 0, serial_ms = 0;
  StageTimes stages;
  lab07::Timeline timeline;
};

/// What the perf tests measure: rounds of one pipeline configuration, and both ratios' verdicts
/// sampled from them (the second ratio's sampling reuses the first's rounds before it runs more).
struct PerfMeasurement {
  int chunks = 0, streams = 0, iterations = 0;
  std::vector<Round> rounds;
  int timing_mismatches = 0;
  kit::SampledRatio overlap, speedup;
};

class StreamsPerf : public kit::PerfTest {
 protected:
  enum class Ratio { overlap_vs_ideal, speedup_vs_serial };
  void measure(Ratio which);

 private:
  void sample_both(const lab07::PipelineConfig& config, PerfMeasurement& m);
  void report(Ratio which, const PerfMeasurement& m, const kit::DeviceInfo& device);
};

// 2^26 floats: 256 MiB each way, far beyond any cache, copies of several milliseconds.
constexpr std::size_t kPerfElements = std::size_t{1} << 26;

/// The judge's own pinned input and output of the perf tests (where the serial version and the
/// stages alone run), made ahead of the turn when the runner starts the process early: pinning
/// 512 MiB took 0.28 s of the perf phase on an H200 (KIT_BEFORE_TURN).
struct JudgeHost {
  kit::PinnedBuffer<float> in{kPerfElements}, out{kPerfElements};
};

std::optional<JudgeHost>& judge_host_made_early() {
  static std::optional<JudgeHost> made;
  return made;
}

void make_judge_host() { judge_host_made_early().emplace(); }

KIT_BEFORE_TURN(StreamsPerf, make_judge_host);

/// The buffers made ahead of the turn (once), else new ones.
JudgeHost take_judge_host() {
  std::optional<JudgeHost>& early = judge_host_made_early();
  if (early) return *std::exchange(early, std::nullopt);
  return {};
}

// Both tests read their ratio from the same rounds: the first of them in a process sets up the
// 2^26 floats, checks the pipeline, samples both ratios and keeps the measurement; the second
// reports its ratio from it (one setup of 256 MiB each way instead of two: about 7 s on an H100).
// A test run alone, or after a failed check, measures for itself.
void StreamsPerf::measure(Ratio which) {
  static std::optional<PerfMeasurement> measured;
  const kit::DeviceInfo device = kit::query_device();
  std::printf("[ kit perf ] copy engines (asyncEngineCount): %d%s\n", device.copy_engines,
              device.copy_engines >= 2
                  ? ": a copy-in, a copy-out and kernels can all run at the same time"
                  : ": copies in the two directions take turns");
  RecordProperty("copy_engines", std::to_string(device.copy_engines));

  const lab07::PipelineConfig config = lab07_probe::perf_config(0);  // lab07::perf_config()
  ASSERT_TRUE(config.chunks >= 1 && config.chunks <= 1024 && config.streams >= 1 &&
              config.streams <= 64)
      << "perf_config() returned " << config.chunks << " chunks over " << config.streams
      << " streams: choose 1 to 1024 chunks and 1 to 64 streams";
  RecordProperty("chunks", std::to_string(config.chunks));
  RecordProperty("streams", std::to_string(config.streams));

  if (measured && measured->chunks == config.chunks && measured->streams == config.streams) {
    std::printf("[ kit perf ] the rounds of the test before, same pipeline and process: %zu\n",
                measured->rounds.size());
  } else {
    measured.reset();
    PerfMeasurement m;
    sample_both(config, m);
    if (HasFailure()) return;
    measured = std::move(m);
  }
  report(which, *measured, device);
}

void StreamsPerf::sample_both(const lab07::PipelineConfig& config, PerfMeasurement& m) {
  m.chunks = config.chunks;
  m.streams = config.streams;
  constexpr std::size_t n = kPerfElements;
  // The student's buffers stay in the worker, where the pipeline runs on them; the judge keeps
  // its own copy of the input, from which it computes the expected values.
  lab07_probe::BuffersReport made;
  WorkerHost host = WorkerHost::student(n, &made);
  const std::string problems = buffer_problems(made, n);
  ASSERT_TRUE(problems.empty()) << problems << "(the pipeline is timed on the buffers "
                                << "make_pinned_buffers(" << n << ") returns)";
  // The input is made in the worker from the seed (fill_input), and the judge knows each value
  // by the same rule (kit::Drawn), so 256 MiB need not cross the socket.
  kit::Drawn in;
  auto rng = kit::test_random();
  kit::trace("the student's pinned buffers made");
  auto fill_input = [&] {
    in = host.fill(rng, -1, 1);
    kit::trace("input made in the worker");
  };
  fill_input();

  // The serial version and the stages alone run here, on the judge's own pinned buffers.
  JudgeHost judge = take_judge_host();
  kit::PinnedBuffer<float>& judge_in = judge.in;
  kit::parallel_parts(n, kit::part_count(n), [&](std::size_t, std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) judge_in[i] = in.at(i);
  });
  kit::PinnedBuffer<float>& judge_out = judge.out;
  kit::DeviceBuffer<float> d_in(n), d_out(n);
  lab07::Stream stream;
  EventTimer timer;
  Workload w{judge_in.data(), judge_out.data(), d_in.data(), d_out.data(), n, 1, stream};
  // The kernel is sized so that it takes about as long as the copy-in: three comparable stages.
  kit::trace("the judge's buffers made");
  w.iterations = lab07_grader::iterations_like_copy_in(w, timer);
  kit::trace("kernel iterations chosen");
  m.iterations = w.iterations;

  WorkerPipeline pipeline(n, config.streams);
  // The pipeline must compute the right thing at this size too, before timing and after it on
  // fresh inputs (every element written; a sample of them, chunk edges included, checked exactly).
  auto check = [&](const char* when) {
    host.poison_output();
    const lab07::Timeline timeline = pipeline.run(host, config.chunks, w.iterations);
    EXPECT_EQ(timeline.size(), static_cast<std::size_t>(config.chunks))
        << "run() returned a timeline of " << timeline.size() << " chunks for " << config.chunks;
    std::vector<std::size_t> probes = {0, n - 1};
    for (int c = 0; c < config.chunks; ++c) {
      const lab07::ChunkRange r = lab07::chunk_range(n, config.chunks, c);
      if (r.size() > 0) probes.insert(probes.end(), {r.begin, r.end - 1});
    }
    for (int i = 0; i < 4096; ++i)
      probes.push_back(static_cast<std::size_t>(rng.uniform_int(0, n - 1)));
    kit::trace("pipeline run for the check");
    const HostOutput output = host.output();
    kit::trace("output read from the worker");
    const float* h_out = output.data();
    // Every element, in parts side by side (2^26 of them took 80 ms in one thread).
    const std::size_t parts = kit::part_count(n);
    std::vector<std::size_t> part_unwritten(parts, 0), part_first(parts, n);
    kit::parallel_parts(n, parts, [&](std::size_t part, std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i)
        if (kit::is_poison(h_out[i]) && part_unwritten[part]++ == 0) part_first[part] = i;
    });
    std::size_t unwritten = 0, first_unwritten = n;
    for (std::size_t p = 0; p < parts; ++p) {
      unwritten += part_unwritten[p];
      first_unwritten = std::min(first_unwritten, part_first[p]);
    }
    std::ostringstream wrong;
    int wrong_count = 0;
    for (const std::size_t i : probes) {
      const float want = lab07::work(in.at(i), w.iterations);
      if (kit::same_bits(want, h_out[i]) || kit::is_poison(h_out[i])) continue;
      if (wrong_count++ < 5)
        wrong << "\n  element " << i << " (" << chunk_of(i, n, config.chunks, config.streams)
              << "): expected " << want << ", got " << h_out[i];
    }
    EXPECT_TRUE(unwritten == 0 && wrong_count == 0)
        << "h_out (" << when << ", " << n << " elements, " << config.chunks
        << " chunks): " << unwritten << " elements never written"
        << (unwritten ? ", the first " + std::to_string(first_unwritten) + " (" +
                            chunk_of(first_unwritten, n, config.chunks, config.streams) + ")"
                      : std::string())
        << "; " << wrong_count << " of " << probes.size() << " sampled elements wrong"
        << wrong.str() << "\n"
        << kit::seed_note();
  };
  check("before timing");
  kit::trace("checked before timing");
  if (HasFailure()) return;

  // Rounds: the three stages alone (events), the serial version and the student's pipeline (host
  // time), in alternating order so that drift hits both sides; one ratio per round.
  std::vector<Round>& rounds = m.rounds;
  int& timing_mismatches = m.timing_mismatches;
  auto run_round = [&] {
    Round r;
    // The pipeline's time: the call to run() timed in the worker with CUDA events (kit code,
    // kit/remote.h TimedScope) and checked against the judge's clock, which is used instead when
    // it disagrees.
    auto pipeline_part = [&] {
      kit::remote::TimedScope call;
      const auto start = std::chrono::steady_clock::now();
      r.timeline = pipeline.run(host, config.chunks, w.iterations);
      const double judge_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      r.pipeline_ms = call.used() ? call.ms() : judge_ms;
      if (call.mismatch()) ++timing_mismatches;
    };
    auto reference_part = [&] {
      r.stages = lab07_grader::time_stages(w, timer);
      r.serial_ms = lab07_grader::serial_ms(w);
    };
    if (rounds.size() % 2 == 0) {
      pipeline_part();
      reference_part();
    } else {
      reference_part();
      pipeline_part();
    }
    r.ideal_ms = lab07_grader::ideal_ms(r.stages, config.chunks);
    return r;
  };
  for (int i = 0; i < 2; ++i) run_round();  // warm-up
  kit::trace("warm-up rounds");
  // The overlap ratio first, on new rounds; then the speed-up, on the same rounds before any new
  // one (each ratio stops as soon as its own verdict is clear).
  m.overlap = kit::sample_ratio(
      [&] {
        rounds.push_back(run_round());
        return rounds.back().ideal_ms / rounds.back().pipeline_ms;
      },
      kit::threshold("streams.overlap_vs_ideal"));
  std::size_t reused = 0;
  m.speedup = kit::sample_ratio(
      [&] {
        if (reused == rounds.size()) rounds.push_back(run_round());
        const Round& r = rounds[reused++];
        return r.serial_ms / r.pipeline_ms;
      },
      kit::threshold("streams.speedup_vs_serial"));
  kit::trace("sampled " + std::to_string(rounds.size()) + " rounds");
  fill_input();
  check("after timing, fresh inputs");
  kit::trace("checked after timing");
}

void StreamsPerf::report(Ratio which, const PerfMeasurement& m, const kit::DeviceInfo& device) {
  const std::vector<Round>& rounds = m.rounds;
  const int timing_mismatches = m.timing_mismatches;
  const int iterations = m.iterations;
  const lab07::PipelineConfig config{m.chunks, m.streams};
  RecordProperty("iterations", std::to_string(iterations));
  const std::string key =
      which == Ratio::overlap_vs_ideal ? "streams.overlap_vs_ideal" : "streams.speedup_vs_serial";
  const double bar = kit::threshold(key);
  const kit::SampledRatio& result = which == Ratio::overlap_vs_ideal ? m.overlap : m.speedup;

  auto median = [&](auto field) {
    std::vector<double> values;
    for (const Round& r : rounds) values.push_back(field(r));
    return kit::summarize(values).median;
  };
  const double pipeline_ms = median([](const Round& r) { return r.pipeline_ms; });
  const double ideal = median([](const Round& r) { return r.ideal_ms; });
  const double serial = median([](const Round& r) { return r.serial_ms; });
  StageTimes stages;
  for (int s = 0; s < lab07::kStages; ++s)
    stages.ms[s] = median([s](const Round& r) { return r.stages.ms[s]; });
  // The timeline of the round whose pipeline time is closest to the median.
  const Round& typical =
      *std::min_element(rounds.begin(), rounds.end(), [&](const auto& a, const auto& b) {
        return std::fabs(a.pipeline_ms - pipeline_ms) < std::fabs(b.pipeline_ms - pipeline_ms);
      });

  if (timing_mismatches > 0) {
    // The worker's clock disagreed with the judge's (kit/remote.h): the judge's times were used.
    RecordProperty("timing_mismatches", std::to_string(timing_mismatches));
    std::printf("[ kit perf ] %d of the student's timed runs took longer by the judge's clock than "
                "the worker reported; the judge's times were used\n",
                timing_mismatches);
  }

  using kit::format_fixed;
  const std::string ratio_name =
      which == Ratio::overlap_vs_ideal ? "ideal / pipeline" : "serial / pipeline";
  std::ostringstream line;
  line << "your pipeline (" << config.chunks << " chunks over " << config.streams << " streams, "
       << iterations << " iterations per element): " << format_fixed(pipeline_ms, 2)
       << " ms; stages alone: copy-in " << format_fixed(stages.ms[0], 2) << ", kernel "
       << format_fixed(stages.ms[1], 2) << ", copy-out " << format_fixed(stages.ms[2], 2)
       << " ms; ideal max + (sum - max) / " << config.chunks << " = " << format_fixed(ideal, 2)
       << " ms; serial " << format_fixed(serial, 2) << " ms -> " << ratio_name << " "
       << format_fixed(result.ratio.median, 3) << " (quartiles " << format_fixed(result.ratio.q1, 3)
       << ".." << format_fixed(result.ratio.q3, 3) << ", "
       << kit::describe_stop(result, "rounds") << "), threshold " << format_fixed(bar, 2) << "; "
       << kit::summary(device);
  const std::string timeline = lab07_grader::render_timeline(typical.timeline, config.streams);
  std::printf("[ kit perf ] %s\n%s", line.str().c_str(), timeline.c_str());

  RecordProperty("stage_ms", format_fixed(stages.ms[0], 3) + " / " + format_fixed(stages.ms[1], 3) +
                                 " / " + format_fixed(stages.ms[2], 3));
  kit::record_sampled_ratio(result, bar, key, "pipeline " + format_fixed(pipeline_ms, 2) + " ms",
                            (which == Ratio::overlap_vs_ideal ? "ideal " : "serial ") +
                                format_fixed(which == Ratio::overlap_vs_ideal ? ideal : serial, 2) +
                                " ms",
                            "rounds");
  std::string advice;
  if (config.chunks == 1)
    advice =
        "one chunk overlaps nothing: each stage waits for the one before it. Choose more "
        "chunks and streams in perf_config().";
  else if (which == Ratio::overlap_vs_ideal)
    advice =
        "the ideal keeps every engine busy from the first chunk to the last; each gap in a "
        "row above is time that stream waited. Look for a synchronize inside the chunk "
        "loop, chunks that all go to one stream (or the default stream), too few streams "
        "for the chunks to overlap, or so many tiny chunks that their fixed costs add up.";
  else
    advice = "with " + std::to_string(config.chunks) + " chunks the best possible speed-up is " +
             format_fixed(serial / ideal, 2) +
             "x (serial / ideal). If the timeline shows the "
             "stages overlapping, more chunks raise that limit; if not, see the timeline.";
  const std::string clocks =
      timing_mismatches == 0
          ? ""
          : "\n" + std::to_string(timing_mismatches) +
                " timed runs took longer by the judge's clock than your process reported (work "
                "on another stream, or a timer that lies?): the judge's times were used";
  EXPECT_TRUE(result.passed) << line.str() << clocks << "\nthe median ratio must be at least "
                             << format_fixed(bar, 2) << " (threshold '" << key << "' in "
                             << kit::thresholds_path() << ")\n"
                             << timeline << advice;
}

KIT_TEST(StreamsPerf, OverlapsNearTheIdealBound, "streams.perf", perf, 10,
         "on 2^26 floats, the pipeline comes close to the ideal max + (sum - max) / chunks of "
         "its three stages timed alone") {
  measure(Ratio::overlap_vs_ideal);
}

KIT_TEST(StreamsPerf, BeatsTheSerialVersion, "streams.perf", perf, 10,
         "on 2^26 floats, the pipeline is much faster than copy-in, kernel and copy-out of the "
         "whole data one after another") {
  measure(Ratio::speedup_vs_serial);
}

}  // namespace
