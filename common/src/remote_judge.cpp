// The judge's half of kit/remote.h: starts the worker, sends calls, shares device buffers with it,
// and turns everything that can go wrong in the worker into the running test's verdict. Nothing
// here runs student code; the worker is another process.
#include <cuda.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <new>
#include <sstream>
#include <vector>

#include "kit/buffers.h"
#include "kit/check.h"
#include "kit/remote.h"

namespace kit::remote {
namespace {

using Clock = std::chrono::steady_clock;

struct Judge {
  std::string worker_path;
  double timeout_s = 60.0;
  pid_t pid = -1;
  int fd = -1;
  std::map<CUdeviceptr, cudaIpcMemHandle_t> handles;  // allocation base -> its IPC handle
  std::vector<cudaIpcMemHandle_t> forgotten;          // freed since the last call
  double null_call_ms = -1.0;                          // overhead of a timed call, measured once
  Clock::time_point test_started = Clock::now();
  std::string sandbox;                                  // what the worker's sandbox applied
  const ::testing::TestInfo* sandbox_noted_for = nullptr;
  bool have_device = false;
  bool device_checked = false;
};

Judge& judge() {
  static Judge j;
  return j;
}

// cuMemGetAddressRange (the allocation a device pointer lies in), taken from the driver through the
// runtime: linking libcuda itself would stop the judge from starting on a machine without a driver.
CUresult address_range(CUdeviceptr* base, std::size_t* size, CUdeviceptr p) {
  using Fn = CUresult (*)(CUdeviceptr*, std::size_t*, CUdeviceptr);
  static Fn fn = [] {
    void* found = nullptr;
    cudaDriverEntryPointQueryResult status{};
#if CUDART_VERSION >= 12050
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &found, 12000, cudaEnableDefault,
                                         &status) != cudaSuccess)
      found = nullptr;
#else
    if (cudaGetDriverEntryPoint("cuMemGetAddressRange", &found, cudaEnableDefault, &status) !=
        cudaSuccess)
      found = nullptr;
#endif
    return reinterpret_cast<Fn>(found);
  }();
  return fn == nullptr ? CUDA_ERROR_NOT_FOUND : fn(base, size, p);
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
    default: return "signal " + std::to_string(sig);
  }
}

// Resets the test clock at the start of every test: the time limit is per test, as the runner's.
class TestClock : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override { judge().test_started = Clock::now(); }
};

