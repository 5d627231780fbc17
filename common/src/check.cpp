#include "kit/check.h"
#include "kit/staged.h"

#include "driver_vmm.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <sstream>
#include <utility>

namespace kit {
namespace {

std::string base_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

std::string describe(cudaError_t code) {
  std::ostringstream out;
  out << cudaGetErrorString(code) << " (" << cudaGetErrorName(code) << ")";
  return out.str();
}

}  // namespace

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  std::ostringstream out;
  out << call << " failed: " << describe(code) << " at " << base_name(file) << ":" << line;
  throw CudaError(code, out.str());
}

void throw_launch_error(cudaError_t code, const char* kernel, const char* file, int line) {
  std::ostringstream out;
  out << "launch of " << kernel << " failed: " << describe(code) << " at " << base_name(file) << ":"
      << line;
  if (code == cudaErrorInvalidConfiguration || code == cudaErrorInvalidValue)
    out << " (check the launch: every grid and block dimension must be at least 1, and a block "
           "may hold at most 1024 threads)";
  throw CudaError(code, out.str());
}

namespace detail {
namespace {
void* cuda_allocate(std::size_t bytes) {
  void* p = nullptr;
  KIT_CUDA_CHECK(cudaMalloc(&p, bytes));
  return p;
}
void cuda_release(void* p) noexcept { cudaFree(p); }  // a sticky error surfaces elsewhere
std::size_t cuda_extent(std::size_t bytes) { return bytes; }
DeviceAllocator allocator{&cuda_allocate, &cuda_release, &cuda_extent};
}  // namespace

void* device_allocate(std::size_t bytes) { return allocator.allocate(bytes); }
void device_release(void* p) noexcept {
  if (p != nullptr) allocator.release(p);
}
std::size_t device_extent(std::size_t bytes) { return allocator.extent(bytes); }
void device_settle() {
  if (allocator.settle != nullptr) allocator.settle();
}
DeviceAllocator set_device_allocator(DeviceAllocator a) { return std::exchange(allocator, a); }

void fill_device_words(void* p, std::uint32_t bits, std::size_t count) {
  if (count == 0) return;
  static const auto memset_words = vmm::entry<decltype(&::cuMemsetD32)>("cuMemsetD32");
  vmm::check(memset_words(reinterpret_cast<CUdeviceptr>(p), bits, count), "cuMemsetD32");
  // The memset runs on the default stream and may return before it is done: wait for that
  // stream, and no other, as the cudaMemcpy of a host-side fill waited.
  KIT_CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

void download_staged(const void* device, std::size_t bytes,
                     const std::function<bool(const void*, std::size_t, std::size_t)>& visit) {
  static std::mutex busy;
  static void* stage = nullptr;  // lives as long as the process, like its CUDA context
  const std::lock_guard<std::mutex> lock(busy);
  if (stage == nullptr) KIT_CUDA_CHECK(cudaMallocHost(&stage, kStageBytes));
  for (std::size_t offset = 0; offset < bytes; offset += kStageBytes) {
    const std::size_t size = std::min(kStageBytes, bytes - offset);
    KIT_CUDA_CHECK(cudaMemcpy(stage, static_cast<const char*>(device) + offset, size,
                              cudaMemcpyDeviceToHost));
    if (!visit(stage, offset, size)) return;
  }
}
}  // namespace detail

}  // namespace kit
