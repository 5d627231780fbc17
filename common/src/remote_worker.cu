// The worker's half of kit/remote.h: main() of a lab's worker binary, the process that runs the
// student's code. It answers the judge's calls one at a time: decode the arguments, call the
// student's function, wait for the device, send back the result (or the exception, or the CUDA
// error, after which it exits: a context with a sticky error is useless). It decides nothing:
// every check and every verdict is the judge's.
#include <dirent.h>
#include <fcntl.h>
#include <link.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <linux/audit.h>
#include <sched.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "driver_vmm.h"
#include "kit/parallel.h"
#include "kit/remote.h"
#include "kit/timing.h"

#if KIT_HAVE_CUPTI
#include <cupti.h>
#endif

// The lab's table (common/src/remote_worker_table.cpp, compiled with the lab's remote.h).
extern const kit::remote::Entry* kit_remote_entries(std::size_t* count);

// ---- The sandbox, before any student code runs --------------------------------------------------
// A function in .preinit_array runs before every constructor of the program, the student's objects'
// included (kitgrade.inspect refuses student objects with .preinit_array entries of their own).
// Where the kernel allows:
// - seccomp, from there on, for every thread: refuses ptrace, reading or writing another process's
//   memory with process_vm_*, new processes (threads only) and exec.
// - Landlock, applied by main() once the CUDA driver has started (it names its threads by writing
//   /proc/self/task/TID/comm and fails to start if it cannot, and a Landlock rule cannot allow
//   that file): no file may be created, removed, renamed or opened for writing, except the device
//   files under /dev. So no verdict, report or cache file, in /tmp or anywhere. A Landlock domain
//   also keeps the process from reaching any process outside it with ptrace-level access (ptrace,
//   /proc/PID/mem, pidfd_getfd), the judge included, even as root. It binds the thread that applies
//   it and the threads that thread starts later; the driver's first threads, started before, are
//   the driver's own. main() checks that the program still has one thread when it starts the
//   driver: a thread started by student code before main() is a forbidden result.
// - A second seccomp filter, from main() once the driver's threads (and its host-function thread)
//   have started, on every thread: clone kills the process (SIGSYS), so no thread can start after
//   that, whatever student code does to the worker's memory. Not under a tool (below).
// KIT_NO_SANDBOX=1 (set by whoever starts the judge, never by student code) turns it off for
// debugging. What was applied is in kit_sandbox_status, which the judge asks for (kit::sandbox()).
//
// Under Nsight Compute (the counter tests) the judge starts the worker with kUnderNcuFlag. ncu's
// injection in this process must create its lock file in ${TMPDIR:-/tmp}/nvidia/nsight_compute
// before it profiles a kernel, so Landlock lets files be created and written beneath that folder
// and nowhere else; and the kernel check is off (below). The flag and TMPDIR are read here, from
// the arguments and environment the program was started with, before any constructor of the
// student's code could change either. Under compute-sanitizer (a sanitizer step) the judge passes
// kUnderSanitizerFlag: the tool's injection may start threads, so the filter on clone is off there
// too (nothing is timed under a tool, and each call's own thread check still holds).
namespace {

constexpr char kUnderNcuFlag[] = "--kit_under_ncu";
constexpr char kUnderSanitizerFlag[] = "--kit_under_sanitizer";
char kit_sandbox_status[256] = "not applied";
bool kit_confine_files = false;  // main() applies Landlock once the driver has started
bool kit_under_ncu = false;
bool kit_under_sanitizer = false;  // compute-sanitizer's injection may start threads as it runs
char kit_ncu_tmp[512] = "/tmp";  // TMPDIR as started: ncu's lock folder is beneath it

// The shared libraries the program was started with (its own dependencies, which the kit's build
// chose: student code cannot add one), one path per line between newlines. Taken in .preinit_array,
// before any constructor, with nothing but the C library (libstdc++ may not be set up yet).
char kit_start_libraries[16384] = "\n";

void note_start_libraries() {
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void*) {
        const char* path = info->dlpi_name;
        if (path == nullptr || *path == '\0') return 0;
        const std::size_t used = std::strlen(kit_start_libraries);
        if (used + std::strlen(path) + 2 < sizeof kit_start_libraries) {
          std::strcat(kit_start_libraries, path);
          std::strcat(kit_start_libraries, "\n");
        }
        return 0;
      },
      nullptr);
}

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

