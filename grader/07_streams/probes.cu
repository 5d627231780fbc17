// Lab 07's probes: grader code that runs in the worker (kit/remote.h), because the student's
// functions here work on host memory and on a Pipeline object, neither of which can cross to the
// judge. The worker keeps the student's Pipeline objects and the host buffers they use under ids
// the judge holds; the probes run the student's code on them with the judge's data and return
// what came out, as plain data. They decide nothing: expected values and verdicts are the
// judge's (test_streams.cu).
#include "remote.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "kit/buffers.h"
#include "kit/check.h"
#include "kit/poison.h"
#include "kit/random.h"

namespace {

using lab07_probe::Floats;
using lab07_probe::kHostGuard;

/// Host buffers of one pipeline run: the student's (make_pinned_buffers) or the probe's own, whose
/// h_out lies between two guards.
struct HostSet {
  std::size_t n = 0;
  std::size_t guard = 0;       ///< floats of guard on each side of h_out (0: the student's)
  lab07::HostBuffers student;  ///< what make_pinned_buffers returned
  kit::PinnedBuffer<float> pinned_in, pinned_out;
  std::vector<float> pageable_in, pageable_out;
  float* in = nullptr;
  float* out_storage = nullptr;  ///< guard + n + guard floats
  std::vector<float> at_return;  ///< h_out's storage when run() ended (run_pipeline_to_end)

  std::size_t storage_size() const { return n + 2 * guard; }
  float* out() const { return out_storage + guard; }
  void poison() {
    std::fill_n(out_storage, guard, kit::guard_value<float>());
    std::fill_n(out_storage + guard, n, kit::poison_value<float>());
    std::fill_n(out_storage + guard + n, guard, kit::guard_value<float>());
  }
};

struct Registry {
  int next_id = 1;
  std::map<int, std::unique_ptr<HostSet>> host_sets;
  std::map<int, std::unique_ptr<lab07::Pipeline>> pipelines;
};

Registry& registry() {
  static Registry r;
  return r;
}

HostSet& host_set(int id) {
  const auto found = registry().host_sets.find(id);
  if (found == registry().host_sets.end())
    throw std::logic_error("kit probe: no host buffers " + std::to_string(id) + " in this worker");
  return *found->second;
}

/// Buffers `id` with both h_in and h_out (not so: make_pinned_buffers returned something else).
HostSet& usable_host_set(int id) {
  HostSet& set = host_set(id);
  if (set.in == nullptr || set.out_storage == nullptr)
    throw std::logic_error("kit probe: host buffers " + std::to_string(id) + " are not usable");
  return set;
}

lab07::Pipeline& pipeline(int id) {
  const auto found = registry().pipelines.find(id);
  if (found == registry().pipelines.end())
    throw std::logic_error("kit probe: no pipeline " + std::to_string(id) + " in this worker");
  return *found->second;
}

/// The memory type the runtime reports for `p`; unregistered when the query fails (its error is
/// cleared: it is the probe's, not the student's).
cudaMemoryType memory_type(const void* p) {
  cudaPointerAttributes found{};
  const cudaError_t status = cudaPointerGetAttributes(&found, p);
  if (status == cudaSuccess) return found.type;
  cudaGetLastError();  // the probe's own query: leave no error for the student's code
  return cudaMemoryTypeUnregistered;
}

// Holds a stream for `ns` nanoseconds: whatever is queued behind it cannot start before then.
__global__ void hold_stream_kernel(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
#if __CUDA_ARCH__ >= 700
    __nanosleep(10000);
#endif
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

}  // namespace

lab07_probe::PinnedAnswers lab07_probe::is_pinned_cases(std::size_t n, const float* device) {
  kit::PinnedBuffer<float> pinned(n);
  float* host_alloc = nullptr;
  KIT_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host_alloc), n * sizeof(float),
                               cudaHostAllocDefault));
  const std::unique_ptr<float, cudaError_t (*)(void*)> free_host_alloc(host_alloc, cudaFreeHost);
  const std::unique_ptr<float, void (*)(void*)> heap(
      static_cast<float*>(std::malloc(n * sizeof(float))), std::free);
  std::vector<float> vector(n), registered(n);
  PinnedAnswers answers;
  answers.registered_ok = cudaHostRegister(registered.data(), n * sizeof(float),
                                           cudaHostRegisterDefault) == cudaSuccess;
  if (!answers.registered_ok) cudaGetLastError();  // not allowed on this machine: left out
  struct Unregister {  // also when is_pinned throws: the vector must not be freed registered
    float* p;
    ~Unregister() {
      if (p != nullptr) cudaHostUnregister(p);
    }
  } unregister{answers.registered_ok ? registered.data() : nullptr};

  const void* cases[kPinnedCases] = {pinned.data(),    pinned.data() + n / 2, host_alloc,
                                     heap.get(),       vector.data(),         device,
                                     registered.data()};
  for (int c = 0; c < kPinnedCases; ++c)
    if (c != kRegistered || answers.registered_ok) answers.answer[c] = lab07::is_pinned(cases[c]);
  // Read and cleared here, so that the judge reports it (the worker would otherwise fail the call
  // with a CUDA error of its own).
  answers.left = cudaGetLastError();
  if (answers.registered_ok) {
    unregister.p = nullptr;
    KIT_CUDA_CHECK(cudaHostUnregister(registered.data()));
  }
  return answers;
}

