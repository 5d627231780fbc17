/// @file diagnose.h
/// @brief The likely mistake behind a failed output check, named from the pattern of wrong elements.
///
/// A mismatch report says which elements are wrong; a student then has to guess why. Most wrong
/// kernels of these labs leave one of a few patterns, and each has a usual cause: only block 0's
/// elements right (the index lacks blockIdx), the tail never written (the grid rounded down),
/// every value one place over (an index off by one), the transposed position's value (rows and
/// columns swapped), the row stride of the other extent, elements never written, NaN. Each rule
/// below looks for one pattern over the whole output and, when it holds, gives one line that names
/// the likely mistake; the first rule that holds wins. No rule holds for a pattern it does not
/// recognise: then nothing is said rather than a guess.
///
/// A race (wrong elements that change between two runs of the same input) needs two runs: a test
/// whose output check failed runs the kernel again and asks race_note() (below).
#pragma once

#include <cmath>
#include <cstring>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "kit/compare.h"
#include "kit/launch.h"
#include "kit/poison.h"

namespace kit {

namespace detail {

/// What the rules see of one output: expected and actual values, which elements are wrong (by the
/// check's tolerance) and which still hold the poison pattern.
struct Pattern {
  std::vector<double> expected, got;
  std::vector<char> wrong, unwritten;
  std::size_t wrong_count = 0, unwritten_count = 0, nan_count = 0;
  Tolerance tol;
  bool close(double want, double value) const { return !outside_tolerance(want, value, tol); }
};

std::string diagnose(const Pattern& p, const Shape& shape, const Launch* launch);

/// For a 2D output: a map of at most 8 x 32 cells, each a block of elements: '.' none wrong,
/// '+' some wrong, '#' all wrong; "" for other shapes or when nothing is wrong.
std::string wrong_map(const Pattern& p, const Shape& shape);

/// The race note's lines for `differ` of `size` elements that changed between two runs ("" when
/// none did).
std::string race_line(std::size_t differ, std::size_t size);

}  // namespace detail

/// Outputs larger than this many elements are not diagnosed.
inline constexpr std::size_t kMaxDiagnosed = std::size_t{1} << 24;

/// What the rules see of `got` against `expected`: which elements are wrong by `tol`, which were
/// never written, which are NaN.
template <class T>
detail::Pattern pattern_of(const std::vector<T>& expected, const std::vector<T>& got,
                           const Tolerance& tol) {
  detail::Pattern p;
  p.tol = tol;
  const std::size_t n = expected.size();
  p.expected.resize(n);
  p.got.resize(n);
  p.wrong.assign(n, 0);
  p.unwritten.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    p.expected[i] = static_cast<double>(expected[i]);
    p.got[i] = static_cast<double>(got[i]);
    const bool poisoned = is_poison(got[i]);
    const bool nan = !poisoned && std::isnan(p.got[i]) && !std::isnan(p.expected[i]);
    const bool bad = poisoned || outside_tolerance(p.expected[i], p.got[i], tol);
    p.wrong[i] = bad;
    p.unwritten[i] = poisoned;
    p.wrong_count += bad;
    p.unwritten_count += poisoned;
    p.nan_count += nan;
  }
  return p;
}

/// The pattern of a failed comparison, or nothing when every element is right or the output is
/// not diagnosed: the rules read the whole output as doubles, so outputs of perf tests' size
/// are left to the report (the same mistake shows at the correctness tests' sizes).
template <class T>
std::optional<detail::Pattern> failed_pattern(const std::vector<T>& expected,
                                              const std::vector<T>& got, const Tolerance& tol) {
  if (expected.size() != got.size() || expected.empty() || expected.size() > kMaxDiagnosed)
    return std::nullopt;
  detail::Pattern p = pattern_of(expected, got, tol);
  if (p.wrong_count == 0) return std::nullopt;
  return p;
}

/// One line naming the likely mistake behind the wrong elements of `got` (by `tol`), or "" when
/// no rule recognises the pattern (or nothing is wrong). `launch` (may be null) lets the rules
/// speak of blocks and of the grid.
template <class T>
std::string diagnose_mismatches(const std::vector<T>& expected, const std::vector<T>& got,
                                const Tolerance& tol, const Shape& shape, const Launch* launch) {
  const auto p = failed_pattern(expected, got, tol);
  return p ? detail::diagnose(*p, shape, launch) : "";
}

/// `text` broken into lines of at most `width` characters, each after `indent` (the diagnosis
/// line in a report that fits 80 columns).
std::string wrap_text(const std::string& text, std::size_t width, const std::string& indent);

/// The report's "likely: ..." lines (80 columns; none when no rule recognises the pattern), and
/// for a 2D output the map of where the wrong elements are.
template <class T>
std::string likely_mistake(const std::vector<T>& expected, const std::vector<T>& got,
                           const Tolerance& tol, const Shape& shape, const Launch* launch) {
  const auto p = failed_pattern(expected, got, tol);
  if (!p) return "";
  const std::string line = detail::diagnose(*p, shape, launch);
  return (line.empty() ? "" : wrap_text("likely: " + line, 80, "  ")) +
         detail::wrong_map(*p, shape);
}

/// The "likely:" lines for a race: `first` is the output of a failed check, `again` the output of
/// another run of the same kernel on the same inputs. When they differ (bit for bit; NaN equals
/// NaN), the wrong elements change from run to run, which a deterministic mistake cannot do: the
/// usual cause in these labs is a missing barrier. "" when they agree.
template <class T>
std::string race_note(const std::vector<T>& first, const std::vector<T>& again) {
  if (first.size() != again.size()) return "";
  std::size_t differ = 0;
  for (std::size_t i = 0; i < first.size(); ++i) {
    const bool both_nan = std::isnan(double(first[i])) && std::isnan(double(again[i]));
    differ += !both_nan && std::memcmp(&first[i], &again[i], sizeof(T)) != 0;
  }
  return detail::race_line(differ, first.size());
}

/// race_note for a failed check of `first`: `again()` runs the same kernel on the same inputs into
/// a fresh output and returns it; up to `tries` runs, the first that differs is named.
template <class T, class Again>
std::string race_check(const std::vector<T>& first, Again&& again, int tries = 2) {
  for (int i = 0; i < tries; ++i) {
    std::string note = race_note(first, again());
    if (!note.empty()) return note;
  }
  return "";
}

}  // namespace kit
