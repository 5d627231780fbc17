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

Decision decide(const Summary& ratios, double threshold, double max_spread) {
  if (ratios.q1 >= threshold) return Decision::pass;
  if (ratios.q3 < threshold) return Decision::fail;
  if (ratios.spread() <= max_spread)
    return ratios.median >= threshold ? Decision::pass : Decision::fail;
  return Decision::undecided;
}

}  // namespace kit
