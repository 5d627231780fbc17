// The worker's half of kit/remote.h: main() of a lab's worker binary, the process that runs the
// student's code. It answers the judge's calls one at a time: decode the arguments, call the
// student's function, wait for the device, send back the result (or the exception, or the CUDA
// error, after which it exits: a context with a sticky error is useless). It decides nothing:
// every check and every verdict is the judge's.
#include <fcntl.h>
#include <link.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <linux/audit.h>
#include <sched.h>
#endif

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "kit/remote.h"

// The lab's table (common/src/remote_worker_table.cpp, compiled with the lab's remote.h).
extern const kit::remote::Entry* kit_remote_entries(std::size_t* count);

// ---- The sandbox, before any student code runs --------------------------------------------------
// A function in .preinit_array runs before every constructor of the program, the student's objects'
// included (kitgrade.inspect refuses student objects with .preinit_array entries of their own). It
// confines the process for its whole life, where the kernel allows: seccomp refuses ptrace, reading
// or writing another process's memory with process_vm_*, new processes (threads only) and exec.
// Not done (docs/grading.md, "What a worker can still do"): confining its file writes with Landlock.
// A Landlock domain also forbids reaching the judge with ptrace-level access, which CUDA IPC needs
// to open the judge's buffers; that needs the buffers exported the other way round first.
// KIT_NO_SANDBOX=1 (set by whoever starts the judge, never by student code) turns it off for
// debugging. What was applied is in kit_sandbox_status, which the judge asks for (kit::sandbox()).
namespace {

char kit_sandbox_status[256] = "not applied";

#if defined(__x86_64__)
// The seccomp program: the architecture check, then one refusal per system call below, then clone.
std::vector<sock_filter> seccomp_program() {
  constexpr unsigned kNr = offsetof(seccomp_data, nr);
  constexpr unsigned kArch = offsetof(seccomp_data, arch);
  constexpr unsigned kArg0 = offsetof(seccomp_data, args[0]);
  constexpr unsigned kDeny = SECCOMP_RET_ERRNO | EPERM;
  // clone3 passes its flags in memory, out of a filter's sight: refuse it as unknown (ENOSYS), and
  // the C library falls back to clone, whose flags a filter can read.
  const std::pair<unsigned, unsigned> refused[] = {
      {__NR_ptrace, kDeny}, {__NR_process_vm_readv, kDeny}, {__NR_process_vm_writev, kDeny},
      {__NR_fork, kDeny},   {__NR_vfork, kDeny},            {__NR_execve, kDeny},
      {__NR_execveat, kDeny}, {435 /* clone3 */, SECCOMP_RET_ERRNO | ENOSYS}};
  std::vector<sock_filter> program = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArch),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kNr)};
  for (const auto& [nr, answer] : refused) {
    program.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1));
    program.push_back(BPF_STMT(BPF_RET | BPF_K, answer));
  }
  program.insert(program.end(), {
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArg0),
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 1, 0),  // a thread: allowed
      BPF_STMT(BPF_RET | BPF_K, kDeny),                          // a new process: refused
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)});
  return program;
}

bool apply_seccomp() {
  std::vector<sock_filter> filter = seccomp_program();
  sock_fprog program{static_cast<unsigned short>(filter.size()), filter.data()};
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

#endif

void apply_sandbox() {
  const char* off = std::getenv("KIT_NO_SANDBOX");
  if (off != nullptr && std::strcmp(off, "1") == 0) {
    std::snprintf(kit_sandbox_status, sizeof kit_sandbox_status, "off (KIT_NO_SANDBOX=1)");
    return;
  }
#if defined(__x86_64__)
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    std::snprintf(kit_sandbox_status, sizeof kit_sandbox_status, "not applied (no_new_privs refused)");
    return;
  }
  const bool seccomp = apply_seccomp();
  std::snprintf(kit_sandbox_status, sizeof kit_sandbox_status, "seccomp %s; file writes not confined",
                seccomp ? "on" : "refused by the kernel");
#else
  std::snprintf(kit_sandbox_status, sizeof kit_sandbox_status, "not available on this processor");
#endif
}

