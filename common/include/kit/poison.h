/// @file poison.h
/// @brief Bit patterns that mark "never written" output and the guard regions around it.
///
/// Outputs are filled with a poison pattern before a kernel runs, so an element the kernel forgot
/// to write still holds it afterwards and is reported as "never written" (comparing against zeros
/// would hide that). Guard regions before and after the output hold a second pattern; a write past
/// either end of the array changes it and is reported with its offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace kit {

/// Poison and guard patterns for element type T. A float poison is a NaN with a payload no
/// arithmetic produces (computed NaNs carry the canonical payload), so it cannot be written by
/// accident; for integers the patterns are values no lab produces.
template <class T>
struct Patterns;

template <>
struct Patterns<float> {
  static constexpr std::uint32_t poison_bits = 0xFFC0FFEEu;  ///< quiet NaN, payload 0x40FFEE
  static constexpr std::uint32_t guard_bits = 0xFFBADBADu;   ///< signalling NaN, payload 0x3ADBAD
};
template <>
struct Patterns<double> {
  static constexpr std::uint64_t poison_bits = 0xFFF8C0FFEEC0FFEEull;
  static constexpr std::uint64_t guard_bits = 0xFFF0BADBADBADBADull;
};
template <>
struct Patterns<int> {
  static constexpr std::uint32_t poison_bits = 0x7EADBEEFu;
  static constexpr std::uint32_t guard_bits = 0x5AFE5AFEu;
};
template <>
struct Patterns<unsigned> {
  static constexpr std::uint32_t poison_bits = 0xDEADBEEFu;
  static constexpr std::uint32_t guard_bits = 0x5AFE5AFEu;
};
template <>
struct Patterns<long long> {
  static constexpr std::uint64_t poison_bits = 0x7EADBEEF7EADBEEFull;
  static constexpr std::uint64_t guard_bits = 0x5AFE5AFE5AFE5AFEull;
};

/// The value with the bit pattern `bits`.
template <class T, class Bits>
T from_bits(Bits bits) {
  static_assert(sizeof(T) == sizeof(Bits), "pattern width must match the element type");
  T value;
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}

/// True when `a` and `b` have identical bit patterns (NaN-safe, unlike `==`).
template <class T>
bool same_bits(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

/// The "never written" marker for T.
template <class T>
T poison_value() {
  return from_bits<T>(Patterns<T>::poison_bits);
}

/// The guard-region marker for T.
template <class T>
T guard_value() {
  return from_bits<T>(Patterns<T>::guard_bits);
}

/// True when `value` still holds the poison pattern, i.e. nothing wrote it.
template <class T>
bool is_poison(const T& value) {
  return same_bits(value, poison_value<T>());
}

/// One guard element that no longer holds the guard pattern. `offset` is relative to element 0 of
/// the output: negative before it, >= n after it.
struct GuardHit {
  long long offset;
};

/// Scans the guard regions read back from the device and returns the offsets that were written.
/// `before` ends just before element 0; `after` starts at element n.
template <class T>
std::vector<GuardHit> find_guard_writes(const std::vector<T>& before, const std::vector<T>& after,
                                        std::size_t n) {
  std::vector<GuardHit> hits;
  const T guard = guard_value<T>();
  const auto guard_len = static_cast<long long>(before.size());
  for (std::size_t i = 0; i < before.size(); ++i)
    if (!same_bits(before[i], guard)) hits.push_back({static_cast<long long>(i) - guard_len});
  for (std::size_t i = 0; i < after.size(); ++i)
    if (!same_bits(after[i], guard)) hits.push_back({static_cast<long long>(n + i)});
  return hits;
}

/// Human-readable description of guard writes, e.g. "wrote 2 elements outside the output
/// (n = 1000): offsets -1 (1 before element 0), 1000 (1 past the end)".
std::string describe_guard_writes(const std::vector<GuardHit>& hits, std::size_t n,
                                  std::size_t max_listed = 5);

}  // namespace kit
