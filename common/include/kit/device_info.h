/// @file device_info.h
/// @brief What GPU a result was measured on: recorded with every performance result.
#pragma once

#include <cstddef>
#include <string>

namespace kit {

/// The reason of a machine without a CUDA device, and the start of the reason without an NVIDIA
/// driver ("no CUDA device (no NVIDIA driver found)"). A GPU test without a usable device records
/// exactly this text as its not-run reason, whatever the device's own reason: the runner
/// (grader/kitgrade/model.py, NO_DEVICE_REASON) compares it to excuse such tests.
inline constexpr char kNoDeviceReason[] = "no CUDA device";

/// The start of the "not_run" reason of a GPU test that needs more device memory than this GPU has
/// free (lab 02's 32 GiB): excused like kNoDeviceReason, and it does not hold back the perf tests
/// (kitgrade/model.py, NO_MEMORY_REASON).
inline constexpr char kNoMemoryReason[] = "too little GPU memory";

/// The GPU (or the reason there is none).
struct DeviceInfo {
  bool available = false;
  /// Why no device is usable, when !available: "no CUDA device", "no CUDA device (no NVIDIA driver
  /// found)", a driver older than the kit's CUDA runtime with both versions named, or the
  /// runtime's own message for anything else.
  std::string reason;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sms = 0;
  int l2_bytes = 0;
  int max_sm_clock_mhz = 0;
  int max_mem_clock_mhz = 0;
  int memory_bus_bits = 0;
  int copy_engines = 0;            ///< asynchronous copy engines (concurrent H2D and D2H copies)
  int current_sm_clock_mhz = -1;   ///< from NVML when the driver's library is present, else -1
  std::size_t global_mem_bytes = 0;
  std::string pci_bus_id;  ///< "00000000:19:00.0": names the GPU's lock file (kitgrade.gpu_lock)
};

/// Queries device `device`. Never throws: a machine without a GPU or driver gives
/// `available == false` and the explanation in `reason`.
DeviceInfo query_device(int device = 0);

/// One JSON object (the grader's `--kit_device` output).
std::string to_json(const DeviceInfo& info);

/// "NVIDIA H100 80GB HBM3, sm_90, 132 SMs, SM clock 1755/1980 MHz, memory clock 2619 MHz"; without
/// a usable device, the reason, starting "no CUDA device".
std::string summary(const DeviceInfo& info);

}  // namespace kit
