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
  EXPECT_EQ(error_of("a 0.5\n"), "t.conf:1: expected 'key student_ratio reference_ratio [floor_ratio]'");
  EXPECT_EQ(error_of("\na 0.5 x\n"), "t.conf:2: 'x' is not a positive ratio");
  EXPECT_EQ(error_of("a 0.5 -1\n"), "t.conf:1: '-1' is not a positive ratio");
  EXPECT_EQ(error_of("a 0.5 0.6 0.7 0.8\n"),
            "t.conf:1: expected 'key student_ratio reference_ratio [floor_ratio]'");
  EXPECT_EQ(error_of("a 0.5 0.6 0.5\n"), "t.conf:1: the floor 0.5 must be below the student bar 0.5");
  EXPECT_EQ(error_of("a 0.5 0.6\na 0.5 0.6\n"), "t.conf:2: duplicate key 'a'");
  EXPECT_EQ(error_of("a 0.5abc 0.6\n"), "t.conf:1: '0.5abc' is not a positive ratio");
}

kit::ThresholdTable table_of(const std::string& text) {
  std::istringstream in(text);
  return kit::parse_threshold_table(in, "t.conf");
}

TEST(Thresholds, SectionsOverrideTheKeysTheyListForTheirGpu) {
  const auto table = table_of(
      "a 0.6 0.9\nb 1.5 1.8\n"
      "[NVIDIA H200]  # a GPU model: the start of the device name\na 0.5 0.8\n"
      "[NVIDIA H200 NVL]\nb 1.2 1.3\n"
      "[sm_89]\na 0.4 0.7\n");
  EXPECT_EQ(table.section_for("a", "NVIDIA H200", 90), "NVIDIA H200");
  EXPECT_EQ(table.section_for("a", "NVIDIA H200 NVL", 90), "NVIDIA H200");  // NVL lacks a
  EXPECT_EQ(table.section_for("b", "NVIDIA H200 NVL", 90), "NVIDIA H200 NVL");  // the longest
  EXPECT_EQ(table.section_for("b", "NVIDIA H200", 90), "");   // not listed: the default
  EXPECT_EQ(table.section_for("a", "NVIDIA L4", 89), "sm_89");  // by compute capability
  EXPECT_EQ(table.section_for("a", "NVIDIA H100 80GB HBM3", 90), "");
  EXPECT_EQ(table.section_for("a", "", 0), "");  // no GPU
  EXPECT_DOUBLE_EQ(table.sections.at("NVIDIA H200").at("a").reference, 0.8);
  EXPECT_THROW(table.section_for("c", "NVIDIA H200", 90), kit::ConfigError);
}

TEST(Thresholds, AFourthColumnIsTheFloorOfGradedSpeed) {
  const auto table = parse("a 0.6 0.9 0.3\nb 1.5 1.8\n");
  EXPECT_DOUBLE_EQ(table.at("a").floor, 0.3);
  EXPECT_DOUBLE_EQ(table.at("b").floor, 0.0);  // all or nothing
}

TEST(Thresholds, RejectsMalformedSections) {
  EXPECT_EQ(error_of("a 0.5 0.6\n[]\n"),
            "t.conf:2: expected a section header '[GPU name]' or '[sm_XY]'");
  EXPECT_EQ(error_of("a 0.5 0.6\n[X\n"),
            "t.conf:2: expected a section header '[GPU name]' or '[sm_XY]'");
  EXPECT_EQ(error_of("a 0.5 0.6\n[X]\n[X]\n"), "t.conf:3: section [X] appears twice");
  EXPECT_EQ(error_of("a 0.5 0.6\n[X]\nb 0.5 0.6\n"),
            "t.conf:3: 'b' is not a key of the default section");
  EXPECT_EQ(error_of("a 0.5 0.6\n[X]\na 0.5 0.6\na 0.5 0.6\n"), "t.conf:4: duplicate key 'a'");
  EXPECT_EQ(parse("a 0.5 0.6\n[X]\na 0.4 0.5\n").at("a").student, 0.5);  // the default's
}

// Which way each key's bars must lie (a speed ratio's reference bar at least the student's, a
// counter bar's at most) is `kit.py check`'s to say: only it knows the counters.
TEST(Thresholds, TheKitsFileParses) {
  std::ifstream in(kit::thresholds_path());
  ASSERT_TRUE(in) << kit::thresholds_path();
  const auto table = kit::parse_threshold_table(in, kit::thresholds_path());
  EXPECT_FALSE(table.sections.at("").empty());
}

}  // namespace
