// The CUDA driver's virtual memory functions, as the judge and the worker use them to share device
// buffers (kit/remote.h): the judge allocates each buffer so that it can be exported as a file
// descriptor, sends the descriptor over the worker's socket, and the worker maps the same memory.
// Unlike cudaIpcOpenMemHandle, this needs no ptrace-level access from the worker to the judge, so
// the worker can be confined (Landlock) and the judge can refuse such access altogether.
//
// The functions are taken from the driver through the runtime: linking libcuda itself would stop
// a binary from starting on a machine without a driver.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace kit::vmm {

template <class Fn>
Fn entry(const char* name) {
  void* found = nullptr;
  cudaDriverEntryPointQueryResult status{};
#if CUDART_VERSION >= 12050
  const cudaError_t e =
      cudaGetDriverEntryPointByVersion(name, &found, 12000, cudaEnableDefault, &status);
#else
  const cudaError_t e = cudaGetDriverEntryPoint(name, &found, cudaEnableDefault, &status);
#endif
  if (e != cudaSuccess || status != cudaDriverEntryPointSuccess || found == nullptr) {
    cudaGetLastError();
    throw std::runtime_error(std::string("kit: the CUDA driver does not provide ") + name);
  }
  return reinterpret_cast<Fn>(found);
}

struct Driver {
  decltype(&::cuMemGetAllocationGranularity) granularity = entry<decltype(granularity)>(
      "cuMemGetAllocationGranularity");
  decltype(&::cuMemCreate) create = entry<decltype(create)>("cuMemCreate");
  decltype(&::cuMemRelease) release = entry<decltype(release)>("cuMemRelease");
  decltype(&::cuMemAddressReserve) reserve = entry<decltype(reserve)>("cuMemAddressReserve");
  decltype(&::cuMemAddressFree) address_free = entry<decltype(address_free)>("cuMemAddressFree");
  decltype(&::cuMemMap) map = entry<decltype(map)>("cuMemMap");
  decltype(&::cuMemUnmap) unmap = entry<decltype(unmap)>("cuMemUnmap");
  decltype(&::cuMemSetAccess) set_access = entry<decltype(set_access)>("cuMemSetAccess");
  decltype(&::cuMemExportToShareableHandle) export_handle =
      entry<decltype(export_handle)>("cuMemExportToShareableHandle");
  decltype(&::cuMemImportFromShareableHandle) import_handle =
      entry<decltype(import_handle)>("cuMemImportFromShareableHandle");
};

/// The functions, looked up once (throws std::runtime_error where the driver lacks them).
inline const Driver& driver() {
  static const Driver d;
  return d;
}

/// Throws std::runtime_error naming `call` when `r` is not CUDA_SUCCESS.
inline void check(CUresult r, const char* call) {
  if (r != CUDA_SUCCESS)
    throw std::runtime_error(std::string("kit: ") + call + " failed (CUresult " +
                             std::to_string(static_cast<int>(r)) + ")");
}

/// The addresses map() reserves for `size` bytes: twice as many. Only the first half is mapped, so
/// the bytes right after a buffer belong to no allocation, whatever the driver maps next: a kernel
/// that reads or writes just past a buffer placed at the end of its allocation (kit::Placement)
/// faults, and memcheck reports it, instead of reaching another buffer unseen.
inline std::size_t reserved_span(std::size_t size) { return 2 * size; }

/// Maps `handle` (`size` bytes) at a new address, readable and writable by the current device.
inline CUdeviceptr map(CUmemGenericAllocationHandle handle, std::size_t size) {
  const Driver& d = driver();
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) throw std::runtime_error("kit: no current device");
  CUdeviceptr va = 0;
  check(d.reserve(&va, reserved_span(size), 0, 0, 0), "cuMemAddressReserve");
  if (const CUresult r = d.map(va, size, 0, handle, 0); r != CUDA_SUCCESS) {
    d.address_free(va, reserved_span(size));
    check(r, "cuMemMap");
  }
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (const CUresult r = d.set_access(va, size, &access, 1); r != CUDA_SUCCESS) {
    d.unmap(va, size);
    d.address_free(va, reserved_span(size));
    check(r, "cuMemSetAccess");
  }
  return va;
}

/// map(), except that when it fails `handle` is released before the error goes on: for a caller
/// that would own nothing then.
inline CUdeviceptr map_or_release(CUmemGenericAllocationHandle handle, std::size_t size) {
  try {
    return map(handle, size);
  } catch (...) {
    driver().release(handle);
    throw;
  }
}

/// Undoes map().
inline void unmap(CUdeviceptr va, std::size_t size) noexcept {
  const Driver& d = driver();
  d.unmap(va, size);
  d.address_free(va, reserved_span(size));
}

}  // namespace kit::vmm
