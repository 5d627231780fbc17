#include "kit/stats.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kit {

double quantile(std::vector<double> values, double q) {
  if (values.empty()) throw std::invalid_argument("quantile of an empty sample");
  std::sort(values.begin(), values.end());
  const double pos = q * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = static_cast<std::size_t>(std::ceil(pos));
  return values[lo] + (values[hi] - values[lo]) * (pos - static_cast<double>(lo));
}

Summary summarize(const std::vector<double>& values) {
  Summary s;
  s.n = values.size();
  s.min = quantile(values, 0.0);
  s.q1 = quantile(values, 0.25);
  s.median = quantile(values, 0.5);
  s.q3 = quantile(values, 0.75);
  s.max = quantile(values, 1.0);
  return s;
}

MedianInterval median_interval(std::vector<double> values, double confidence) {
  MedianInterval result;
  const std::size_t n = values.size();
  if (n == 0) return result;
  std::sort(values.begin(), values.end());
  // P(B <= j) for B ~ Binomial(n, 1/2), term by term in logs so that large n does not underflow.
  const double log_half_n = static_cast<double>(n) * std::log(0.5);
  const double log_n_fact = std::lgamma(static_cast<double>(n) + 1.0);
  double below = 0.0;  // P(B <= k - 1)
  for (std::size_t k = 1; 2 * k <= n + 1; ++k) {
    const double j = static_cast<double>(k - 1);
    below += std::exp(log_n_fact - std::lgamma(j + 1.0) -
                      std::lgamma(static_cast<double>(n) - j + 1.0) + log_half_n);
    const double coverage = 1.0 - 2.0 * below;
    if (coverage < confidence) break;
    result.lo_rank = k;
    result.hi_rank = n + 1 - k;
    result.coverage = coverage;
  }
  if (result.bounded()) {
    result.lo = values[result.lo_rank - 1];
    result.hi = values[result.hi_rank - 1];
  }
  return result;
}

Decision decide(const Summary& ratios, double threshold, double max_spread) {
  if (ratios.q1 >= threshold) return Decision::pass;
  if (ratios.q3 < threshold) return Decision::fail;
  if (ratios.spread() <= max_spread)
    return ratios.median >= threshold ? Decision::pass : Decision::fail;
  return Decision::undecided;
}

}  // namespace kit
