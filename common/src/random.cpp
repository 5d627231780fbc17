#include "kit/random.h"

#include "kit/parallel.h"
#include "kit/timing.h"

#include <cstdlib>
#include <random>
#include <stdexcept>

namespace kit {

std::uint64_t parse_seed(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 19)
    throw std::invalid_argument("KIT_SEED must be a non-negative decimal number, got '" + text + "'");
  return std::stoull(text);
}

std::uint64_t run_seed() {
  static const std::uint64_t seed = []() -> std::uint64_t {
    if (const char* env = std::getenv("KIT_SEED")) return parse_seed(env);
    std::random_device device;
    return (static_cast<std::uint64_t>(device()) << 32 | device()) % 4294967296ull;
  }();
  return seed;
}

std::string seed_note() {
  const std::string s = std::to_string(run_seed());
  return "seed " + s + " (rerun with KIT_SEED=" + s + ")";
}

Random Random::for_name(const std::string& name) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a: a stable hash, unlike std::hash
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return Random(run_seed() ^ h);
}

template <class T, class Draw>
void Random::fill(std::vector<T>& values, const Draw& draw) {
  const std::size_t n = values.size();
  const std::uint64_t base = advance(n);
  parallel_parts(n, part_count(n), [&](std::size_t, std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) values[i] = draw(value_after(base, i + 1));
  });
}

std::vector<float> Random::floats(std::size_t n, float lo, float hi) {
  std::vector<float> values(n);
  fill(values, [=](std::uint64_t bits) { return to_uniform(bits, lo, hi); });
  if (n >= kMinElementsPerPart) trace("drew " + std::to_string(n) + " floats");
  return values;
}

std::vector<int> Random::ints(std::size_t n, int lo, int hi) {
  std::vector<int> values(n);
  fill(values, [=](std::uint64_t bits) { return static_cast<int>(to_int(bits, lo, hi)); });
  return values;
}

}  // namespace kit
