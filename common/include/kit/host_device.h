/// @file host_device.h
/// @brief KIT_HOST_DEVICE: a function the host compiler and the device compiler both build (a rule
/// the judge applies on the CPU and, for large arrays, on the GPU: kit/device_check.h).
#pragma once

#ifdef __CUDACC__
#define KIT_HOST_DEVICE __host__ __device__
#else
#define KIT_HOST_DEVICE
#endif