// ncu's lock folder, ${TMPDIR:-/tmp}/nvidia/nsight_compute, opened (O_PATH) for a Landlock rule;
// missing folders are created. Each part of the path is opened without following a symbolic
// link, so a link planted by earlier code cannot point the rule at another folder. -1: failed.
int open_ncu_lock_folder() {
  std::string path = std::string(kit_ncu_tmp) + "/nvidia/nsight_compute";
  int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  std::size_t at = 1;
  while (dir >= 0 && at < path.size()) {
    const std::size_t end = std::min(path.find('/', at), path.size());
    const std::string part = path.substr(at, end - at);
    at = end + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      close(dir);
      return -1;
    }
    mkdirat(dir, part.c_str(), 0777);  // exists already: EEXIST, and the open below decides
    const int next = openat(dir, part.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(dir);
    dir = next;
  }
  return dir;
}

// Landlock (linux/landlock.h); returns the ABI version applied, 0 where the kernel has none.
int apply_landlock() {
#ifndef __NR_landlock_create_ruleset
  return 0;
#else
  const long abi = syscall(__NR_landlock_create_ruleset, nullptr, 0,
                           LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) return 0;
  std::uint64_t handled = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                          LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
                          LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                          LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
                          LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
  std::uint64_t device_files = LANDLOCK_ACCESS_FS_WRITE_FILE;
#ifdef LANDLOCK_ACCESS_FS_REFER
  if (abi >= 2) handled |= LANDLOCK_ACCESS_FS_REFER;
#endif
#ifdef LANDLOCK_ACCESS_FS_TRUNCATE
  if (abi >= 3) {
    handled |= LANDLOCK_ACCESS_FS_TRUNCATE;
    device_files |= LANDLOCK_ACCESS_FS_TRUNCATE;
  }
#endif
  landlock_ruleset_attr attr{};
  attr.handled_access_fs = handled;
  const int ruleset = static_cast<int>(
      syscall(__NR_landlock_create_ruleset, &attr, sizeof attr.handled_access_fs, 0));
  if (ruleset < 0) return 0;
  // Existing files under /dev may be opened for writing (/dev/nvidia*, /dev/null); nothing may be
  // created there either.
  const int dev = open("/dev", O_PATH | O_CLOEXEC);
  bool ok = dev >= 0;
  if (ok) {
    landlock_path_beneath_attr rule{};
    rule.allowed_access = device_files;
    rule.parent_fd = dev;
    ok = syscall(__NR_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) == 0;
    close(dev);
  }
  // Under Nsight Compute: its lock file may be created, written and removed in its own folder
  // (without that folder, ncu cannot profile and the counter test fails, confined all the same).
  if (ok && kit_under_ncu) {
    const int lock_folder = open_ncu_lock_folder();
    if (lock_folder >= 0) {
      landlock_path_beneath_attr rule{};
      rule.allowed_access = device_files | LANDLOCK_ACCESS_FS_MAKE_REG |
                            LANDLOCK_ACCESS_FS_REMOVE_FILE;
      rule.parent_fd = lock_folder;
      ok = syscall(__NR_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) == 0;
      close(lock_folder);
    }
  }
  ok = ok && syscall(__NR_landlock_restrict_self, ruleset, 0) == 0;
  close(ruleset);
  return ok ? static_cast<int>(abi) : 0;
#endif
}

bool apply_seccomp() {
  std::vector<sock_filter> filter = seccomp_program();
  sock_fprog program{static_cast<unsigned short>(filter.size()), filter.data()};
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

// From main(), once the driver's threads have started: no thread of the worker may start another
// (clone kills the process: SIGSYS; clone3 is already refused, and the C library falls back to
// clone). TSYNC puts the filter on every thread, the driver's included, so a host function the
// student queued (run on the driver's thread) cannot start one either. Kernel-enforced: student
// code that rewrites the worker's memory cannot undo it, as it could undo a check of the worker's.
bool forbid_new_threads() {
  constexpr unsigned kNr = offsetof(seccomp_data, nr);
  sock_filter filter[] = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kNr),
                          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 1),
                          BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
                          BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  sock_fprog program{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  return syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program) == 0;
}

#endif

