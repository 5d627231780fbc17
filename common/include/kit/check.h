/// @file check.h
/// @brief The kit's one CUDA error check: it names the failing call, file and line, and throws.
///
/// Throwing (rather than `exit()`) lets a grader record the failure as that test's verdict and keep
/// grading the others; RAII buffers release their memory while the exception unwinds. Every
/// student file includes it, so it stays light: what only graders need lives elsewhere
/// (kit/staged.h; `<functional>` here cost 0.75 s of a 2.4 s compile of lab 01's student file).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace kit {

/// A CUDA runtime call failed. `what()` reads like
/// `cudaMalloc(&ptr, bytes) failed: out of memory (cudaErrorMemoryAllocation) at buffers.h:41`.
class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  /// The CUDA error code that was returned.
  cudaError_t code() const noexcept { return code_; }

 private:
  cudaError_t code_;
};

/// Builds and throws the CudaError for a failed call; used by the macros below.
[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line);

/// Throws CudaError for a kernel launch that failed (`what` names the kernel).
[[noreturn]] void throw_launch_error(cudaError_t code, const char* kernel, const char* file, int line);

namespace detail {
/// Where DeviceBuffer gets its memory. By default cudaMalloc and cudaFree; a judge (kit/remote.h)
/// installs its own, whose memory it can hand to the worker process as a file descriptor.
struct DeviceAllocator {
  void* (*allocate)(std::size_t bytes);  ///< throws CudaError when it cannot
  void (*release)(void* p) noexcept;
  /// The bytes an allocation of `bytes` really spans, as the hardware and compute-sanitizer see
  /// it: `bytes` for cudaMalloc (memcheck knows the size asked for), whole pages for a judge's.
  std::size_t (*extent)(std::size_t bytes);
  /// Lets memory released here go back to the GPU for good (nullptr: it already has): a judge's
  /// worker keeps what the judge freed mapped until the next call, so without this a free-memory
  /// query right after a large test still counts that test's buffers as used.
  void (*settle)() = nullptr;
};
void* device_allocate(std::size_t bytes);
void device_release(void* p) noexcept;
std::size_t device_extent(std::size_t bytes);
/// The allocator's settle(), when it has one.
void device_settle();
/// Installs `allocator` and returns the one it replaces.
DeviceAllocator set_device_allocator(DeviceAllocator allocator);
/// Sets `count` 32-bit words of device memory from `p` on to `bits`, on the device (the driver's
/// cuMemsetD32) on the default stream, and returns once that stream has written them: a poison
/// fill of hundreds of MiB without a host copy of it, ordered as a cudaMemcpy would be.
void fill_device_words(void* p, std::uint32_t bits, std::size_t count);
}  // namespace detail

}  // namespace kit

/// Checks the cudaError_t returned by `call`; on failure throws kit::CudaError naming the call.
#define KIT_CUDA_CHECK(call)                                               \
  do {                                                                     \
    const cudaError_t kit_status_ = (call);                                \
    if (kit_status_ != cudaSuccess)                                        \
      ::kit::throw_cuda_error(kit_status_, #call, __FILE__, __LINE__);     \
  } while (0)

/// Checks that the kernel launch just made was accepted (grid and block shape, resources).
/// A kernel launch returns nothing, so the error sits in cudaGetLastError() until read.
#define KIT_CHECK_LAUNCH(kernel_name)                                      \
  do {                                                                     \
    const cudaError_t kit_status_ = cudaGetLastError();                    \
    if (kit_status_ != cudaSuccess)                                        \
      ::kit::throw_launch_error(kit_status_, kernel_name, __FILE__, __LINE__); \
  } while (0)
