/// @file buffers.h
/// @brief RAII device, pinned-host and guarded-output buffers.
///
/// Memory is released by destructors, so a test that fails by exception leaks nothing and the next
/// test starts clean.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kit/check.h"
#include "kit/poison.h"

namespace kit {

/// Where a buffer's elements sit in their allocation. An allocation may be larger than asked for
/// (a judge's are whole pages of 2 MiB), and compute-sanitizer's memcheck reports only accesses
/// outside every allocation: past the end of data at the `start` of its allocation a kernel reads
/// the slack unseen. At the `end`, the last element ends the allocation, so the first read past it
/// leaves the allocation: memcheck reports it (and without a sanitizer it may fault). The data
/// then starts where the allocation's end allows, so its size in bytes must be a multiple of
/// kEndAlignment for it to start aligned for vector loads.
enum class Placement { start, end };

/// The alignment of data placed at the end of its allocation: a float4 or double2 load's.
constexpr std::size_t kEndAlignment = 16;

/// Device memory for `n` elements of T, freed on destruction. Move-only.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n, Placement where = Placement::start) : n_(n) {
    if (n_ == 0) return;
    const std::size_t bytes = n_ * sizeof(T);
    if (where == Placement::end && bytes % kEndAlignment != 0)
      throw std::invalid_argument("DeviceBuffer: data placed at the end of its allocation must be "
                                  "a multiple of " + std::to_string(kEndAlignment) + " bytes");
    base_ = detail::device_allocate(bytes);
    const std::size_t slack = where == Placement::end ? detail::device_extent(bytes) - bytes : 0;
    ptr_ = reinterpret_cast<T*>(static_cast<char*>(base_) + slack);
  }
  /// Allocates and uploads `host`.
  explicit DeviceBuffer(const std::vector<T>& host, Placement where = Placement::start)
      : DeviceBuffer(host.size(), where) {
    upload(host);
  }
  /// `n` elements of the judge's own, from cudaMalloc rather than the installed allocator: memory
  /// a judge (kit/remote.h) can neither hand to its worker nor have it map, since it shares only
  /// the allocator's memory. For what a check compares against (expected values, an input's
  /// original), which nothing the student's code does may reach.
  static DeviceBuffer judge_only(std::size_t n) {
    DeviceBuffer buffer;
    buffer.n_ = n;
    buffer.judge_only_ = true;
    if (n > 0) KIT_CUDA_CHECK(cudaMalloc(&buffer.base_, n * sizeof(T)));
    buffer.ptr_ = static_cast<T*>(buffer.base_);
    return buffer;
  }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)),
        base_(std::exchange(other.base_, nullptr)),
        n_(std::exchange(other.n_, 0)),
        judge_only_(std::exchange(other.judge_only_, false)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      ptr_ = std::exchange(other.ptr_, nullptr);
      base_ = std::exchange(other.base_, nullptr);
      n_ = std::exchange(other.n_, 0);
      judge_only_ = std::exchange(other.judge_only_, false);
    }
    return *this;
  }
  /// Made by judge_only().
  bool is_judge_only() const noexcept { return judge_only_; }

  T* data() noexcept { return ptr_; }
  const T* data() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return n_; }
  std::size_t bytes() const noexcept { return n_ * sizeof(T); }

  /// Copies `host` (exactly size() elements) to the device.
  void upload(const std::vector<T>& host) {
    if (host.size() != n_) throw std::invalid_argument("DeviceBuffer::upload: size mismatch");
    if (n_ > 0) KIT_CUDA_CHECK(cudaMemcpy(ptr_, host.data(), bytes(), cudaMemcpyHostToDevice));
  }
  /// Copies the whole buffer back to the host.
  std::vector<T> download() const {
    std::vector<T> host(n_);
    if (n_ > 0) KIT_CUDA_CHECK(cudaMemcpy(host.data(), ptr_, bytes(), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  void release() noexcept {
    // No throw from a destructor.
    if (judge_only_)
      cudaFree(base_);
    else
      detail::device_release(base_);
    ptr_ = nullptr;
    base_ = nullptr;
  }
  T* ptr_ = nullptr;
  void* base_ = nullptr;  ///< the allocation's start, where ptr_ is unless placed at its end
  std::size_t n_ = 0;
  bool judge_only_ = false;
};

/// Page-locked (pinned) host memory for `n` elements of T, freed on destruction. Move-only.
/// Only pinned memory lets cudaMemcpyAsync overlap with kernels.
template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t n) : n_(n) {
    if (n_ > 0) KIT_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&ptr_), n_ * sizeof(T)));
  }
  ~PinnedBuffer() {
    if (ptr_) cudaFreeHost(ptr_);
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), n_(std::exchange(other.n_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    std::swap(ptr_, other.ptr_);
    std::swap(n_, other.n_);
    return *this;
  }

  T* data() noexcept { return ptr_; }
  const T* data() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return n_; }
  T& operator[](std::size_t i) noexcept { return ptr_[i]; }
  const T& operator[](std::size_t i) const noexcept { return ptr_[i]; }

 private:
  T* ptr_ = nullptr;
  std::size_t n_ = 0;
};