lab07_probe::BuffersReport lab07_probe::make_buffers(std::size_t n) {
  auto set = std::make_unique<HostSet>();
  set->student = lab07::make_pinned_buffers(n);
  BuffersReport report;
  const lab07::HostArray& in = set->student.in;
  const lab07::HostArray& out = set->student.out;
  report.in_address = reinterpret_cast<std::uint64_t>(in.data());
  report.out_address = reinterpret_cast<std::uint64_t>(out.data());
  report.in_size = in.size();
  report.out_size = out.size();
  if (in.data() != nullptr && in.size() > 0) {
    report.in_first = memory_type(in.data());
    report.in_last = memory_type(in.data() + (in.size() - 1));
  }
  if (out.data() != nullptr && out.size() > 0) {
    report.out_first = memory_type(out.data());
    report.out_last = memory_type(out.data() + (out.size() - 1));
  }
  // Usable by the pipeline probes only when both arrays are what was asked for.
  if (in.data() != nullptr && out.data() != nullptr && in.size() == n && out.size() == n) {
    set->n = n;
    set->in = set->student.in.data();
    set->out_storage = set->student.out.data();
  }
  report.id = registry().next_id++;
  registry().host_sets.emplace(report.id, std::move(set));
  return report;
}

lab07_probe::Floats lab07_probe::copy_through_device(int buffers, const Floats& values,
                                                     float* device) {
  HostSet& set = host_set(buffers);
  const std::size_t n = values.values.size();
  if (set.in == nullptr || set.n != n)
    throw std::logic_error("kit probe: copy_through_device on buffers of another size");
  std::copy(values.values.begin(), values.values.end(), set.in);
  KIT_CUDA_CHECK(cudaMemcpy(device, set.in, n * sizeof(float), cudaMemcpyHostToDevice));
  KIT_CUDA_CHECK(cudaMemcpy(set.out(), device, n * sizeof(float), cudaMemcpyDeviceToHost));
  return Floats{std::vector<float>(set.out(), set.out() + n)};
}

