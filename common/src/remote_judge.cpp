// The judge's half of kit/remote.h: starts the worker, sends calls, shares device buffers with it,
// and turns everything that can go wrong in the worker into the running test's verdict. Nothing
// here runs student code; the worker is another process.
#include <cuda.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <new>
#include <optional>
#include <sstream>
#include <vector>

#include "kit/buffers.h"
#include "kit/check.h"
#include "kit/remote.h"
#include "kit/test.h"
#include "kit/timing.h"
#include "driver_vmm.h"

namespace kit::remote {
namespace {

using Clock = std::chrono::steady_clock;

struct Judge {
  std::string worker_path;
  double timeout_s = 60.0;
  pid_t pid = -1;
  int fd = -1;
  std::set<std::uint64_t> shared;                     // buffers the current worker has mapped
  std::vector<std::uint64_t> forgotten;                // of those, freed since the last call
  std::vector<std::uint64_t> call_ids;                 // buffers the call being written names
  double null_call_ms = -1.0;                          // overhead of a timed call, measured once
  Clock::time_point test_started = Clock::now();
  std::set<std::string> own_kernels;                   // compiled into the worker (cuobjdump)
  std::string sandbox;                                  // what the worker's sandbox applied
  const ::testing::TestInfo* sandbox_noted_for = nullptr;
  bool have_device = false;
  bool device_checked = false;
  // What the worker gets as CUDA_DEVICE_MAX_CONNECTIONS (configure_judge, which main() calls
  // before any worker starts): the variable as the judge found it, or KIT_WORKER_CONNECTIONS.
  std::optional<std::string> worker_connections;  // none: left unset (the driver's default)
};

// The environment variable that sets how many hardware work queues a context gets (8 by default).
constexpr const char* kConnectionsEnv = "CUDA_DEVICE_MAX_CONNECTIONS";

Judge& judge() {
  static Judge j;
  return j;
}

// The judge's device buffers (kit::DeviceBuffer): driver allocations that can be exported as a
// file descriptor (driver_vmm.h), so the worker maps them without any access to this process.
struct Allocation {
  std::uint64_t id;
  std::size_t size;
  CUmemGenericAllocationHandle handle;
};

std::map<CUdeviceptr, Allocation>& allocations() {
  static std::map<CUdeviceptr, Allocation> all;
  return all;
}

// What the judge's allocations are: pinned device memory of the current device that can be
// exported as a file descriptor.
CUmemAllocationProp shareable_prop() {
  KIT_CUDA_CHECK(cudaFree(nullptr));  // the runtime's context, current for the driver calls
  static const bool traced = (kit::trace("judge context"), true);  // KIT_TRACE: made by now
  (void)traced;
  int device = 0;
  KIT_CUDA_CHECK(cudaGetDevice(&device));
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

// The size of an allocation of `bytes`: rounded up to the driver's granularity (2 MiB).
std::size_t shareable_extent(std::size_t bytes) {
  static const std::size_t granularity = [] {
    const CUmemAllocationProp prop = shareable_prop();
    std::size_t g = 0;
    vmm::check(vmm::driver().granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
               "cuMemGetAllocationGranularity");
    return g;
  }();
  return (bytes + granularity - 1) / granularity * granularity;
}

// Buffers the tests freed, kept for the next buffer of the same size. Each allocation, its mapping
// here and the worker's cost about ten driver calls, and the driver serves the calls of every
// process on the GPU one at a time: with a dozen judges and their workers in the correctness
// phase, a test of a few microseconds of work waited 0.1-0.3 s for them (a trace on an H100). A
// kept buffer stays mapped in the worker, as every live buffer may be (queued_on_stream maps them
// all), and is poisoned again before it is handed out; what a check compares against never lives
// in one (DeviceBuffer::judge_only). Small buffers only, and few: every judge on the GPU keeps its
// own. KIT_JUDGE_POOL=0 frees every buffer at once, as before.
constexpr std::size_t kPoolLargest = std::size_t{32} << 20;
constexpr std::size_t kPoolBytes = std::size_t{128} << 20;

struct Idle {
  CUdeviceptr va;
  Allocation allocation;
};

std::vector<Idle>& idle_buffers() {
  static std::vector<Idle> idle;
  return idle;
}

bool pool_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("KIT_JUDGE_POOL");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return on;
}

// Frees an allocation for good; the worker unmaps it at the next call.
void free_allocation(CUdeviceptr va, const Allocation& allocation) noexcept {
  Judge& j = judge();
  if (j.shared.erase(allocation.id) > 0) j.forgotten.push_back(allocation.id);
  vmm::unmap(va, allocation.size);
  vmm::driver().release(allocation.handle);
}

// Frees the kept buffers: a new allocation found the device out of memory.
bool drain_pool() noexcept {
  auto& idle = idle_buffers();
  if (idle.empty()) return false;
  for (const Idle& buffer : idle) free_allocation(buffer.va, buffer.allocation);
  idle.clear();
  return true;
}

std::size_t pooled_bytes() {
  std::size_t total = 0;
  for (const Idle& buffer : idle_buffers()) total += buffer.allocation.size;
  return total;
}

// Fresh driver memory reads as zeros, and the allocation is rounded up to the driver's
// granularity (2 MiB), so a kernel reading past the end of an input would read zeros where
// cudaMalloc memory holds whatever was there: a missing bounds check (A times B's rows past the
// end, say) would go unseen. All bytes, the slack included, start as 0xFF (NaN as floats): a
// fresh allocation's and a kept one's alike.
void* poisoned(CUdeviceptr va, std::size_t size) {
  KIT_CUDA_CHECK(cudaMemset(reinterpret_cast<void*>(va), 0xFF, size));
  return reinterpret_cast<void*>(va);
}

void* shareable_allocate(std::size_t bytes) {
  static std::uint64_t next_id = 1;
  const std::size_t size = shareable_extent(bytes);
  auto& idle = idle_buffers();
  const auto kept = std::find_if(idle.begin(), idle.end(),
                                 [&](const Idle& b) { return b.allocation.size == size; });
  if (kept != idle.end()) {
    const Idle buffer = *kept;
    idle.erase(kept);
    allocations().emplace(buffer.va, buffer.allocation);
    return poisoned(buffer.va, size);
  }
  const vmm::Driver& d = vmm::driver();
  const CUmemAllocationProp prop = shareable_prop();
  CUmemGenericAllocationHandle handle{};
  CUresult r = d.create(&handle, size, &prop, 0);
  if (r == CUDA_ERROR_OUT_OF_MEMORY && drain_pool()) r = d.create(&handle, size, &prop, 0);
  if (r != CUDA_SUCCESS) {
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
      throw CudaError(cudaErrorMemoryAllocation,
                      "kit judge: out of device memory for a buffer of " + std::to_string(bytes) +
                          " bytes");
    vmm::check(r, "cuMemCreate");
  }
  const CUdeviceptr va = vmm::map_or_release(handle, size);
  allocations().emplace(va, Allocation{next_id++, size, handle});
  return poisoned(va, size);
}

void shareable_release(void* p) noexcept {
  auto& all = allocations();
  const auto found = all.find(reinterpret_cast<CUdeviceptr>(p));
  if (found == all.end()) return;
  // Work of this process may still use the buffer; cudaFree would wait for it, unmapping does not.
  cudaDeviceSynchronize();
  const Idle buffer{found->first, found->second};
  all.erase(found);
  if (pool_enabled() && buffer.allocation.size <= kPoolLargest &&
      pooled_bytes() + buffer.allocation.size <= kPoolBytes) {
    idle_buffers().push_back(buffer);
    return;
  }
  free_allocation(buffer.va, buffer.allocation);
}

bool have_device() {
  Judge& j = judge();
  if (!j.device_checked) {
    int count = 0;
    j.have_device = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
    if (!j.have_device) cudaGetLastError();
    j.device_checked = true;
  }
  return j.have_device;
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGPIPE: return "SIGPIPE";
    case SIGSYS: return "SIGSYS (a system call the sandbox refuses: starting a thread, say)";
    default: return "signal " + std::to_string(sig);
  }
}

std::string stop_worker(bool kill_it);

// Resets the test clock at the start of every test (the time limit is per test, as the runner's),
// and ends the worker when the tests are done: before the report is written (GoogleTest tells its
// listeners of the end in reverse order, so this one, added after the report's writer, hears first)
// nothing of the student's is left running.
class TestClock : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override { judge().test_started = Clock::now(); }
  void OnTestProgramEnd(const ::testing::UnitTest&) override {
    if (judge().pid >= 0) stop_worker(true);
  }
};

