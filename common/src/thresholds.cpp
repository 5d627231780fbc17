#include "kit/thresholds.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#ifndef KIT_DEFAULT_THRESHOLDS_FILE
#error "KIT_DEFAULT_THRESHOLDS_FILE must name grader/thresholds.conf"
#endif

namespace kit {
namespace {

double parse_ratio(const std::string& word, const std::string& where) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(word, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != word.size() || !(value > 0) || value > 1000)
    throw ConfigError(where + ": '" + word + "' is not a positive ratio");
  return value;
}

std::string& variant_storage() {
  static std::string variant = "student";
  return variant;
}

}  // namespace

void set_build_variant(const std::string& variant) { variant_storage() = variant; }

const std::string& build_variant() { return variant_storage(); }

double threshold(const std::string& key) { return threshold_for(key, build_variant()); }

std::map<std::string, ThresholdPair> parse_thresholds(std::istream& in, const std::string& source) {
  std::map<std::string, ThresholdPair> table;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string where = source + ":" + std::to_string(number);
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    std::string key, student, reference, extra;
    if (!(words >> key)) continue;
    if (!(words >> student >> reference) || (words >> extra))
      throw ConfigError(where + ": expected 'key student_ratio reference_ratio'");
    if (table.count(key)) throw ConfigError(where + ": duplicate key '" + key + "'");
    table[key] = {parse_ratio(student, where), parse_ratio(reference, where)};
  }
  return table;
}

std::string thresholds_path() {
  if (const char* env = std::getenv("KIT_THRESHOLDS"); env && *env) return env;
  return KIT_DEFAULT_THRESHOLDS_FILE;
}

double threshold_for(const std::string& key, const std::string& variant) {
  static const std::map<std::string, ThresholdPair> table = [] {
    const std::string path = thresholds_path();
    std::ifstream in(path);
    if (!in) throw ConfigError("cannot read thresholds file " + path);
    return parse_thresholds(in, path);
  }();
  const auto it = table.find(key);
  if (it == table.end())
    throw ConfigError("no threshold '" + key + "' in " + thresholds_path());
  return variant == "reference" ? it->second.reference : it->second.student;
}

}  // namespace kit