void apply_sandbox(int argc, char** argv, char** envp) {
  note_start_libraries();
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], kUnderNcuFlag) == 0) kit_under_ncu = true;
    else if (std::strcmp(argv[i], kUnderSanitizerFlag) == 0) kit_under_sanitizer = true;
  for (char** e = envp; e != nullptr && *e != nullptr; ++e)
    if (std::strncmp(*e, "TMPDIR=", 7) == 0 && (*e)[7] == '/' &&
        std::strlen(*e + 7) < sizeof kit_ncu_tmp)
      std::strcpy(kit_ncu_tmp, *e + 7);
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
  std::snprintf(kit_sandbox_status, sizeof kit_sandbox_status, "seccomp %s",
                seccomp ? "on" : "refused by the kernel");
  kit_confine_files = true;
#else
  std::snprintf(kit_sandbox_status, sizeof kit_sandbox_status, "not available on this processor");
#endif
}

// The C library calls .preinit_array functions with the program's argc, argv and environment.
__attribute__((section(".preinit_array"), used)) void (*const kit_sandbox_first)(int, char**,
                                                                               char**) =
    apply_sandbox;

}  // namespace

namespace kit::remote {
namespace {

struct Mapping {
  CUdeviceptr va;
  std::size_t size;
};

// The threads this process has now: the ids listed in /proc/self/task.
std::set<int> thread_ids() {
  std::set<int> ids;
  if (DIR* tasks = opendir("/proc/self/task")) {
    while (const dirent* entry = readdir(tasks))
      if (entry->d_name[0] != '.') ids.insert(std::atoi(entry->d_name));
    closedir(tasks);
  }
  return ids;
}

int thread_count() { return static_cast<int>(thread_ids().size()); }

struct Worker {
  std::map<std::uint64_t, Mapping> mapped;           // the judge's buffer id -> mapped here
  std::vector<int> received;                         // descriptors of the message being served
  std::map<std::uint64_t, cudaStream_t> streams;     // the judge's stream -> one of ours
  cudaStream_t call_stream = nullptr;                // the stream of the call being decoded
  bool timing = false;
  cudaEvent_t start{}, stop{};
  bool have_device = false;
  int early_threads = 0;  // threads found at main() besides the main one's: student code's
  std::set<int> known_threads;  // the driver's and the tools', as found after the kit's own calls
  unsigned char* hold_copy = nullptr;  // "kit::hold()": what the held stream's buffer held
  std::uint64_t hold_bytes = 0;
};

Worker& worker() {
  static Worker w;
  return w;
}

// Reads `size` bytes; descriptors that come with them (the judge's buffers) join `received`.
bool read_exact(int fd, char* out, std::size_t size) {
  std::size_t got = 0;
  while (got < size) {
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 253)];
    iovec io{out + got, size - got};
    msghdr m{};
    m.msg_iov = &io;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    const ssize_t n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int received = -1;
        std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        worker().received.push_back(received);
      }
    }
    got += static_cast<std::size_t>(n);
  }
  return true;
}

// ---- The kernels a call launched -----------------------------------------------------------
// CUPTI's callback API calls on_launch() at every kernel launch of this process, through the
// runtime (<<<>>>, cudaLaunchKernel and the like) or the driver (cuLaunchKernel...), with the
// kernel's name. Every reply carries the names launched since the previous one; the judge compares
// them with the kernels compiled into this worker (cuobjdump's list, written when it was linked),
// so a kernel of a library, or of a module loaded at run time, is a ban hit naming it.
// Under Nsight Compute (kit_under_ncu: the judge's argument, read before any student code ran)
// CUPTI is left alone: an application that uses CUPTI cannot be profiled by Nsight Compute, which
// reads every launch itself (grader/kitgrade/counters.py fails a launch of a kernel that is not
// in the worker).
std::mutex launched_mutex;
std::set<std::string> launched;
std::string kernel_check = "off (the worker was built without CUPTI)";

#if KIT_HAVE_CUPTI
void CUPTIAPI on_launch(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (info->callbackSite != CUPTI_API_ENTER) return;
  std::lock_guard<std::mutex> lock(launched_mutex);
  launched.insert(info->symbolName != nullptr ? info->symbolName : "");
}

bool launches_a_kernel(const std::string& api) {
  return api.find("LaunchKernel") != std::string::npos ||
         api.find("LaunchCooperativeKernel") != std::string::npos || api == "cuLaunch" ||
         api == "cuLaunchGrid" || api == "cuLaunchGridAsync";
}