/// A device output of `n` elements with guard regions before and after it.
///
/// `poison()` fills the output with the poison pattern and the guards with the guard pattern;
/// after the kernel, `guard_writes()` lists any element outside [0, n) that changed and
/// `download()` returns the output, where poison marks elements nothing wrote.
template <class T>
class GuardedBuffer {
 public:
  /// Guard elements on each side: 4 KiB of floats, which also keeps data() 256-byte aligned like
  /// a plain cudaMalloc pointer (so vectorised student code sees the alignment it expects).
  static constexpr std::size_t kGuard = 4096 / sizeof(T);

  explicit GuardedBuffer(std::size_t n) : n_(n), storage_(n + 2 * kGuard) { poison(); }

  T* data() noexcept { return storage_.data() + kGuard; }
  const T* data() const noexcept { return storage_.data() + kGuard; }
  std::size_t size() const noexcept { return n_; }

  /// Poisons the output and re-arms both guards. 32-bit elements are filled on the device
  /// (fill_device_words: no host copy of a buffer of hundreds of MiB); others from the host.
  void poison() {
    if constexpr (sizeof(T) == sizeof(std::uint32_t)) {
      T* base = storage_.data();
      detail::fill_device_words(base, Patterns<T>::guard_bits, kGuard);
      detail::fill_device_words(base + kGuard, Patterns<T>::poison_bits, n_);
      detail::fill_device_words(base + kGuard + n_, Patterns<T>::guard_bits, kGuard);
      return;
    }
    std::vector<T> fill(storage_.size(), poison_value<T>());
    for (std::size_t i = 0; i < kGuard; ++i) {
      fill[i] = guard_value<T>();
      fill[kGuard + n_ + i] = guard_value<T>();
    }
    storage_.upload(fill);
  }

  /// Reads back the output elements [0, n).
  std::vector<T> download() const {
    std::vector<T> host(n_);
    if (n_ > 0)
      KIT_CUDA_CHECK(cudaMemcpy(host.data(), storage_.data() + kGuard, n_ * sizeof(T),
                                cudaMemcpyDeviceToHost));
    return host;
  }

  /// Guard elements that were written (see find_guard_writes()).
  std::vector<GuardHit> guard_writes() const {
    std::vector<T> before(kGuard), after(kGuard);
    KIT_CUDA_CHECK(cudaMemcpy(before.data(), storage_.data(), kGuard * sizeof(T),
                              cudaMemcpyDeviceToHost));
    KIT_CUDA_CHECK(cudaMemcpy(after.data(), storage_.data() + kGuard + n_, kGuard * sizeof(T),
                              cudaMemcpyDeviceToHost));
    return find_guard_writes(before, after, n_);
  }

 private:
  std::size_t n_;
  DeviceBuffer<T> storage_;
};

}  // namespace kit
