/// @file compare.h
/// @brief Element-wise comparison with a per-check tolerance whose reason is written down.
///
/// A mismatch report lists the first few wrong elements with their coordinates, the expected and
/// actual values, and the block and thread that owned them in the launch used, followed by the
/// maximum absolute and relative error over the whole output.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "kit/host_device.h"
#include "kit/launch.h"
#include "kit/parallel.h"
#include "kit/poison.h"

namespace kit {

/// |got - expected| <= abs + rel * |expected| passes. `reason` says why these numbers are right
/// for this check, and is printed with every failure.
struct Tolerance {
  double abs = 0.0;
  double rel = 0.0;
  std::string reason;

  /// Bit-for-bit equal values only (integers, or float work whose rounding is fully determined).
  static Tolerance exact(std::string why) { return {0.0, 0.0, std::move(why)}; }
};

/// One wrong element.
struct Mismatch {
  std::size_t index = 0;
  double expected = 0.0;
  double got = 0.0;
  bool unwritten = false;  ///< still held the poison pattern
};

/// Outcome of comparing a whole output.
struct Comparison {
  std::size_t count = 0;       ///< elements compared
  std::size_t mismatches = 0;  ///< elements outside the tolerance, unwritten ones included
  std::size_t unwritten = 0;   ///< elements nothing wrote
  double max_abs_error = 0.0;  ///< over written elements
  double max_rel_error = 0.0;  ///< over written elements with expected != 0
  std::vector<Mismatch> first; ///< the first few mismatches, in index order
  bool ok() const { return mismatches == 0; }
};

/// Whether a written value `got` lies outside `tol` of `expected`: NaN where a number was
/// expected (or the reverse), or |got - expected| > abs + rel * |expected|. The one rule every
/// check and the diagnosis (kit/diagnose.h) use; unwritten (poisoned) elements are the caller's.
/// The same rule on the device too (kit/device_check.h compares large outputs there).
KIT_HOST_DEVICE inline bool outside_tolerance(double expected, double got, double abs, double rel) {
#ifdef __CUDA_ARCH__
  return isnan(got) != isnan(expected) || fabs(got - expected) > abs + rel * fabs(expected);
#else
  return std::isnan(got) != std::isnan(expected) ||
         std::fabs(got - expected) > abs + rel * std::fabs(expected);
#endif
}
inline bool outside_tolerance(double expected, double got, const Tolerance& tol) {
  return outside_tolerance(expected, got, tol.abs, tol.rel);
}

namespace detail {
/// compare_values() over elements [begin, end) only.
template <class T>
Comparison compare_range(const T* expected, const T* got, std::size_t begin, std::size_t end,
                         const Tolerance& tol, std::size_t keep) {
  Comparison result;
  result.count = end - begin;
  for (std::size_t i = begin; i < end; ++i) {
    const bool unwritten = is_poison(got[i]);
    const double e = static_cast<double>(expected[i]);
    const double g = static_cast<double>(got[i]);
    bool bad = unwritten;
    if (!unwritten) {
      const double err = std::fabs(g - e);
      bad = outside_tolerance(e, g, tol);
      if (!std::isnan(err)) {
        if (err > result.max_abs_error) result.max_abs_error = err;
        if (e != 0.0 && err / std::fabs(e) > result.max_rel_error)
          result.max_rel_error = err / std::fabs(e);
      } else {
        result.max_abs_error = result.max_rel_error = NAN;
      }
    }
    if (!bad) continue;
    ++result.mismatches;
    if (unwritten) ++result.unwritten;
    if (result.first.size() < keep) result.first.push_back({i, e, g, unwritten});
  }
  return result;
}

/// The larger error; NaN once either is NaN (as one loop over both ranges keeps it).
inline double max_error(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
}
}  // namespace detail

/// Compares `got` with `expected` element by element; keeps the first `keep` mismatches. Large
/// outputs are compared in parts on several cores (kit/parallel.h), with the same result.
template <class T>
Comparison compare_values(const std::vector<T>& expected, const std::vector<T>& got,
                          const Tolerance& tol, std::size_t keep = 5) {
  if (got.size() != expected.size()) {
    Comparison result;
    result.count = expected.size();
    result.mismatches = expected.size() > got.size() ? expected.size() - got.size() : 1;
    return result;
  }
  const std::size_t n = expected.size(), parts = part_count(n);
  std::vector<Comparison> part(parts);
  parallel_parts(n, parts, [&](std::size_t k, std::size_t begin, std::size_t end) {
    part[k] = detail::compare_range(expected.data(), got.data(), begin, end, tol, keep);
  });
  Comparison result = std::move(part[0]);
  for (std::size_t k = 1; k < parts; ++k) {
    result.count += part[k].count;
    result.mismatches += part[k].mismatches;
    result.unwritten += part[k].unwritten;
    result.max_abs_error = detail::max_error(result.max_abs_error, part[k].max_abs_error);
    result.max_rel_error = detail::max_error(result.max_rel_error, part[k].max_rel_error);
    for (const Mismatch& m : part[k].first)
      if (result.first.size() < keep) result.first.push_back(m);
  }
  return result;
}

/// Multi-line report of a failed comparison of output `what`: counts, the first mismatches with
/// coordinates and owning thread under `launch` (pass nullptr when the launch is unknown), the
/// maximum errors, and the tolerance with its reason.
std::string describe_mismatches(const std::string& what, const Comparison& cmp, const Tolerance& tol,
                                const Shape& shape, const Launch* launch);

}  // namespace kit