void start_kernel_check() {
  if (kit_under_ncu) {
    kernel_check = "off (under Nsight Compute, which reads every launch)";
    return;
  }
  CUpti_SubscriberHandle subscriber{};
  const CUptiResult r =
      cuptiSubscribe(&subscriber, reinterpret_cast<CUpti_CallbackFunc>(&on_launch), nullptr);
  if (r != CUPTI_SUCCESS) {
    const char* why = "unknown";
    cuptiGetResultString(r, &why);
    kernel_check = std::string("unavailable (") + why + ")";
    return;
  }
  int watched = 0;
  const std::pair<CUpti_CallbackDomain, std::uint32_t> domains[] = {
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE}};
  for (const auto& [domain, size] : domains)
    for (std::uint32_t cbid = 1; cbid < size; ++cbid) {
      const char* api = nullptr;
      if (cuptiGetCallbackName(domain, cbid, &api) == CUPTI_SUCCESS && api != nullptr &&
          launches_a_kernel(api) && cuptiEnableCallback(1, subscriber, domain, cbid) == CUPTI_SUCCESS)
        ++watched;
    }
  kernel_check = "on (CUPTI, " + std::to_string(watched) + " launch functions watched)";
}
#else
void start_kernel_check() {}
#endif

void write_all(int fd, const char* data, std::size_t size) {
  std::size_t sent = 0;
  while (sent < size) {
    const ssize_t n = write(fd, data + sent, size - sent);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) std::_Exit(4);  // the judge is gone
    sent += static_cast<std::size_t>(n);
  }
}