lab07_probe::RoundTripReport lab07_probe::round_trip_held(const Floats& in, int iterations,
                                                          float* d_in, float* d_out,
                                                          double hold_ms) {
  const std::size_t n = in.values.size();
  kit::PinnedBuffer<float> h_in(n);
  std::copy(in.values.begin(), in.values.end(), h_in.data());
  kit::PinnedBuffer<float> h_out(n + 2 * kHostGuard);
  std::fill_n(h_out.data(), h_out.size(), kit::guard_value<float>());
  std::fill_n(h_out.data() + kHostGuard, n, kit::poison_value<float>());
  float* out = h_out.data() + kHostGuard;
  lab07::Stream stream, reader;
  const std::size_t peek = std::min(n, lab07_probe::kPeekFloats);
  kit::PinnedBuffer<std::uint32_t> seen(peek);
  // The kernel's first launch loads its module: do that now, so it is not mistaken for waiting.
  lab07::launch_work(d_in, d_out, n, 1, stream);
  // d_in as no float of `in` is: a copy-in that does not wait for the held stream shows in it.
  KIT_CUDA_CHECK(cudaMemsetAsync(d_in, 0xFF, n * sizeof(float), stream));
  KIT_CUDA_CHECK(cudaStreamSynchronize(stream));

  hold_stream_kernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(hold_ms * 1e6));
  KIT_CHECK_LAUNCH("hold_stream_kernel");
  RoundTripReport report;
  const auto start = std::chrono::steady_clock::now();
  lab07::round_trip_async(h_in.data(), out, d_in, d_out, n, iterations, stream);
  report.returned_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const cudaError_t pending = cudaPeekAtLastError();
  const cudaError_t query = cudaStreamQuery(stream);
  // "Not ready" is an answer, not an error; make sure it is not left for the worker to report.
  if (query == cudaErrorNotReady && pending == cudaSuccess &&
      cudaPeekAtLastError() == cudaErrorNotReady)
    cudaGetLastError();
  report.still_held = query == cudaErrorNotReady;
  // Counted into locals and only then stored: nothing the student's call left in `report` counts.
  std::uint64_t written = 0, copied = 0;
  for (std::size_t i = 0; i < n; ++i) written += !kit::is_poison(out[i]);
  report.early_written = written;
  // The start of d_in, read on a stream of its own that does not wait for the held one.
  KIT_CUDA_CHECK(cudaMemcpyAsync(seen.data(), d_in, peek * sizeof(float), cudaMemcpyDeviceToHost,
                                 reader));
  KIT_CUDA_CHECK(cudaStreamSynchronize(reader));
  for (std::size_t i = 0; i < peek; ++i) copied += seen.data()[i] != 0xFFFFFFFFu;
  report.early_copied = copied;
  KIT_CUDA_CHECK(cudaStreamSynchronize(stream));
  report.out.values.assign(h_out.data(), h_out.data() + h_out.size());
  report.in.values.assign(h_in.data(), h_in.data() + n);
  return report;
}

int lab07_probe::host_buffers(std::size_t n, bool pinned_in, bool pinned_out) {
  auto set = std::make_unique<HostSet>();
  set->n = n;
  set->guard = kHostGuard;
  if (pinned_in) {
    set->pinned_in = kit::PinnedBuffer<float>(n);
    std::fill_n(set->pinned_in.data(), n, 0.0f);
    set->in = set->pinned_in.data();
  } else {
    set->pageable_in.assign(n, 0.0f);
    set->in = set->pageable_in.data();
  }
  if (pinned_out) {
    set->pinned_out = kit::PinnedBuffer<float>(set->storage_size());
    set->out_storage = set->pinned_out.data();
  } else {
    set->pageable_out.assign(set->storage_size(), 0.0f);
    set->out_storage = set->pageable_out.data();
  }
  set->poison();
  const int id = registry().next_id++;
  registry().host_sets.emplace(id, std::move(set));
  return id;
}

void lab07_probe::write_input(int buffers, const Floats& in) {
  HostSet& set = host_set(buffers);
  if (set.in == nullptr || in.values.size() != set.n)
    throw std::logic_error("kit probe: write_input of " + std::to_string(in.values.size()) +
                           " floats into buffers of " + std::to_string(set.n));
  std::copy(in.values.begin(), in.values.end(), set.in);
  set.poison();
}

