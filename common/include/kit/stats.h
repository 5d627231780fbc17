/// @file stats.h
/// @brief Medians, quartiles and the pass/fail/measure-again decision for a ratio threshold.
#pragma once

#include <cstddef>
#include <vector>

namespace kit {

/// Order statistics of a sample.
struct Summary {
  std::size_t n = 0;
  double min = 0, q1 = 0, median = 0, q3 = 0, max = 0;
  /// Interquartile range relative to the median: how much the measurements disagree.
  double spread() const { return median != 0 ? (q3 - q1) / median : 0.0; }
};

/// Quantile q in [0, 1] with linear interpolation between order statistics.
double quantile(std::vector<double> values, double q);

/// n, min, quartiles and max of `values` (which must not be empty).
Summary summarize(const std::vector<double>& values);

/// Verdict on "ratio >= threshold" from a sample of ratios.
enum class Decision { pass, fail, undecided };

/// pass when even the lower quartile clears the threshold, fail when even the upper quartile misses
/// it; otherwise decide by the median if the spread is at most `max_spread`, else `undecided`
/// (measure again rather than fail on noise).
Decision decide(const Summary& ratios, double threshold, double max_spread);

}  // namespace kit