// A reply: its kind (the first byte of `body`), the kernels launched since the last reply, the
// rest of `body`, then `payload` (a call's results, sent as they are: a result of 256 MiB is not
// copied again on its way to the socket).
void write_reply(int fd, const std::string& body, const std::string& payload = std::string()) {
  Writer kernels;
  {
    std::lock_guard<std::mutex> lock(launched_mutex);
    kernels.pod<std::uint32_t>(static_cast<std::uint32_t>(launched.size()));
    for (const auto& name : launched) kernels.text(name);
    launched.clear();
  }
  const auto size =
      static_cast<std::uint32_t>(body.size() + kernels.bytes().size() + payload.size());
  std::string frame(reinterpret_cast<const char*>(&size), sizeof size);
  frame += body.substr(0, 1);
  frame += kernels.bytes();
  frame += body.substr(1);
  write_all(fd, frame.data(), frame.size());
  write_all(fd, payload.data(), payload.size());
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

// Keeps its stream busy for `ns` nanoseconds (the GPU's own clock), then copies `bytes` from `from`
// to `to`: work queued behind it on the stream runs after the copy, work anywhere else does not wait.
__global__ void hold_kernel(unsigned long long ns, const unsigned char* from, unsigned char* to,
                            unsigned long long bytes) {
  if (threadIdx.x == 0) {
    unsigned long long start = 0, now = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
      __nanosleep(1000);
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
  }
  __syncthreads();
  for (unsigned long long i = threadIdx.x; i < bytes; i += blockDim.x) to[i] = from[i];
}

// "kit::hold()" (stream, milliseconds, pointer, bytes): queues hold_kernel on the worker's copy of
// the stream and returns at once; serve() does not wait for it (kit/remote.h, queued_on_stream).
void hold_call(Reader& r, Writer&) {
  Worker& w = worker();
  const cudaStream_t stream = detail::get_stream(r);
  const auto ms = r.pod<double>();
  const auto* from = static_cast<const unsigned char*>(detail::get_pointer(r));
  const auto bytes = r.pod<std::uint64_t>();
  if (!w.have_device) throw std::runtime_error("kit worker: no device to hold a stream on");
  if (from == nullptr || bytes == 0 || bytes > kHoldMaxBytes || !(ms > 0 && ms < 10000))
    throw Malformed("kit worker: a hold of " + std::to_string(bytes) + " bytes for " +
                    std::to_string(ms) + " ms");
  if (w.hold_copy == nullptr) {
    const cudaError_t e = cudaMalloc(&w.hold_copy, kHoldMaxBytes);
    if (e != cudaSuccess) throw std::runtime_error("kit worker: " + cuda_text(e));
  }
  w.hold_bytes = bytes;
  hold_kernel<<<1, 256, 0, stream>>>(static_cast<unsigned long long>(ms * 1e6), from,
                                     w.hold_copy, bytes);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw std::runtime_error("kit worker: hold_kernel: " + cuda_text(e));
}

// "kit::held()": the bytes the last hold_kernel copied (the judge asks once the call after the
// hold has returned, and serve() waits for the device after every call but kit::hold()).
void held_call(Reader&, Writer& out) {
  Worker& w = worker();
  std::string bytes(w.hold_bytes, '\0');
  if (w.hold_copy != nullptr && w.hold_bytes > 0) {
    const cudaError_t e = cudaMemcpy(bytes.data(), w.hold_copy, w.hold_bytes, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) throw std::runtime_error("kit worker: " + cuda_text(e));
  }
  Codec<std::string>::put(out, bytes);
}

// "kit::map()": maps the judge's buffers listed (id, size), whose file descriptors came with the
// message, in that order (kit/remote.h; driver_vmm.h).
void map_call(Reader& r, Writer&) {
  Worker& w = worker();
  const auto count = r.pod<std::uint64_t>();
  if (count > w.received.size()) throw Malformed("kit worker: buffers without their descriptors");
  const vmm::Driver& d = vmm::driver();
  for (std::uint64_t i = 0; i < count; ++i) {
    const auto id = r.pod<std::uint64_t>();
    const auto size = r.pod<std::uint64_t>();
    if (w.mapped.count(id) > 0) continue;
    CUmemGenericAllocationHandle handle{};
    vmm::check(d.import_handle(&handle,
                               reinterpret_cast<void*>(static_cast<std::uintptr_t>(w.received[i])),
                               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
               "cuMemImportFromShareableHandle");
    const CUdeviceptr va = vmm::map_or_release(handle, size);
    d.release(handle);  // the mapping keeps the memory
    w.mapped.emplace(id, Mapping{va, size});
  }
}

// "kit::sandbox()": what the sandbox could apply in this process, for the judge's report.
void sandbox_call(Reader&, Writer& w) {
  Codec<std::string>::put(w, std::string(kit_sandbox_status) + "; kernel check " + kernel_check);
}

}  // namespace

namespace detail {

void put_pointer(Writer&, const void*) { throw std::logic_error("put_pointer is the judge's"); }

void* get_pointer(Reader& r) {
  const auto tag = r.pod<std::uint8_t>();
  if (tag == 0) return nullptr;
  if (tag != 1) throw Malformed("kit worker: unknown pointer tag");
  const auto id = r.pod<std::uint64_t>();
  const auto offset = r.pod<std::uint64_t>();
  const auto found = worker().mapped.find(id);
  if (found == worker().mapped.end()) throw Malformed("kit worker: a buffer the judge did not map");
  if (offset >= found->second.size) throw Malformed("kit worker: a pointer past its buffer");
  return reinterpret_cast<char*>(found->second.va) + offset;
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

// The shared libraries in this process now. The worker is linked with the CUDA runtime statically;
// besides what it started with (kit_start_libraries: the C and C++ libraries, CUPTI) only the
// driver (libcuda, libnvidia-*) and, under compute-sanitizer or Nsight Compute, the tool's own
// libraries (libcuda-injection, libnvperf_* and their folder's are Nsight Compute's) are loaded
// later. Any other library (cuBLAS, CUB's runtime, a library file opened by path) was loaded by the
// student's code, whatever the means (dlopen, a name assembled at run time, a pointer found in
// memory). Libraries a lab bans cannot be used without loading.
std::string unexpected_library() {
  // Under Nsight Compute, its injection library's folder (target/linux-...) is the tool's own, and
  // whatever else it loads from there is too.
  // It also loads driver libraries of its own (libnvoptix on the H200 with Nsight Compute
  // 2025.3): under the tool, a library from the driver's folder (libcuda's) is the driver's.
  struct Scan {
    std::string tool_folder, driver_folder, found;
  } scan;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        const std::string path = info->dlpi_name ? info->dlpi_name : "";
        const auto slash = path.rfind('/');
        if (slash != std::string::npos && path.find("/libcuda-injection", slash) == slash)
          static_cast<Scan*>(out)->tool_folder = path.substr(0, slash + 1);
        if (slash != std::string::npos && path.find("/libcuda.so", slash) == slash)
          static_cast<Scan*>(out)->driver_folder = path.substr(0, slash + 1);
        return 0;
      },
      &scan);
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        Scan& scan = *static_cast<Scan*>(out);
        const char* path = info->dlpi_name;
        if (path == nullptr || *path == '\0') return 0;
        if (std::strstr(kit_start_libraries, ("\n" + std::string(path) + "\n").c_str()) != nullptr)
          return 0;
        const char* slash = std::strrchr(path, '/');
        const std::string name = slash ? slash + 1 : path;
        static const char* expected[] = {
            "libc.so", "libm.so", "libstdc++.so", "libgcc_s.so", "ld-linux", "linux-vdso",
            "libdl.so", "libpthread.so", "librt.so", "libcuda.so", "libnvidia-", "libcudadebugger",
            "libsanitizer", "libTreeLauncher", "libInterceptorInjection", "libcupti",
            "libcuda-injection", "libnvperf"};
        for (const char* prefix : expected)
          if (name.rfind(prefix, 0) == 0) return 0;
        for (const std::string* folder : {&scan.tool_folder, &scan.driver_folder})
          if (!scan.tool_folder.empty() && !folder->empty() &&
              std::string(path).rfind(*folder, 0) == 0 &&
              std::strchr(path + folder->size(), '/') == nullptr)
            return 0;
        scan.found = path;
        return 1;
      },
      &scan);
  return scan.found;
}