void lab07_probe::fill_input(int buffers, std::uint64_t base, float lo, float hi) {
  HostSet& set = host_set(buffers);
  if (set.in == nullptr) throw std::logic_error("kit probe: fill_input: no h_in");
  // Drawn on the device and copied in (the values of kit::Drawn{base, lo, hi}.at(i), as the
  // judge computes them): the worker may start no thread, and one core would take a quarter of a
  // second for lab 07's 2^26 floats.
  if (set.n > 0) {
    kit::DeviceBuffer<float> drawn(set.n);
    kit::detail::draw_floats_kernel<<<2048, 256>>>(drawn.data(), set.n, base, lo, hi);
    KIT_CHECK_LAUNCH("the kit's draw kernel");
    KIT_CUDA_CHECK(cudaMemcpy(set.in, drawn.data(), set.n * sizeof(float),
                              cudaMemcpyDeviceToHost));
  }
  set.poison();
}

void lab07_probe::poison_output(int buffers) {
  HostSet& set = host_set(buffers);
  if (set.out_storage == nullptr) throw std::logic_error("kit probe: poison_output: no h_out");
  set.poison();
}

int lab07_probe::open_pipeline(std::size_t capacity, int num_streams) {
  auto p = std::make_unique<lab07::Pipeline>(capacity, num_streams);
  const int id = registry().next_id++;
  registry().pipelines.emplace(id, std::move(p));
  return id;
}

lab07::Timeline lab07_probe::run_pipeline(int pipeline_id, int buffers, int chunks,
                                          int iterations) {
  HostSet& set = usable_host_set(buffers);
  set.at_return.clear();
  return pipeline(pipeline_id).run(set.in, set.out(), set.n, chunks, iterations);
}

lab07_probe::RunEnd lab07_probe::run_pipeline_to_end(int pipeline_id, int buffers, int chunks,
                                                     int iterations) {
  lab07::Pipeline& p = pipeline(pipeline_id);
  HostSet& set = usable_host_set(buffers);
  RunEnd end;
  try {
    p.run(set.in, set.out(), set.n, chunks, iterations);
  } catch (const std::invalid_argument& e) {
    end = {Ended::invalid_argument, e.what()};
  } catch (const std::exception& e) {
    end = {Ended::other_exception, e.what()};
  }
  set.at_return.assign(set.out_storage, set.out_storage + set.storage_size());
  // The error a failed call in run() left pending (cudaEventElapsedTime's "not ready", say) is
  // told by its exception; cleared, so that the worker does not report it again as a CUDA error
  // of its own. A sticky error stays, and the worker still reports it.
  if (end.ended != Ended::returned) cudaGetLastError();
  return end;
}

void lab07_probe::require_pinned_buffers(int buffers) {
  HostSet& set = usable_host_set(buffers);
  lab07::require_pinned(set.in, "h_in");
  lab07::require_pinned(set.out(), "h_out");
}

lab07_probe::HostContents lab07_probe::read_buffers(int buffers, bool with_in) {
  HostSet& set = usable_host_set(buffers);
  HostContents contents;
  if (with_in) contents.in.values.assign(set.in, set.in + set.n);
  contents.out.values.assign(set.out_storage, set.out_storage + set.storage_size());
  contents.at_return.values = set.at_return;
  return contents;
}

void lab07_probe::release(int id) {
  registry().host_sets.erase(id);
  registry().pipelines.erase(id);
}

lab07::PipelineConfig lab07_probe::perf_config(int) {
  return lab07::perf_config();
}

std::vector<lab07::ChunkRange> lab07_probe::chunk_ranges(std::size_t n, int chunks) {
  std::vector<lab07::ChunkRange> ranges;
  ranges.reserve(static_cast<std::size_t>(std::max(chunks, 0)));
  for (int c = 0; c < chunks; ++c) ranges.push_back(lab07::chunk_range(n, chunks, c));
  return ranges;
}

void lab07_probe::copy_output_to(int buffers, float* d_dst) {
  HostSet& set = usable_host_set(buffers);
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  KIT_CUDA_CHECK(cudaMemcpy(d_dst, set.out_storage, set.storage_size() * sizeof(float),
                            cudaMemcpyHostToDevice));
}