void start_worker() {
  Judge& j = judge();
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    throw std::runtime_error(std::string("kit judge: socketpair: ") + std::strerror(errno));
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("kit judge: fork: ") + std::strerror(errno));
  if (pid == 0) {
    // The worker: its socket as descriptor 3, nothing else of the judge's open.
    if (dup2(fds[1], 3) < 0) _exit(126);
    for (int fd = 4; fd < 1024; ++fd) close(fd);
    setenv("KIT_REMOTE_FD", "3", 1);
    char* argv[] = {const_cast<char*>(j.worker_path.c_str()), nullptr};
    execv(j.worker_path.c_str(), argv);
    std::fprintf(stderr, "kit judge: cannot start the worker %s: %s\n", j.worker_path.c_str(),
                 std::strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  j.pid = pid;
  j.fd = fds[0];
  j.handles.clear();  // a new worker has opened nothing
  j.forgotten.clear();
}

// Ends the worker (if any) and returns how it ended, e.g. "exited with code 0", "SIGSEGV".
std::string stop_worker(bool kill_it) {
  Judge& j = judge();
  if (j.pid < 0) return "not running";
  if (j.fd >= 0) close(j.fd);
  j.fd = -1;
  if (kill_it) kill(j.pid, SIGKILL);
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

Io send_all(int fd, const std::string& data) {
  std::size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
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

// One request and its reply. `timed`: the reply starts with the worker's event time.
std::string round_trip(const char* key, const std::string& args, bool timed, double* worker_ms,
                       double* wall_ms) {
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
  for (const auto& h : j.forgotten) w.pod(h);
  j.forgotten.clear();
  w.text(key);
  w.raw(args.data(), args.size());
  std::string frame;
  const auto size = static_cast<std::uint32_t>(w.bytes().size());
  frame.append(reinterpret_cast<const char*>(&size), sizeof size);
  frame += w.bytes();

  const std::string what = short_key(key);
  const auto start = Clock::now();
  std::uint32_t reply_size = 0;
  Io io = send_all(j.fd, frame);
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
  switch (kind) {
    case Reply::ok:
      if (timed && worker_ms) *worker_ms = r.pod<double>();
      else if (timed) r.pod<double>();
      return reply.substr(sizeof(std::uint8_t) + (timed ? sizeof(double) : 0));
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

}  // namespace

namespace detail {

void put_pointer(Writer& w, const void* p) {
  if (p == nullptr) {
    w.pod<std::uint8_t>(0);
    return;
  }
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess ||
      attributes.type != cudaMemoryTypeDevice) {
    cudaGetLastError();
    throw std::invalid_argument(
        "kit judge: a pointer argument is not device memory from cudaMalloc (host, managed or "
        "unknown memory cannot be shared with the worker)");
  }
  CUdeviceptr base = 0;
  std::size_t size = 0;
  if (address_range(&base, &size, reinterpret_cast<CUdeviceptr>(p)) != CUDA_SUCCESS)
    throw std::runtime_error("kit judge: cuMemGetAddressRange failed for a device pointer");
  Judge& j = judge();
  auto found = j.handles.find(base);
  if (found == j.handles.end()) {
    cudaIpcMemHandle_t handle{};
    KIT_CUDA_CHECK(cudaIpcGetMemHandle(&handle, reinterpret_cast<void*>(base)));
    found = j.handles.emplace(base, handle).first;
  }
  w.pod<std::uint8_t>(1);
  w.pod(found->second);
  w.pod<std::uint64_t>(reinterpret_cast<CUdeviceptr>(p) - base);
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
    const std::string reply = round_trip("kit::sandbox()", "", false, nullptr, nullptr);
    Reader r(reply);
    j.sandbox = Codec<std::string>::get(r);
  }
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  if (test != nullptr && test != j.sandbox_noted_for) {
    ::testing::Test::RecordProperty("sandbox", j.sandbox);
    j.sandbox_noted_for = test;
  }
}

std::string exchange(const char* key, const std::string& args) {
  note_sandbox();
  TimedScope* scope = TimedScope::current();
  if (scope == nullptr) return round_trip(key, args, false, nullptr, nullptr);

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
      round_trip("kit::null()", "", true, nullptr, &wall);
      j.null_call_ms = std::min(j.null_call_ms, wall);
    }
  }
  double worker_ms = 0, wall_ms = 0;
  const bool first = scope->calls_ == 0;
  std::string result = round_trip(key, args, first, &worker_ms, &wall_ms);
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

void configure_judge(const std::string& worker_path, double timeout_s) {
  Judge& j = judge();
  j.worker_path = worker_path;
  if (timeout_s > 0) j.timeout_s = timeout_s;
  static bool listening = false;
  if (!listening) {
    ::testing::UnitTest::GetInstance()->listeners().Append(new TestClock);
    listening = true;
  }
  kit::detail::set_device_free_hook([](const void* p) {
    Judge& judge_state = judge();
    CUdeviceptr base = 0;
    std::size_t size = 0;
    if (address_range(&base, &size, reinterpret_cast<CUdeviceptr>(p)) != CUDA_SUCCESS) return;
    const auto found = judge_state.handles.find(base);
    if (found == judge_state.handles.end()) return;
    judge_state.forgotten.push_back(found->second);
    judge_state.handles.erase(found);
  });
}

void shut_down_worker() {
  if (judge().pid >= 0) stop_worker(true);
}

}  // namespace kit::remote
