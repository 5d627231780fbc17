#include "kit/device_info.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <sstream>

namespace kit {
namespace {

// The current SM clock from NVML, loaded at run time: linking NVML would make every grader fail to
// start on a machine without the NVIDIA driver, where host-side checks must still run.
int current_sm_clock_mhz(int device) {
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!nvml) return -1;
  using InitFn = int (*)();
  using HandleFn = int (*)(const char*, void**);
  using ClockFn = int (*)(void*, int, unsigned*);
  auto init = reinterpret_cast<InitFn>(dlsym(nvml, "nvmlInit_v2"));
  auto handle_by_bus = reinterpret_cast<HandleFn>(dlsym(nvml, "nvmlDeviceGetHandleByPciBusId_v2"));
  auto clock_info = reinterpret_cast<ClockFn>(dlsym(nvml, "nvmlDeviceGetClockInfo"));
  int mhz = -1;
  char bus_id[32] = {};
  void* handle = nullptr;
  unsigned value = 0;
  constexpr int kNvmlClockSm = 1;
  if (init && handle_by_bus && clock_info && init() == 0 &&
      cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device) == cudaSuccess &&
      handle_by_bus(bus_id, &handle) == 0 && clock_info(handle, kNvmlClockSm, &value) == 0)
    mhz = static_cast<int>(value);
  dlclose(nvml);
  return mhz;
}

// "12.2" from a CUDA version number such as 12020 (cudaDriverGetVersion, cudaRuntimeGetVersion).
std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// Why the runtime found no usable device, in words that say what to do. Without the NVIDIA driver
// the runtime reports "CUDA driver version is insufficient for CUDA runtime version", which sends
// a student to update a driver they do not have; with a driver older than the kit's toolkit, the
// same error, which names neither version.
std::string no_device_reason(cudaError_t status) {
  int driver = 0, runtime = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
  if (status == cudaSuccess || status == cudaErrorNoDevice) return kNoDeviceReason;
  if (driver == 0) return std::string(kNoDeviceReason) + " (no NVIDIA driver found)";
  if (status == cudaErrorInsufficientDriver && runtime > driver) {
    const std::string have = cuda_version_text(driver), built = cuda_version_text(runtime);
    return "the NVIDIA driver supports CUDA " + have + " but the kit was built with CUDA " + built +
           ": update the driver, or build with a toolkit no newer than " + have;
  }
  return cudaGetErrorString(status);
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out;
}

}  // namespace

DeviceInfo query_device(int device) {
  DeviceInfo info;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count <= device) {
    info.reason = no_device_reason(status);
    cudaGetLastError();  // clear, so later checks do not inherit this error
    return info;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    info.reason = "cudaGetDeviceProperties failed";
    cudaGetLastError();
    return info;
  }
  auto attribute = [device](cudaDeviceAttr attr) {
    int value = 0;
    cudaDeviceGetAttribute(&value, attr, device);
    return value;
  };
  info.available = true;
  info.name = prop.name;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.sms = prop.multiProcessorCount;
  info.l2_bytes = prop.l2CacheSize;
  info.max_sm_clock_mhz = attribute(cudaDevAttrClockRate) / 1000;
  info.max_mem_clock_mhz = attribute(cudaDevAttrMemoryClockRate) / 1000;
  info.memory_bus_bits = attribute(cudaDevAttrGlobalMemoryBusWidth);
  info.copy_engines = attribute(cudaDevAttrAsyncEngineCount);
  char bus_id[32] = {};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device) == cudaSuccess) info.pci_bus_id = bus_id;
  info.global_mem_bytes = prop.totalGlobalMem;
  info.current_sm_clock_mhz = current_sm_clock_mhz(device);
  return info;
}

std::string to_json(const DeviceInfo& info) {
  std::ostringstream out;
  if (!info.available) {
    out << R"({"available": false, "reason": ")" << json_escape(info.reason) << R"("})";
    return out.str();
  }
  out << R"({"available": true, "name": ")" << json_escape(info.name) << R"(", "cc": ")"
      << info.cc_major << "." << info.cc_minor << R"(", "sms": )" << info.sms
      << R"(, "l2_bytes": )" << info.l2_bytes << R"(, "sm_clock_mhz": )" << info.max_sm_clock_mhz
      << R"(, "mem_clock_mhz": )" << info.max_mem_clock_mhz << R"(, "memory_bus_bits": )"
      << info.memory_bus_bits << R"(, "copy_engines": )" << info.copy_engines
      << R"(, "current_sm_clock_mhz": )" << info.current_sm_clock_mhz << R"(, "global_mem_bytes": )"
      << info.global_mem_bytes << R"(, "pci_bus_id": ")" << json_escape(info.pci_bus_id) << R"("})";
  return out.str();
}

std::string summary(const DeviceInfo& info) {
  if (!info.available) {
    if (info.reason.rfind(kNoDeviceReason, 0) == 0) return info.reason;  // says it already
    return std::string(kNoDeviceReason) + " (" + info.reason + ")";
  }
  std::ostringstream out;
  out << info.name << ", sm_" << info.cc_major << info.cc_minor << ", " << info.sms
      << " SMs, SM clock ";
  if (info.current_sm_clock_mhz > 0) out << info.current_sm_clock_mhz << "/";
  out << info.max_sm_clock_mhz << " MHz, memory clock " << info.max_mem_clock_mhz << " MHz";
  return out.str();
}

}  // namespace kit
