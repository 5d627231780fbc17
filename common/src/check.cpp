#include "kit/check.h"

#include <cstring>
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
DeviceAllocator set_device_allocator(DeviceAllocator a) { return std::exchange(allocator, a); }
}  // namespace detail

}  // namespace kit
