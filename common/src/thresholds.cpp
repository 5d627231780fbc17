#include "kit/thresholds.h"

#include "kit/device_info.h"

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

ThresholdTable parse_threshold_table(std::istream& in, const std::string& source) {
  ThresholdTable table;
  std::string section;  // "" until the first header
  auto* current = &table.sections[section];
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string where = source + ":" + std::to_string(number);
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    const auto last = line.find_last_not_of(" \t\r");
    if (line[first] == '[') {
      if (line[last] != ']' || last - first < 2)
        throw ConfigError(where + ": expected a section header '[GPU name]' or '[sm_XY]'");
      section = line.substr(first + 1, last - first - 1);
      if (table.sections.count(section))
        throw ConfigError(where + ": section [" + section + "] appears twice");
      current = &table.sections[section];
      continue;
    }
    std::istringstream words(line);
    std::string key, student, reference, floor, extra;
    words >> key;
    if (!(words >> student >> reference) || ((words >> floor) && (words >> extra)))
      throw ConfigError(where + ": expected 'key student_ratio reference_ratio [floor_ratio]'");
    if (current->count(key)) throw ConfigError(where + ": duplicate key '" + key + "'");
    if (!section.empty() && table.sections[""].count(key) == 0)
      throw ConfigError(where + ": '" + key + "' is not a key of the default section");
    ThresholdPair pair{parse_ratio(student, where), parse_ratio(reference, where)};
    if (!floor.empty()) {
      pair.floor = parse_ratio(floor, where);
      if (pair.floor >= pair.student)
        throw ConfigError(where + ": the floor " + floor + " must be below the student bar " +
                          student);
    }
    (*current)[key] = pair;
  }
  return table;
}

std::map<std::string, ThresholdPair> parse_thresholds(std::istream& in, const std::string& source) {
  return parse_threshold_table(in, source).sections[""];
}

std::string ThresholdTable::section_for(const std::string& key, const std::string& device,
                                        int cc) const {
  std::string best;
  bool found = false;
  for (const auto& [name, keys] : sections) {
    if (name.empty() || name.rfind("sm_", 0) == 0 || keys.count(key) == 0) continue;
    if (device.rfind(name, 0) == 0 && (!found || name.size() > best.size())) {
      best = name;
      found = true;
    }
  }
  if (found) return best;
  const std::string by_cc = "sm_" + std::to_string(cc);
  if (const auto it = sections.find(by_cc); it != sections.end() && it->second.count(key))
    return by_cc;
  if (const auto it = sections.find(""); it != sections.end() && it->second.count(key)) return "";
  throw ConfigError("no threshold '" + key + "'");
}

std::string thresholds_path() {
  if (const char* env = std::getenv("KIT_THRESHOLDS"); env && *env) return env;
  return KIT_DEFAULT_THRESHOLDS_FILE;
}

namespace {

const ThresholdTable& loaded_table() {
  static const ThresholdTable table = [] {
    const std::string path = thresholds_path();
    std::ifstream in(path);
    if (!in) throw ConfigError("cannot read thresholds file " + path);
    return parse_threshold_table(in, path);
  }();
  return table;
}

// The section `key` comes from on this process's GPU ("" for the default).
std::string section_here(const std::string& key) {
  static const DeviceInfo device = query_device();
  try {
    return loaded_table().section_for(key, device.name, device.cc_major * 10 + device.cc_minor);
  } catch (const ConfigError&) {
    throw ConfigError("no threshold '" + key + "' in " + thresholds_path());
  }
}

}  // namespace

double threshold_for(const std::string& key, const std::string& variant) {
  const ThresholdPair& pair = loaded_table().sections.at(section_here(key)).at(key);
  return variant == "reference" ? pair.reference : pair.student;
}

std::string threshold_section(const std::string& key) {
  const std::string section = section_here(key);
  return section.empty() ? "default" : section;
}

}  // namespace kit
