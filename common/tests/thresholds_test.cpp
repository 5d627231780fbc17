// Unit tests of the thresholds file parser, and of the kit's own thresholds file.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "kit/thresholds.h"

namespace {

std::map<std::string, kit::ThresholdPair> parse(const std::string& text) {
  std::istringstream in(text);
  return kit::parse_thresholds(in, "t.conf");
}

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const kit::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Thresholds, ParsesKeysCommentsAndBlankLines) {
  const auto table = parse("# comment\n\nlab.a 0.60 0.85  # trailing\nlab.b 1.5 1.8\n");
  ASSERT_EQ(table.size(), 2u);
  EXPECT_DOUBLE_EQ(table.at("lab.a").student, 0.60);
  EXPECT_DOUBLE_EQ(table.at("lab.a").reference, 0.85);
  EXPECT_DOUBLE_EQ(table.at("lab.b").student, 1.5);
}

TEST(Thresholds, RejectsMalformedLinesNamingFileAndLine) {
  EXPECT_EQ(error_of("a 0.5\n"), "t.conf:1: expected 'key student_ratio reference_ratio'");
  EXPECT_EQ(error_of("\na 0.5 x\n"), "t.conf:2: 'x' is not a positive ratio");
  EXPECT_EQ(error_of("a 0.5 -1\n"), "t.conf:1: '-1' is not a positive ratio");
  EXPECT_EQ(error_of("a 0.5 0.6 0.7\n"), "t.conf:1: expected 'key student_ratio reference_ratio'");
  EXPECT_EQ(error_of("a 0.5 0.6\na 0.5 0.6\n"), "t.conf:2: duplicate key 'a'");
  EXPECT_EQ(error_of("a 0.5abc 0.6\n"), "t.conf:1: '0.5abc' is not a positive ratio");
}

TEST(Thresholds, TheKitsFileParsesAndEveryReferenceBarIsAtLeastTheStudentBar) {
  std::ifstream in(kit::thresholds_path());
  ASSERT_TRUE(in) << kit::thresholds_path();
  const auto table = kit::parse_thresholds(in, kit::thresholds_path());
  EXPECT_FALSE(table.empty());
  for (const auto& [key, pair] : table) EXPECT_GE(pair.reference, pair.student) << key;
}

}  // namespace