void start_worker() {
  Judge& j = judge();
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    throw std::runtime_error(std::string("kit judge: socketpair: ") + std::strerror(errno));
  // Under a tool, arguments the worker reads before any student code runs (its sandbox differs).
  const bool sanitized = kit::under_compute_sanitizer();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("kit judge: fork: ") + std::strerror(errno));
  if (pid == 0) {
    // The worker: its socket as descriptor 3, nothing else of the judge's open.
    if (dup2(fds[1], 3) < 0) _exit(126);
    for (int fd = 4; fd < 1024; ++fd) close(fd);
    setenv("KIT_REMOTE_FD", "3", 1);
    // The student's streams get the queues configure_judge chose for them, not the judge's one.
    if (j.worker_connections)
      setenv(kConnectionsEnv, j.worker_connections->c_str(), 1);
    else
      unsetenv(kConnectionsEnv);
    char under_ncu[] = "--kit_under_ncu";
    char under_sanitizer[] = "--kit_under_sanitizer";
    char* argv[] = {const_cast<char*>(j.worker_path.c_str()), nullptr, nullptr};
    if (kit::counters_profiled())
      argv[1] = under_ncu;
    else if (sanitized)
      argv[1] = under_sanitizer;
    execv(j.worker_path.c_str(), argv);
    std::fprintf(stderr, "kit judge: cannot start the worker %s: %s\n", j.worker_path.c_str(),
                 std::strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  j.pid = pid;
  j.fd = fds[0];
  kit::trace("worker started");
}

// Ends the worker (if any) and returns how it ended, e.g. "exited with code 0", "SIGSEGV".
std::string stop_worker(bool kill_it) {
  Judge& j = judge();
  if (j.pid < 0) return "not running";
  if (j.fd >= 0) close(j.fd);
  j.fd = -1;
  if (kill_it) kill(j.pid, SIGKILL);
  j.shared.clear();  // the next worker has mapped nothing
  j.forgotten.clear();
  int status = 0;
  pid_t got;
  do got = waitpid(j.pid, &status, 0);
  while (got < 0 && errno == EINTR);
  j.pid = -1;
  if (got < 0) return "ended";
  if (WIFSIGNALED(status)) return signal_name(WTERMSIG(status));
  return "exited with code " + std::to_string(WEXITSTATUS(status));
}

double seconds_left() {
  Judge& j = judge();
  const double used = std::chrono::duration<double>(Clock::now() - j.test_started).count();
  return j.timeout_s - used;
}

enum class Io { ok, closed, timed_out };

// Sends `size` bytes from `data`; `fds` (descriptors of shared buffers) travel with the first.
Io send_all(int fd, const char* data, std::size_t size, const std::vector<int>& fds) {
  std::size_t sent = 0;
  if (!fds.empty()) {
    std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
    iovec io{const_cast<char*>(data), size};
    msghdr m{};
    m.msg_iov = &io;
    m.msg_iovlen = 1;
    m.msg_control = control.data();
    m.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    ssize_t n;
    do n = sendmsg(fd, &m, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n <= 0) return Io::closed;
    sent = static_cast<std::size_t>(n);
  }
  while (sent < size) {
    const ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Io::closed;
    sent += static_cast<std::size_t>(n);
  }
  return Io::ok;
}

Io recv_exact(int fd, char* out, std::size_t size) {
  std::size_t got = 0;
  while (got < size) {
    const double left = seconds_left();
    if (left <= 0) return Io::timed_out;
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min(left * 1000.0, 1e9)) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;  // re-check the clock
    const ssize_t n = recv(fd, out + got, size - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Io::closed;
    got += static_cast<std::size_t>(n);
  }
  return Io::ok;
}

// Records why the worker is gone as the running test's verdict, and throws WorkerLost.
[[noreturn]] void lose_worker(const std::string& status, const std::string& reason,
                              const std::string& detail) {
  if (::testing::UnitTest::GetInstance()->current_test_info() != nullptr) {
    ::testing::Test::RecordProperty("kit_status", status);
    ::testing::Test::RecordProperty("kit_reason", reason);
    ADD_FAILURE() << reason << (detail.empty() ? "" : "\n" + detail);
  }
  throw WorkerLost{reason};
}

std::string short_key(const char* key) {
  std::string k = key;
  const auto paren = k.find('(');
  return paren == std::string::npos ? k : k.substr(0, paren);
}

[[noreturn]] void rethrow(ExceptionType type, const std::string& what) {
  switch (type) {
    case ExceptionType::invalid_argument: throw std::invalid_argument(what);
    case ExceptionType::out_of_range: throw std::out_of_range(what);
    case ExceptionType::length_error: throw std::length_error(what);
    case ExceptionType::domain_error: throw std::domain_error(what);
    case ExceptionType::logic_error: throw std::logic_error(what);
    case ExceptionType::range_error: throw std::range_error(what);
    case ExceptionType::overflow_error: throw std::overflow_error(what);
    case ExceptionType::underflow_error: throw std::underflow_error(what);
    case ExceptionType::runtime_error: throw std::runtime_error(what);
    case ExceptionType::bad_alloc: throw std::bad_alloc();
    case ExceptionType::other: break;
  }
  throw std::runtime_error(what);
}

// Descriptors of shared buffers for one message, closed here once sent (or not).
struct Outgoing {
  std::vector<int> fds;
  Outgoing() = default;
  Outgoing(const Outgoing&) = delete;
  Outgoing& operator=(const Outgoing&) = delete;
  ~Outgoing() {
    for (const int fd : fds) close(fd);
  }
};

// One request and its reply. `timed`: the reply starts with the worker's event time.
std::string round_trip(const char* key, const std::string& args, const Outgoing& outgoing,
                       bool timed, double* worker_ms, double* wall_ms) {
  Judge& j = judge();
  if (j.worker_path.empty())
    throw std::logic_error("kit judge: no worker binary (--kit_worker=PATH)");
  // Everything this process wrote to shared buffers (uploads, poison, guards) must be done before
  // the worker reads them: the two processes' CUDA work is not ordered otherwise.
  if (have_device()) KIT_CUDA_CHECK(cudaDeviceSynchronize());
  if (j.pid < 0) start_worker();

  Writer w;
  w.pod(static_cast<std::uint8_t>(timed ? Request::timed_call : Request::call));
  w.pod<std::uint64_t>(j.forgotten.size());
  for (const auto id : j.forgotten) w.pod(id);
  j.forgotten.clear();
  w.text(key);
  // The frame: its size, the header above, then the arguments, sent as they are (an argument of
  // 256 MiB is not copied twice more on its way to the socket).
  std::string head;
  const auto size = static_cast<std::uint32_t>(w.bytes().size() + args.size());
  head.append(reinterpret_cast<const char*>(&size), sizeof size);
  head += w.bytes();

  const std::string what = short_key(key);
  const auto start = Clock::now();
  std::uint32_t reply_size = 0;
  Io io = send_all(j.fd, head.data(), head.size(), outgoing.fds);
  if (io == Io::ok) io = send_all(j.fd, args.data(), args.size(), {});
  if (io == Io::ok) io = recv_exact(j.fd, reinterpret_cast<char*>(&reply_size), sizeof reply_size);
  std::string reply(reply_size, '\0');
  if (io == Io::ok && reply_size > 0) io = recv_exact(j.fd, reply.data(), reply_size);
  if (wall_ms) *wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (io == Io::timed_out) {
    stop_worker(true);
    std::ostringstream reason;
    reason << "timed out after " << j.timeout_s << " s";
    lose_worker("timed_out", reason.str(), "your code did not return from " + what +
                                               " (an endless loop, or a kernel that never ends?)");
  }
  if (io == Io::closed || reply_size == 0) {
    const std::string how = stop_worker(false);
    const std::string reason = how.rfind("exited", 0) == 0
                                   ? "crashed: " + how + " before reporting a result"
                                   : "crashed: " + how;
    lose_worker("crashed", reason, "your code ended the process during " + what);
  }

  Reader r(reply);
  const auto kind = static_cast<Reply>(r.pod<std::uint8_t>());
  // The kernels the call launched: each must be one compiled into the worker, i.e. the student's
  // own (or the kit's probes'). Another is a library's, or a module's loaded at run time.
  // (A library the call loaded is named rather than its kernels: Reply::forbidden, below.)
  const auto kernels = r.pod<std::uint32_t>();
  for (std::uint32_t i = 0; i < kernels; ++i) {
    const std::string name = r.text();
    if (kind == Reply::forbidden || j.own_kernels.empty() || j.own_kernels.count(name) > 0)
      continue;
    stop_worker(true);
    std::string shown = name.empty() ? "without a name" : name;
    if (shown.size() > 48) shown = shown.substr(0, 45) + "...";
    lose_worker("failed", "your code launched a kernel that is not in it: " + shown,
                "lab code may launch only its own kernels; one from a library, or from a module "
                "loaded at run time, is a ban (seen during " + what + ")");
  }
  switch (kind) {
    case Reply::ok:
      if (timed && worker_ms) *worker_ms = r.pod<double>();
      else if (timed) r.pod<double>();
      reply.erase(0, r.position());  // in place: a result of 256 MiB is not copied to new memory
      return reply;
    case Reply::exception: {
      const auto type = static_cast<ExceptionType>(r.pod<std::uint8_t>());
      rethrow(type, r.text());
    }
    case Reply::cuda_error: {
      const std::string message = r.text();
      stop_worker(true);  // its context is unusable: the next call starts a fresh worker
      lose_worker("failed", "CUDA error in your code: " + message,
                  "after " + what + " returned, the device reported: " + message);
    }
    case Reply::forbidden: {
      const std::string message = r.text();
      stop_worker(true);
      lose_worker("failed", message, "seen when " + what + " returned");
    }
    case Reply::refused:
      throw std::logic_error("kit judge: the worker refused " + what + ": " + r.text());
  }
  throw std::logic_error("kit judge: unknown reply from the worker");
}

// Frees the kept buffers and has the worker unmap everything this process freed, with a call
// that does nothing else ("kit::null()": a message carries the ids freed since the last one), so
// that their memory is the GPU's again: a huge test asks how much is free before it allocates.
void shareable_settle() {
  drain_pool();
  Judge& j = judge();
  if (j.pid < 0 || j.forgotten.empty()) return;
  round_trip("kit::null()", "", Outgoing{}, false, nullptr, nullptr);
}

}  // namespace