__attribute__((section(".preinit_array"), used)) void (*const kit_sandbox_first)() = apply_sandbox;

}  // namespace

namespace kit::remote {
namespace {

struct Worker {
  std::map<std::string, void*> opened;               // IPC handle bytes -> pointer here
  std::map<std::uint64_t, cudaStream_t> streams;     // the judge's stream -> one of ours
  cudaStream_t call_stream = nullptr;                // the stream of the call being decoded
  bool timing = false;
  cudaEvent_t start{}, stop{};
  bool have_device = false;
};

Worker& worker() {
  static Worker w;
  return w;
}

bool read_exact(int fd, char* out, std::size_t size) {
  std::size_t got = 0;
  while (got < size) {
    const ssize_t n = read(fd, out + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<std::size_t>(n);
  }
  return true;
}

void write_reply(int fd, const std::string& body) {
  const auto size = static_cast<std::uint32_t>(body.size());
  std::string frame(reinterpret_cast<const char*>(&size), sizeof size);
  frame += body;
  std::size_t sent = 0;
  while (sent < frame.size()) {
    const ssize_t n = write(fd, frame.data() + sent, frame.size() - sent);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) std::_Exit(4);  // the judge is gone
    sent += static_cast<std::size_t>(n);
  }
}

std::string cuda_text(cudaError_t e) {
  return std::string(cudaGetErrorString(e)) + " (" + cudaGetErrorName(e) + ")";
}

ExceptionType type_of(const std::exception& e) {
  if (dynamic_cast<const std::invalid_argument*>(&e)) return ExceptionType::invalid_argument;
  if (dynamic_cast<const std::out_of_range*>(&e)) return ExceptionType::out_of_range;
  if (dynamic_cast<const std::length_error*>(&e)) return ExceptionType::length_error;
  if (dynamic_cast<const std::domain_error*>(&e)) return ExceptionType::domain_error;
  if (dynamic_cast<const std::logic_error*>(&e)) return ExceptionType::logic_error;
  if (dynamic_cast<const std::range_error*>(&e)) return ExceptionType::range_error;
  if (dynamic_cast<const std::overflow_error*>(&e)) return ExceptionType::overflow_error;
  if (dynamic_cast<const std::underflow_error*>(&e)) return ExceptionType::underflow_error;
  if (dynamic_cast<const std::runtime_error*>(&e)) return ExceptionType::runtime_error;
  if (dynamic_cast<const std::bad_alloc*>(&e)) return ExceptionType::bad_alloc;
  return ExceptionType::other;
}

__global__ void empty_kernel() {}

// "kit::null()": what a timed call costs besides its work (kit/remote.h, TimedScope): one empty
// kernel, so that the GPU switches to this process's context as it does for real work.
void null_call(Reader&, Writer&) {
  if (worker().have_device) empty_kernel<<<1, 1, 0, worker().call_stream>>>();
}

// "kit::sandbox()": what the sandbox could apply in this process, for the judge's report.
void sandbox_call(Reader&, Writer& w) { Codec<std::string>::put(w, kit_sandbox_status); }

}  // namespace

namespace detail {

void put_pointer(Writer&, const void*) { throw std::logic_error("put_pointer is the judge's"); }

void* get_pointer(Reader& r) {
  const auto tag = r.pod<std::uint8_t>();
  if (tag == 0) return nullptr;
  if (tag != 1) throw Malformed("kit worker: unknown pointer tag");
  const auto handle = r.pod<cudaIpcMemHandle_t>();
  const auto offset = r.pod<std::uint64_t>();
  Worker& w = worker();
  const std::string key(reinterpret_cast<const char*>(&handle), sizeof handle);
  auto found = w.opened.find(key);
  if (found == w.opened.end()) {
    void* p = nullptr;
    const cudaError_t e = cudaIpcOpenMemHandle(&p, handle, cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess) throw std::runtime_error("kit worker: cannot open a buffer of the judge: " +
                                                   cuda_text(e));
    found = w.opened.emplace(key, p).first;
  }
  return static_cast<char*>(found->second) + offset;
}

void put_stream(Writer&, cudaStream_t) { throw std::logic_error("put_stream is the judge's"); }

cudaStream_t get_stream(Reader& r) {
  const auto id = r.pod<std::uint64_t>();
  Worker& w = worker();
  cudaStream_t s = nullptr;
  if (id <= 2) {
    s = reinterpret_cast<cudaStream_t>(static_cast<std::uintptr_t>(id));  // 0, legacy, per-thread
  } else {
    auto found = w.streams.find(id);
    if (found == w.streams.end()) {
      cudaStream_t mine = nullptr;
      const cudaError_t e = cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking);
      if (e != cudaSuccess) throw std::runtime_error("kit worker: cannot create a stream: " +
                                                     cuda_text(e));
      found = w.streams.emplace(id, mine).first;
    }
    s = found->second;
  }
  w.call_stream = s;
  return s;
}

void before_call() {
  Worker& w = worker();
  if (w.timing) cudaEventRecord(w.start, w.call_stream);
}

}  // namespace detail

