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

KIT_TEST(FakeHost, Hangs, "fake.2", host, 1, "a test that never returns") {
  while (armed()) std::this_thread::sleep_for(std::chrono::seconds(1));
}

KIT_TEST(FakeHost, ExitsZero, "fake.2", host, 1, "a test that calls exit(0) before reporting") {
  if (armed()) {
    std::printf("[  PASSED  ] 1 test.\n");  // lies on stdout; the runner must not believe it
    std::exit(0);
  }
}

// What a student's code could try: find the runner's result path in its own command line, write a
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
    if (arg.rfind("--kit_verdict=", 0) == 0) path = arg.substr(14);
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

}  // namespace
