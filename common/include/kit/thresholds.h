/// @file thresholds.h
/// @brief Performance thresholds, read from the one file an instructor edits.
///
/// grader/thresholds.conf holds one line per threshold: a key, the ratio a student's code must
/// reach, and the stricter ratio the reference solution must reach (the kit's own check that the
/// threshold leaves margin). The environment variable KIT_THRESHOLDS names another file to use.
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

/// The two ratios stored for one key.
struct ThresholdPair {
  double student = 0;
  double reference = 0;
};

/// Parses `key student reference` lines; '#' starts a comment. Throws ConfigError naming
/// `source` and the line for anything else (a missing or non-numeric ratio, a ratio <= 0,
/// a duplicate key).
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

/// The ratio for `key` for a build of `variant` ("student" or "reference"). Loads and checks the
/// file once per process; throws ConfigError for a missing file or key.
double threshold_for(const std::string& key, const std::string& variant);

}  // namespace kit
