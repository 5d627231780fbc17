/// @file stats.h
/// @brief Medians, quartiles, a confidence interval for the median and the pass/fail/measure-again
/// decision for a ratio threshold.
#pragma once

#include <cstddef>
#include <limits>
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

/// A confidence interval for the median of the distribution a sample was drawn from: two order
/// statistics of the sample, [x(k), x(n+1-k)] (1-based ranks, sorted ascending).
struct MedianInterval {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  std::size_t lo_rank = 0, hi_rank = 0;  ///< k and n+1-k; both 0 when the interval is unbounded
  double coverage = 1.0;                 ///< P(lo <= median <= hi), at least the confidence asked
  /// False when the sample is too small for any pair of order statistics to reach the confidence
  /// (fewer than 6 values for 95%): then the interval is the whole line.
  bool bounded() const { return lo_rank != 0; }
};

/// Distribution-free confidence interval for the median, from order statistics. For independent
/// values from any continuous distribution, the count of values below its median is
/// Binomial(n, 1/2), so P(x(k) <= median <= x(n+1-k)) = 1 - 2 P(Binomial(n, 1/2) <= k-1); ties
/// only make the interval more conservative. Returns the narrowest such interval (largest k) whose
/// coverage is at least `confidence`: for n = 7 at 0.95 that is [min, max] (coverage
/// 1 - 2/128 = 98.4%); for n = 21, [x(6), x(16)] (97.3%), which are the quartiles summarize()
/// reports. Unbounded (see bounded()) when even [min, max] falls short or `values` is empty.
MedianInterval median_interval(std::vector<double> values, double confidence);

/// Verdict on "ratio >= threshold" from a sample of ratios.
enum class Decision { pass, fail, undecided };

/// pass when even the lower quartile clears the threshold, fail when even the upper quartile misses
/// it; otherwise decide by the median if the spread is at most `max_spread`, else `undecided`
/// (measure again rather than fail on noise).
Decision decide(const Summary& ratios, double threshold, double max_spread);

}  // namespace kit