// After a call: "" when no thread has appeared since the kit last looked, or the message of a
// forbidden result when the student's function `key` left threads running. After a kit call the
// threads found are taken as the driver's (or a tool's) and known from then on.
std::string threads_left(const std::string& key) {
  Worker& w = worker();
  std::set<int> now = thread_ids();
  if (key.rfind("kit::", 0) == 0) {
    w.known_threads = std::move(now);
    return "";
  }
  // A thread the function joined can still be listed for a moment while the kernel lets it go:
  // look again for up to a few milliseconds. A thread that ends meanwhile launched its work before
  // the worker waits for the device, which the judge's clock counts.
  std::size_t left = 0;
  for (int look = 0; look < 40; ++look) {
    if (look > 0) usleep(100);
    left = 0;
    for (const int id : now) left += w.known_threads.count(id) == 0;
    if (left == 0) return "";
    now = thread_ids();
  }
  return "your code left " + std::to_string(left) + " thread(s) running when " +
         key.substr(0, key.find('(')) +
         " returned: a function must finish its work, and end every thread it started, before "
         "it returns (work a thread does later is outside every check and every timing)";
}

void forget(Reader& r) {
  Worker& w = worker();
  const auto n = r.pod<std::uint64_t>();
  for (std::uint64_t i = 0; i < n; ++i) {
    const auto found = w.mapped.find(r.pod<std::uint64_t>());
    if (found == w.mapped.end()) continue;
    vmm::unmap(found->second.va, found->second.size);
    w.mapped.erase(found);
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
                                       : key == "kit::map()"     ? &map_call
                                       : key == "kit::hold()"    ? &hold_call
                                       : key == "kit::held()"    ? &held_call
                                                                 : nullptr;
  for (std::size_t i = 0; i < count && serve_fn == nullptr; ++i)
    if (key == entries[i].key) serve_fn = entries[i].serve;
  if (serve_fn == nullptr) {
    out.pod(static_cast<std::uint8_t>(Reply::refused));
    out.text("no function '" + key + "' in this worker (built from another version of the lab?)");
    write_reply(fd, out.bytes());
    return true;
  }
  if (w.early_threads > 0 && key.rfind("kit::", 0) != 0) {
    out.pod(static_cast<std::uint8_t>(Reply::forbidden));
    out.text("your code started a thread before main() (" + std::to_string(w.early_threads) +
             " threads at its start): lab code may not run before main()");
    write_reply(fd, out.bytes());
    return false;
  }

  w.timing = kind == Request::timed_call && w.have_device;
  w.call_stream = nullptr;
  if (w.timing) {
    cudaDeviceSynchronize();
    cudaEventRecord(w.start, nullptr);  // replaced by before_call() once the stream is known
  }
  Writer result;
  std::exception_ptr thrown;
  try {
    serve_fn(r, result);
    if (w.timing) cudaEventRecord(w.stop, w.call_stream);
  } catch (...) {
    thrown = std::current_exception();
  }
  // A student's function must have finished its work, host threads included, when it returns: a
  // thread still running could launch work after the worker's last wait for the device (outside
  // every timed window), or load the GPU while the judge times a ceiling. Threads that appear
  // during the kit's own calls are the driver's or a tool's.
  if (const std::string left = threads_left(key); !left.empty()) {
    w.timing = false;
    out.pod(static_cast<std::uint8_t>(Reply::forbidden));
    out.text(left);
    write_reply(fd, out.bytes());
    return false;
  }
  if (thrown) {
    w.timing = false;
    if (w.have_device) cudaDeviceSynchronize();
    out.pod(static_cast<std::uint8_t>(Reply::exception));
    try {
      std::rethrow_exception(thrown);
    } catch (const std::exception& e) {
      out.pod(static_cast<std::uint8_t>(type_of(e)));
      out.text(e.what());
    } catch (...) {
      out.pod(static_cast<std::uint8_t>(ExceptionType::other));
      out.text("an exception that is not a std::exception");
    }
    write_reply(fd, out.bytes());
    return true;
  }

  double ms = 0;
  if (w.timing) {
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
  if (w.have_device && key != "kit::hold()") {  // a hold's kernel must outlast its reply
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
  write_reply(fd, out.bytes(), result.bytes());
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
  // Every kernel is loaded when the context is made. Loaded lazily, at its first launch, a kernel
  // can make the context wait for the work already on the GPU (a hold of queued_on_stream, say)
  // before it starts.
  setenv("CUDA_MODULE_LOADING", "EAGER", 1);

  Worker& w = worker();
  const int threads_at_main = thread_count();
  start_kernel_check();
  kit::trace("worker kernel check");  // KIT_TRACE: CUPTI's part of the worker's start
  int devices = 0;
  w.have_device = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  cudaGetLastError();
  if (w.have_device) cudaFree(nullptr);  // the driver and its first threads start now
  kit::trace("worker context");          // KIT_TRACE: opened before the sandbox closes files
  if (kit_confine_files) {
    const int landlock = apply_landlock();
    char files[128];
    if (threads_at_main != 1)
      std::snprintf(files, sizeof files, "; %d threads before main()", threads_at_main);
    else if (landlock > 0)
      std::snprintf(files, sizeof files, "; Landlock ABI %d: no file writes outside /dev", landlock);
    else
      std::snprintf(files, sizeof files, "; no Landlock: file writes not confined");
    std::strncat(kit_sandbox_status, files, sizeof kit_sandbox_status - std::strlen(kit_sandbox_status) - 1);
    if (threads_at_main != 1) w.early_threads = threads_at_main;
  }
  if (w.have_device) {
    cudaEventCreate(&w.start);
    cudaEventCreate(&w.stop);
    // The driver starts the thread that runs host functions (cudaLaunchHostFunc,
    // cudaStreamAddCallback) at their first use: started now, it is known before any call.
    cudaLaunchHostFunc(nullptr, [](void*) {}, nullptr);
    cudaStreamSynchronize(nullptr);
    cudaGetLastError();
  }
  w.known_threads = thread_ids();
#if defined(__x86_64__)
  // Not under Nsight Compute or compute-sanitizer, whose injections may start threads of their own
  // as they work (nothing is timed under either; the thread check of every call still holds).
  if (kit_confine_files && !kit_under_ncu && !kit_under_sanitizer && w.early_threads == 0) {
    kit::threads_allowed() = false;  // the kit's own host loops (kit/parallel.h) run serially
    const bool none = forbid_new_threads();
    std::strncat(kit_sandbox_status, none ? "; no new threads" : "; new threads not refused",
                 sizeof kit_sandbox_status - std::strlen(kit_sandbox_status) - 1);
  }
#endif
  std::size_t count = 0;
  const Entry* entries = kit_remote_entries(&count);
  for (;;) {
    std::uint32_t size = 0;
    if (!read_exact(fd, reinterpret_cast<char*>(&size), sizeof size)) return 0;  // judge done
    std::string message(size, '\0');
    if (!read_exact(fd, message.data(), size)) return 0;
    bool go_on = true;
    try {
      go_on = serve(fd, message, entries, count);
    } catch (const Malformed& e) {
      Writer out;
      out.pod(static_cast<std::uint8_t>(Reply::refused));
      out.text(e.what());
      write_reply(fd, out.bytes());
    }
    for (const int received : w.received) close(received);  // mapped buffers keep their memory
    w.received.clear();
    if (!go_on) return 3;
  }
}
