// A fake lab for the kit's own tests: each test misbehaves in one way a student's code can.
// The tests only misbehave when KIT_FAKE_LAB=1, so running this binary by accident is harmless.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "kit/check.h"
#include "kit/huge.h"
#include "kit/test.h"

namespace {

bool armed() {
  const char* env = std::getenv("KIT_FAKE_LAB");
  return env && std::string(env) == "1";
}

// The NUL-separated entries of a /proc file such as /proc/self/cmdline.
std::vector<std::string> proc_entries(const char* path) {
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> entries;
  for (std::size_t start = 0, end; start < text.size(); start = end + 1) {
    end = text.find('\0', start);
    if (end == std::string::npos) end = text.size();
    entries.push_back(text.substr(start, end - start));
  }
  return entries;
}

using FakeHost = kit::HostTest;
using FakeGpu = kit::GpuTest;

KIT_TEST(FakeHost, Passes, "fake.1", host, 2, "a host test that passes") { SUCCEED(); }

KIT_TEST(FakeHost, Fails, "fake.1", host, 3, "a host test that fails with a message") {
  if (armed()) ADD_FAILURE() << "element [7]: expected 1, got 2";
}

KIT_TEST(FakeHost, Aborts, "fake.2", host, 1, "a test that calls abort()") {
  if (armed()) std::abort();
}

KIT_TEST(FakeHost, Segfaults, "fake.2", host, 1, "a test that dereferences a null pointer") {
  if (armed()) {
    volatile int* p = nullptr;
    *p = 1;
  }
}

KIT_TEST(FakeHost, Hangs, "fake.4", host, 1, "a test that never returns") {
  while (armed()) std::this_thread::sleep_for(std::chrono::seconds(1));
}

KIT_TEST(FakeHost, ExitsZero, "fake.2", host, 1, "a test that calls exit(0) before reporting") {
  if (armed()) {
    std::printf("[  PASSED  ] 1 test.\n");  // lies on stdout; the runner must not believe it
    std::exit(0);
  }
}

// What a student's code could try: find the runner's result folder in its own command line, write a
// passing result there (with a made-up signature), and leave before the real result is written.
// The runner must not believe it. Exits with code 3 instead if the run key is still reachable
// (variable set, or its pipe still open), which the selftest reports as a failure too.
KIT_TEST(FakeHost, ForgesAPassingResult, "fake.2", host, 1,
         "a test that writes a passing result where the runner reads results, then exit(0)") {
  if (!armed()) return;
  if (std::getenv("KIT_NONCE_FD") != nullptr) std::_Exit(3);
  for (const std::string& entry : proc_entries("/proc/self/environ")) {
    if (entry.rfind("KIT_NONCE_FD=", 0) != 0) continue;
    char target[64] = {};
    const std::string fd_link = "/proc/self/fd/" + entry.substr(13);
    if (readlink(fd_link.c_str(), target, sizeof target - 1) > 0 &&
        std::string(target).rfind("pipe:", 0) == 0)
      std::_Exit(3);
  }
  for (const std::string& arg : proc_entries("/proc/self/cmdline")) {
    std::string path;
    if (arg.rfind("--kit_verdicts=", 0) == 0) {  // the next verdict's name in that folder
      std::string dir = arg.substr(15);
      int next = 0;
      while (std::ifstream(dir + "/" + std::string(6 - std::to_string(next).size(), '0') +
                           std::to_string(next) + ".json"))
        ++next;
      path = dir + "/" + std::string(6 - std::to_string(next).size(), '0') + std::to_string(next) +
             ".json";
    }
    if (arg.rfind("--gtest_output=json:", 0) == 0) path = arg.substr(20);
    if (path.empty()) continue;
    std::ofstream out(path, std::ios::trunc);
    out << R"({"testsuites": [{"name": "FakeHost", "testsuite": [{"name": "ForgesAPassingResult", )"
        << R"("classname": "FakeHost", "status": "RUN", "result": "COMPLETED"}]}]})"
        << "\nkit-hmac-sha256 " << std::string(64, '0') << "\n";
  }
  std::printf("[  PASSED  ] 1 test.\n");
  std::fflush(stdout);
  std::_Exit(0);
}

// One process runs many tests: the faults above each cost only their own test, and this one,
// after them all, still runs (in a process started again after the last fault) and passes.
KIT_TEST(FakeHost, PassesAfterTheFaults, "fake.1", host, 1, "a host test after the faults above") {
  SUCCEED();
}

KIT_TEST(FakeGpu, NeedsAGpu, "fake.3", gpu, 2, "a GPU test (not run without a GPU)") {
  kit::DeviceBuffer<float> buffer(16);
  EXPECT_EQ(buffer.size(), 16u);
}

KIT_TEST(FakeGpu, HugeAllocation, "fake.3", gpu, 1, "a test that asks for 1 PiB of device memory") {
  if (armed()) kit::DeviceBuffer<char> huge(std::size_t(1) << 50);  // throws kit::CudaError
}

__global__ void write_through_bad_pointer_kernel(float* p) { p[threadIdx.x] = 1.0f; }

KIT_TEST(FakeGpu, IllegalAddress, "fake.3", gpu, 1, "a kernel that writes through a bad pointer") {
  if (!armed()) return;
  write_through_bad_pointer_kernel<<<1, 32>>>(reinterpret_cast<float*>(0x10));
  KIT_CHECK_LAUNCH("write_through_bad_pointer_kernel");
  KIT_CUDA_CHECK(cudaDeviceSynchronize());  // the fault surfaces here, and sticks to the context
}

// After a test that broke the CUDA context (a sticky error), the next test gets a fresh process
// and so a working context.
KIT_TEST(FakeGpu, PassesAfterTheContextBroke, "fake.3", gpu, 1,
         "a GPU test right after one that broke the context") {
  kit::DeviceBuffer<float> buffer(16);
  KIT_CUDA_CHECK(cudaMemset(buffer.data(), 0, buffer.bytes()));
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
}

// The kit's own check helper (kit/huge.h): note_wrong adds up a warp's wrong elements in one
// atomic pair, and the count and the first wrong index must stay exact whatever the warps'
// divergence. Element i is wrong when wrong_at(i, pattern) holds.
__host__ __device__ bool wrong_at(std::size_t i, int pattern) {
  switch (pattern) {
    case 0: return false;
    case 1: return true;
    case 2: return i % 7 == 3 || (i >> 5) % 5 == 1;  // scattered, and whole warps
    default: return i % 4099 == 4098 && i > 1000000;  // rare, none near the start
  }
}

__global__ void note_wrong_kernel(std::size_t n, int pattern, unsigned long long* wrong) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    if (wrong_at(i, pattern)) kit::note_wrong(wrong, i);
}