namespace {

// The shared libraries in this process now. The worker is linked with the CUDA runtime statically,
// so it loads only the C and C++ libraries, the driver (libcuda, libnvidia-*) and, under
// compute-sanitizer, the tool's own: any other library (cuBLAS, CUB's runtime, a library file
// opened by path) was loaded by the student's code, whatever the means (dlopen, a name assembled
// at run time, a pointer found in memory). Libraries a lab bans cannot be used without loading.
std::string unexpected_library() {
  std::string found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        const char* path = info->dlpi_name;
        if (path == nullptr || *path == '\0') return 0;
        const char* slash = std::strrchr(path, '/');
        const std::string name = slash ? slash + 1 : path;
        static const char* expected[] = {
            "libc.so", "libm.so", "libstdc++.so", "libgcc_s.so", "ld-linux", "linux-vdso",
            "libdl.so", "libpthread.so", "librt.so", "libcuda.so", "libnvidia-", "libcudadebugger",
            "libsanitizer", "libTreeLauncher", "libInterceptorInjection", "libcupti"};
        for (const char* prefix : expected)
          if (name.rfind(prefix, 0) == 0) return 0;
        *static_cast<std::string*>(out) = path;
        return 1;
      },
      &found);
  return found;
}

void forget(Reader& r) {
  Worker& w = worker();
  const auto n = r.pod<std::uint64_t>();
  for (std::uint64_t i = 0; i < n; ++i) {
    const auto handle = r.pod<cudaIpcMemHandle_t>();
    const std::string key(reinterpret_cast<const char*>(&handle), sizeof handle);
    const auto found = w.opened.find(key);
    if (found == w.opened.end()) continue;
    cudaIpcCloseMemHandle(found->second);
    w.opened.erase(found);
  }
}