namespace detail {

void put_pointer(Writer& w, const void* p) {
  if (p == nullptr) {
    w.pod<std::uint8_t>(0);
    return;
  }
  // The allocation `p` lies in: the last one that starts at or below it.
  const auto& all = allocations();
  auto found = all.upper_bound(reinterpret_cast<CUdeviceptr>(p));
  if (found != all.begin()) --found;
  const auto at = reinterpret_cast<CUdeviceptr>(p);
  if (found == all.end() || at < found->first || at >= found->first + found->second.size)
    throw std::invalid_argument(
        "kit judge: a pointer argument is not a kit::DeviceBuffer's memory (only the judge's "
        "buffers can be shared with the worker)");
  judge().call_ids.push_back(found->second.id);  // exchange() has the worker map it first
  w.pod<std::uint8_t>(1);
  w.pod<std::uint64_t>(found->second.id);
  w.pod<std::uint64_t>(at - found->first);
}

void* get_pointer(Reader&) { throw std::logic_error("kit judge: get_pointer is the worker's"); }

void put_stream(Writer& w, cudaStream_t s) {
  w.pod<std::uint64_t>(reinterpret_cast<std::uintptr_t>(s));
}

cudaStream_t get_stream(Reader&) { throw std::logic_error("kit judge: get_stream is the worker's"); }

}  // namespace detail