KIT_TEST(FakeGpu, CountsWrongElementsExactly, "fake.3", gpu, 1,
         "the kit's check kernels count every wrong element and find the first") {
  const std::size_t n = (std::size_t{1} << 24) + 5;
  for (int pattern = 0; pattern < 4; ++pattern) {
    unsigned long long count = 0, first = ~0ull;
    for (std::size_t i = 0; i < n; ++i)
      if (wrong_at(i, pattern)) {
        if (count++ == 0) first = i;
      }
    const kit::WrongCount got = kit::count_wrong([&](unsigned long long* w) {
      note_wrong_kernel<<<kit::kHugeBlocks / 8, kit::kHugeThreads>>>(n, pattern, w);
    });
    EXPECT_EQ(got.count, count) << "pattern " << pattern;
    EXPECT_EQ(got.first, first) << "pattern " << pattern;
  }
}

// Two ways a kernel never finishes; the runner must cut the test off at its timeout and still grade
// the rest. In the first, the first warp waits at a barrier for warps that wait for it (a barrier
// inside a branch); in the second, every thread spins on a flag nobody sets.
__global__ void barrier_in_branch_kernel(volatile int* flag) {
  if (threadIdx.x < 32) {
    __syncthreads();  // wrong on purpose: the other warps never get here
    *flag = 1;
  } else {
    while (*flag == 0) {
    }
  }
}

__global__ void spin_kernel(volatile int* flag) {
  while (*flag == 0) {
  }
}

KIT_TEST(FakeGpu, KernelDeadlocksOnABarrierInABranch, "fake.4", gpu, 1,
         "a kernel whose barrier sits in a branch that only one warp takes") {
  if (!armed()) return;
  kit::DeviceBuffer<int> flag(1);
  KIT_CUDA_CHECK(cudaMemset(flag.data(), 0, sizeof(int)));
  barrier_in_branch_kernel<<<1, 64>>>(flag.data());
  KIT_CHECK_LAUNCH("barrier_in_branch_kernel");
  KIT_CUDA_CHECK(cudaDeviceSynchronize());  // never returns
}

KIT_TEST(FakeGpu, KernelLoopsForever, "fake.4", gpu, 1, "a kernel that spins on a flag nobody sets") {
  if (!armed()) return;
  kit::DeviceBuffer<int> flag(1);
  KIT_CUDA_CHECK(cudaMemset(flag.data(), 0, sizeof(int)));
  spin_kernel<<<1, 32>>>(flag.data());
  KIT_CHECK_LAUNCH("spin_kernel");
  KIT_CUDA_CHECK(cudaDeviceSynchronize());  // never returns
}

__global__ void write_far_past_the_end_kernel(float* p) { p[(std::size_t(1) << 34) + threadIdx.x] = 1.0f; }

KIT_TEST(FakeGpu, FarOutOfBoundsWrite, "fake.3", gpu, 1,
         "a kernel that writes 64 GiB past the end of a 16-float buffer") {
  if (!armed()) return;
  kit::DeviceBuffer<float> buffer(16);
  write_far_past_the_end_kernel<<<1, 32>>>(buffer.data());
  KIT_CHECK_LAUNCH("write_far_past_the_end_kernel");
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace
