// A fake lab for the kit's own tests: each test misbehaves in one way a student's code can.
// The tests only misbehave when KIT_FAKE_LAB=1, so running this binary by accident is harmless.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "kit/check.h"
#include "kit/test.h"

namespace {

bool armed() {
  const char* env = std::getenv("KIT_FAKE_LAB");
  return env && std::string(env) == "1";
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