// Records, once per test, what the worker's sandbox could apply (asked once per worker).
void note_sandbox() {
  Judge& j = judge();
  if (j.sandbox.empty()) {
    const std::string reply = round_trip("kit::sandbox()", "", Outgoing{}, false, nullptr, nullptr);
    Reader r(reply);
    j.sandbox = Codec<std::string>::get(r);
    if (j.own_kernels.empty()) j.sandbox += ", but the judge has no list of the worker's kernels";
  }
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  if (test != nullptr && test != j.sandbox_noted_for) {
    ::testing::Test::RecordProperty("sandbox", j.sandbox);
    j.sandbox_noted_for = test;
  }
}

// Has the worker map the judge's buffers among `ids` that it has not mapped yet: one "kit::map()"
// call with their ids and sizes, and their file descriptors alongside. Done before the call that
// names them, so mapping is never part of a timed call.
void ensure_mapped(const std::vector<std::uint64_t>& ids) {
  Judge& j = judge();
  std::set<std::uint64_t> wanted;
  for (const auto id : ids)
    if (j.shared.count(id) == 0) wanted.insert(id);
  if (wanted.empty()) return;
  if (wanted.size() > 250) throw std::logic_error("kit judge: more than 250 buffers in one call");
  Writer w;
  Outgoing outgoing;
  w.pod<std::uint64_t>(wanted.size());
  for (const auto& [base, allocation] : allocations()) {
    if (wanted.count(allocation.id) == 0) continue;
    int fd = -1;
    vmm::check(vmm::driver().export_handle(&fd, allocation.handle,
                                            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
               "cuMemExportToShareableHandle");
    outgoing.fds.push_back(fd);
    w.pod<std::uint64_t>(allocation.id);
    w.pod<std::uint64_t>(allocation.size);
  }
  round_trip("kit::map()", w.bytes(), outgoing, false, nullptr, nullptr);
  j.shared.insert(wanted.begin(), wanted.end());
}

std::string exchange(const char* key, const std::string& args) {
  std::vector<std::uint64_t> ids;
  ids.swap(judge().call_ids);
  note_sandbox();
  ensure_mapped(ids);
  const Outgoing outgoing;  // nothing: the buffers are mapped already
  TimedScope* scope = TimedScope::current();
  if (scope == nullptr) return round_trip(key, args, outgoing, false, nullptr, nullptr);

  Judge& j = judge();
  if (j.null_call_ms < 0) {
    // What a timed call costs around the work itself (messages, events, synchronisation), so the
    // judge's clock can be compared with the worker's event time. Measured on a call that does
    // nothing; the smallest of a few, since the cost only ever adds.
    // The call launches one empty kernel in the worker right after this process used the GPU,
    // so the cost of switching the GPU between the two processes' contexts is counted too.
    j.null_call_ms = 1e9;
    static DeviceBuffer<int> touch(1);
    for (int i = 0; i < 7; ++i) {
      double wall = 0;
      if (have_device()) KIT_CUDA_CHECK(cudaMemsetAsync(touch.data(), i, sizeof(int)));
      round_trip("kit::null()", "", Outgoing{}, true, nullptr, &wall);
      j.null_call_ms = std::min(j.null_call_ms, wall);
    }
  }
  double worker_ms = 0, wall_ms = 0;
  const bool first = scope->calls_ == 0;
  std::string result = round_trip(key, args, outgoing, first, &worker_ms, &wall_ms);
  const double judge_ms = std::max(0.0, wall_ms - j.null_call_ms);
  if (first) {
    // The worker's events time the call as the judge times a ceiling. Its process is the
    // student's, so its number is only believed when the judge's own clock agrees: a launcher
    // that hides work on another stream, or a tampered timer, is measured by the judge instead.
    if (worker_ms >= 0.7 * judge_ms - 0.05) {
      scope->ms_ = worker_ms;
    } else {
      scope->ms_ = judge_ms;
      scope->mismatch_ = true;
    }
  } else {
    scope->ms_ += judge_ms;  // a second call in one timed run: the judge's clock, added
  }
  ++scope->calls_;
  return result;
}

std::string queued_on_stream(const void* out, std::size_t bytes,
                             const std::function<void(cudaStream_t)>& call, double hold_ms) {
  bytes = std::min(bytes, kHoldMaxBytes);
  // Under compute-sanitizer (a sanitizer step) or Nsight Compute (a counter test) the call is
  // only made: those steps judge memory, races and counters (a counter test holds every kernel
  // it profiles to its bars, the hold's too), and a wrong stream costs the steps whose own tests
  // check it.
  static const bool sanitized = under_compute_sanitizer();  // reads /proc/self/maps: once
  if (bytes == 0 || sanitized || counters_profiled()) {
    call(nullptr);
    return "";
  }
  static cudaStream_t stream = [] {
    cudaStream_t s = nullptr;
    KIT_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return s;
  }();
  std::string before(bytes, '\0');
  KIT_CUDA_CHECK(cudaMemcpy(before.data(), out, bytes, cudaMemcpyDeviceToHost));
  // The worker maps the buffers the call will name now, before the hold: mapping one later is a
  // request of its own, after which the worker waits for the device, the hold included, so the
  // call would come too late to show anything.
  std::vector<std::uint64_t> live;
  for (const auto& [base, allocation] : allocations())
    if (live.size() < 250) live.push_back(allocation.id);
  ensure_mapped(live);
  {
    Writer w;
    detail::put_stream(w, stream);
    w.pod(hold_ms);
    detail::put_pointer(w, out);
    w.pod<std::uint64_t>(bytes);
    exchange("kit::hold()", w.bytes());
  }
  call(stream);
  const std::string reply = exchange("kit::held()", "");
  Reader r(reply);
  const std::string held = Codec<std::string>::get(r);
  if (held == before) return "";
  return "the output changed while the stream your function was given was still busy with "
         "work queued before the call: your kernel or copy ran on another stream (the default "
         "stream 0, or one of your own). Queue every kernel and copy on `stream`, the function's "
         "stream argument: its caller relies on the order of the work on that stream.";
}

void expect_queued_on_stream(const void* out, std::size_t bytes,
                             const std::function<void(cudaStream_t)>& call,
                             const std::string& what) {
  const std::string problem = queued_on_stream(out, bytes, call);
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  if (!problem.empty()) ADD_FAILURE() << (what.empty() ? "" : what + ": ") << problem;
}

// The kernels compiled into the worker: `cuobjdump -symbols` of it, written next to it when it was
// linked (common/cmake/KitLab.cmake), one "STT_FUNC STB_GLOBAL STO_ENTRY name" line per kernel.
// Without that file (no cuobjdump or no CUPTI where it was built) launches are not checked.
static std::set<std::string> read_own_kernels(const std::string& worker_path) {
  std::ifstream in(worker_path + ".kernels");
  return kernels_in_cuobjdump(in);
}

void configure_judge(const std::string& worker_path, double timeout_s,
                     const std::string& worker_queues) {
  Judge& j = judge();
  j.worker_path = worker_path;
  j.own_kernels = read_own_kernels(worker_path);
  if (timeout_s > 0) j.timeout_s = timeout_s;
  // The judge's own context gets KIT_JUDGE_CONNECTIONS hardware work queues (default 1; 0: the
  // driver's default, 8). The driver makes contexts one at a time, and one with a single queue is
  // made in about half the time (docs/engine_log.md: 16 at once on an H100, 0.7-1.0 s each
  // instead of 2.0-2.6). The judge never needs two of its own streams to run side by side, so
  // one queue costs it nothing. Set before the judge's first CUDA call.
  // The worker (start_worker) gets the variable as the judge found it, or where it was unset,
  // KIT_WORKER_CONNECTIONS queues (0: the driver's 8), or the lab's worker_queues (lab.json, on
  // the command line), or 2: the stream check's hold beside a kernel on a wrong stream needs
  // more than one, and a context with fewer queues is made faster (docs/engine_log.md,
  // session 27). Lab 07, whose pipeline runs four streams side by side, asks for 4.
  const char* before = std::getenv(kConnectionsEnv);
  const char* for_worker = std::getenv("KIT_WORKER_CONNECTIONS");
  if (for_worker == nullptr || *for_worker == '\0')
    for_worker = worker_queues.empty() ? "2" : worker_queues.c_str();
  if (before != nullptr)
    j.worker_connections = before;
  else if (std::strcmp(for_worker, "0") != 0)
    j.worker_connections = for_worker;
  const char* queues = std::getenv("KIT_JUDGE_CONNECTIONS");
  if (queues == nullptr || *queues == '\0') queues = "1";
  if (std::strcmp(queues, "0") != 0) setenv(kConnectionsEnv, queues, 1);
  static bool listening = false;
  if (!listening) {
    ::testing::UnitTest::GetInstance()->listeners().Append(new TestClock);
    listening = true;
  }
  kit::detail::set_device_allocator(
      {&shareable_allocate, &shareable_release, &shareable_extent, &shareable_settle});
  // No process of this user may read or write the judge's memory (ptrace, /proc/PID/mem); the
  // worker runs as the same user. A root worker is kept out by its Landlock domain instead.
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

void start_worker_early() {
  if (judge().pid >= 0 || judge().worker_path.empty()) return;
  try {
    start_worker();
  } catch (const std::exception&) {
    // The first call tries again, and its test reports why it could not.
  }
}

void shut_down_worker() {
  if (judge().pid >= 0) stop_worker(true);
}

}  // namespace kit::remote
