/// @file staged.h
/// @brief Reading a large device array through one pinned buffer, chunk by chunk (the graders'
/// side: student code does not need it, and check.h, which student code includes, stays free of
/// `<functional>`: 0.75 of a 2.4 s compile of lab 01's student file).
#pragma once

#include <cstddef>
#include <functional>

namespace kit::detail {

/// Copies `bytes` of device memory from `device` to the host in chunks through one pinned buffer
/// of the process (kStageBytes, made on first use), and hands each chunk to `visit` (the chunk,
/// its offset in bytes, its size in bytes) until `visit` returns false: a large output read at
/// the speed of pinned memory, without a host copy of all of it. One caller at a time.
void download_staged(const void* device, std::size_t bytes,
                     const std::function<bool(const void*, std::size_t, std::size_t)>& visit);
inline constexpr std::size_t kStageBytes = std::size_t{32} << 20;

}  // namespace kit::detail
