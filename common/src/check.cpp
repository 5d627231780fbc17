#include "kit/check.h"

#include <cstring>
#include <sstream>

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
void (*device_free_hook)(const void*) = nullptr;
}  // namespace

void note_device_free(const void* p) noexcept {
  if (device_free_hook != nullptr && p != nullptr) {
    try {
      device_free_hook(p);
    } catch (...) {
    }
  }
}

void set_device_free_hook(void (*hook)(const void*)) { device_free_hook = hook; }
}  // namespace detail

}  // namespace kit