// Serves one request; returns false when the worker must end (after a sticky CUDA error).
bool serve(int fd, const std::string& message, const Entry* entries, std::size_t count) {
  Worker& w = worker();
  Reader r(message);
  Writer out;
  const auto kind = static_cast<Request>(r.pod<std::uint8_t>());
  forget(r);
  const std::string key = r.text();
  void (*serve_fn)(Reader&, Writer&) = key == "kit::null()"      ? &null_call
                                       : key == "kit::sandbox()" ? &sandbox_call
                                                                 : nullptr;
  for (std::size_t i = 0; i < count && serve_fn == nullptr; ++i)
    if (key == entries[i].key) serve_fn = entries[i].serve;
  if (serve_fn == nullptr) {
    out.pod(static_cast<std::uint8_t>(Reply::refused));
    out.text("no function '" + key + "' in this worker (built from another version of the lab?)");
    write_reply(fd, out.bytes());
    return true;
  }

  w.timing = kind == Request::timed_call && w.have_device;
  w.call_stream = nullptr;
  if (w.timing) {
    cudaDeviceSynchronize();
    cudaEventRecord(w.start, nullptr);  // replaced by before_call() once the stream is known
  }
  Writer result;
  try {
    serve_fn(r, result);
  } catch (const std::exception& e) {
    w.timing = false;
    if (w.have_device) cudaDeviceSynchronize();
    out.pod(static_cast<std::uint8_t>(Reply::exception));
    out.pod(static_cast<std::uint8_t>(type_of(e)));
    out.text(e.what());
    write_reply(fd, out.bytes());
    return true;
  } catch (...) {
    w.timing = false;
    out.pod(static_cast<std::uint8_t>(Reply::exception));
    out.pod(static_cast<std::uint8_t>(ExceptionType::other));
    out.text("an exception that is not a std::exception");
    write_reply(fd, out.bytes());
    return true;
  }

  double ms = 0;
  if (w.timing) {
    cudaEventRecord(w.stop, w.call_stream);
    cudaEventSynchronize(w.stop);
    float elapsed = 0;
    if (cudaEventElapsedTime(&elapsed, w.start, w.stop) == cudaSuccess) ms = elapsed;
    w.timing = false;
  }
  if (const std::string library = unexpected_library(); !library.empty()) {
    out.pod(static_cast<std::uint8_t>(Reply::forbidden));
    out.text("your code loaded the library " + library +
             " into the process; lab code may only use the CUDA runtime and the C++ library");
    write_reply(fd, out.bytes());
    return false;
  }
  if (w.have_device) {
    // Everything the call started, on any stream, must be finished before the judge reads.
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cudaGetLastError();
    if (e != cudaSuccess) {
      out.pod(static_cast<std::uint8_t>(Reply::cuda_error));
      out.text(cuda_text(e));
      write_reply(fd, out.bytes());
      return false;
    }
  }
  out.pod(static_cast<std::uint8_t>(Reply::ok));
  if (kind == Request::timed_call) out.pod(ms);
  out.raw(result.bytes().data(), result.bytes().size());
  write_reply(fd, out.bytes());
  return true;
}

}  // namespace

}  // namespace kit::remote

int main() {
  using namespace kit::remote;
  (void)kit_sandbox_first;  // applied before main(); named here so no compiler thinks it unused
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const char* fd_text = std::getenv("KIT_REMOTE_FD");
  if (fd_text == nullptr) {
    std::fprintf(stderr,
                 "This is a lab's worker: it runs your code for the grader, which starts it.\n"
                 "Run the grader instead, e.g. build/bin/grade_01_indexing.\n");
    return 2;
  }
  const int fd = std::atoi(fd_text);
  unsetenv("KIT_REMOTE_FD");

  Worker& w = worker();
  int devices = 0;
  w.have_device = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  cudaGetLastError();
  if (w.have_device) {
    cudaEventCreate(&w.start);
    cudaEventCreate(&w.stop);
  }
  std::size_t count = 0;
  const Entry* entries = kit_remote_entries(&count);
  for (;;) {
    std::uint32_t size = 0;
    if (!read_exact(fd, reinterpret_cast<char*>(&size), sizeof size)) return 0;  // judge done
    std::string message(size, '\0');
    if (!read_exact(fd, message.data(), size)) return 0;
    try {
      if (!serve(fd, message, entries, count)) return 3;
    } catch (const Malformed& e) {
      Writer out;
      out.pod(static_cast<std::uint8_t>(Reply::refused));
      out.text(e.what());
      write_reply(fd, out.bytes());
    }
  }
}
