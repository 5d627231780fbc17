/// @file thresholds.h
/// @brief Performance thresholds, read from the one file an instructor edits.
///
/// grader/thresholds.conf holds one line per threshold: a key, the ratio a student's code must
/// reach, and the stricter ratio the reference solution must reach (the kit's own check that the
/// threshold leaves margin), with sections for GPU models whose ratios differ (`kit.py calibrate`
/// writes them). The environment variable KIT_THRESHOLDS names another file to use.
#pragma once

#include <istream>
#include <map>
#include <stdexcept>
#include <string>

namespace kit {

/// A malformed thresholds file or an unknown key; the message names the file and line.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The ratios stored for one key: the student bar, the reference bar, and, for a key whose
/// perf points are graded on a scale (`key student reference floor`), the ratio under which a
/// student gets none (the runner gives points in proportion between the floor and the bar).
struct ThresholdPair {
  double student = 0;
  double reference = 0;
  double floor = 0;  ///< 0: all or nothing
};

/// A thresholds file by section. Lines before any header are the default section (""); a line
/// `[NAME]` starts a section for one GPU model, NAME being the start of the CUDA device name
/// (`[NVIDIA H200]`, `[NVIDIA H100 80GB HBM3]`), or for a compute capability (`[sm_90]`). A section
/// lists only the keys it changes; a key it does not list comes from the default section.
struct ThresholdTable {
  std::map<std::string, std::map<std::string, ThresholdPair>> sections;

  /// Where `key` is found for a GPU named `device` of compute capability `cc` (e.g. 90): the
  /// section of the longest header the device name starts with that lists the key, else the
  /// `sm_<cc>` section if it lists it, else the default section. Returns that section's name
  /// ("" for the default), or throws ConfigError when no section has the key.
  std::string section_for(const std::string& key, const std::string& device, int cc) const;
};

/// Parses `key student reference [floor]` lines and `[NAME]` headers; '#' starts a comment. Throws
/// ConfigError naming `source` and the line for anything else (a missing or non-numeric ratio, a
/// ratio <= 0, a floor not below the student bar, a duplicate key in a section, an empty or repeated header, a key in a GPU section
/// that the default section lacks).
ThresholdTable parse_threshold_table(std::istream& in, const std::string& source);

/// The default section of a thresholds file (parse_threshold_table(in, source).sections[""]).
std::map<std::string, ThresholdPair> parse_thresholds(std::istream& in, const std::string& source);

/// The thresholds file in use: KIT_THRESHOLDS, else the kit's grader/thresholds.conf.
std::string thresholds_path();

/// Records which build this process is: "student" (graded against labs/) or "reference" (against
/// solutions/). Called once by the grader's main(); the default is "student".
void set_build_variant(const std::string& variant);

/// The variant set by set_build_variant().
const std::string& build_variant();

/// The ratio for `key` for this build (see build_variant()).
double threshold(const std::string& key);

/// The ratio for `key` for a build of `variant` ("student" or "reference") on this process's GPU
/// (its section, see ThresholdTable). Loads and checks the file once per process; throws
/// ConfigError for a missing file or key.
double threshold_for(const std::string& key, const std::string& variant);

/// The section of the thresholds file that `key` comes from on this process's GPU: "default",
/// or the header's name (e.g. "NVIDIA H200", "sm_90"). Every perf result records it.
std::string threshold_section(const std::string& key);

}  // namespace kit
