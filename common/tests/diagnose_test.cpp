// Unit tests of the diagnosis rules (kit/diagnose.h): each on a synthetic pattern of the mistake it
// names, and nothing said for a pattern no rule knows.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "kit/diagnose.h"

namespace {

const kit::Tolerance kExact = kit::Tolerance::exact("test");

std::vector<float> ramp(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = 0.5f + static_cast<float>(i);
  return v;
}

kit::Launch launch_1d(unsigned grid, unsigned block) { return {dim3(grid), dim3(block), 1}; }

std::string diagnose_1d(const std::vector<float>& expected, const std::vector<float>& got,
                        const kit::Launch* launch = nullptr) {
  return kit::diagnose_mismatches(expected, got, kExact, kit::Shape::d1(expected.size()), launch);
}

TEST(Diagnose, OnlyBlockZeroRightMeansTheIndexLacksBlockIdx) {
  const auto expected = ramp(1000);
  std::vector<float> got(1000, kit::poison_value<float>());
  for (std::size_t i = 0; i < 256; ++i) got[i] = expected[i];
  const kit::Launch launch = launch_1d(4, 256);
  EXPECT_NE(diagnose_1d(expected, got, &launch).find("lacks blockIdx"), std::string::npos);
}

TEST(Diagnose, ATailNeverWrittenByAGridRoundedDown) {
  const auto expected = ramp(1000);
  auto got = expected;
  for (std::size_t i = 768; i < 1000; ++i) got[i] = kit::poison_value<float>();
  const kit::Launch launch = launch_1d(3, 256);  // 1000 / 256 rounded down
  const std::string line = diagnose_1d(expected, got, &launch);
  EXPECT_NE(line.find("the last 232 elements (from [768])"), std::string::npos) << line;
  EXPECT_NE(line.find("rounded down"), std::string::npos) << line;
  EXPECT_NE(diagnose_1d(expected, got).find("stops short of n"), std::string::npos);
  // One block of 256 over 1000 elements, a grid chosen small: the grid-stride loop is missing.
  for (std::size_t i = 256; i < 1000; ++i) got[i] = kit::poison_value<float>();
  const kit::Launch one_block = launch_1d(1, 256);
  const std::string small = diagnose_1d(expected, got, &one_block);
  EXPECT_NE(small.find("needs a grid-stride loop"), std::string::npos) << small;
  EXPECT_EQ(small.find("rounded down"), std::string::npos) << small;
  // A grid with a thread for every element, the last one not written: a guard i < n - 1.
  got = expected;
  got[999] = kit::poison_value<float>();
  const kit::Launch enough = launch_1d(4, 256);
  const std::string guard = diagnose_1d(expected, got, &enough);
  EXPECT_NE(guard.find("the last element (from [999]) was never written"), std::string::npos) << guard;
  EXPECT_NE(guard.find("i < n - 1"), std::string::npos) << guard;
}

TEST(Diagnose, TheLastColumnsOfA2dOutputNeverWritten) {
  const std::size_t rows = 5, cols = 7;
  const auto expected = ramp(rows * cols);
  auto got = expected;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 5; c < cols; ++c) got[r * cols + c] = kit::poison_value<float>();
  const std::string line =
      kit::diagnose_mismatches(expected, got, kExact, kit::Shape::d2(rows, cols), nullptr);
  EXPECT_NE(line.find("the last 2 columns were never written"), std::string::npos) << line;
  EXPECT_NE(line.find("x (columns)"), std::string::npos) << line;
  // Lab 01's row and column swapped on 31 x 33: the last column is never written although the
  // grid (2,4) x (32,8) has 64 threads across; not a grid rounded down.
  const std::size_t r31 = 31, c33 = 33;
  const auto wide = ramp(r31 * c33);
  auto last_column = wide;
  for (std::size_t r = 0; r < r31; ++r) last_column[r * c33 + 32] = kit::poison_value<float>();
  const kit::Launch launch{dim3(2, 4), dim3(32, 8), 1};
  const std::string swapped =
      kit::diagnose_mismatches(wide, last_column, kExact, kit::Shape::d2(r31, c33), &launch);
  EXPECT_NE(swapped.find("the last column was never written, although the grid has threads"),
            std::string::npos) << swapped;
  EXPECT_NE(swapped.find("(swapped)"), std::string::npos) << swapped;
}

TEST(Diagnose, ValuesOnePlaceOverMeanAnIndexOffByOne) {
  const auto expected = ramp(300);
  auto after = expected, before = expected;
  for (std::size_t i = 0; i + 1 < 300; ++i) after[i] = expected[i + 1];
  for (std::size_t i = 1; i < 300; ++i) before[i] = expected[i - 1];
  EXPECT_NE(diagnose_1d(expected, after).find("element after them"), std::string::npos);
  EXPECT_NE(diagnose_1d(expected, before).find("element before them"), std::string::npos);
}

TEST(Diagnose, TheTransposedPositionsValueMeansRowsAndColumnsSwapped) {
  const std::size_t rows = 8, cols = 8;
  const auto expected = ramp(rows * cols);
  std::vector<float> got(rows * cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) got[r * cols + c] = expected[c * cols + r];
  const std::string line =
      kit::diagnose_mismatches(expected, got, kExact, kit::Shape::d2(rows, cols), nullptr);
  EXPECT_NE(line.find("rows and columns are swapped"), std::string::npos) << line;
}

TEST(Diagnose, TheOtherExtentAsRowStride) {
  const std::size_t rows = 4, cols = 6;
  const auto expected = ramp(rows * cols);
  std::vector<float> got(rows * cols, kit::poison_value<float>());
  for (std::size_t r = 0; r < rows; ++r)  // index r * rows + c: the row stride is rows
    for (std::size_t c = 0; c < cols; ++c)
      if (r * rows + c < got.size()) got[r * rows + c] = expected[r * cols + c];
  const std::string line =
      kit::diagnose_mismatches(expected, got, kExact, kit::Shape::d2(rows, cols), nullptr);
  EXPECT_NE(line.find("row stride is the number of rows"), std::string::npos) << line;
}

TEST(Diagnose, ScatteredElementsNeverWrittenAndNaN) {
  const auto expected = ramp(500);
  auto got = expected;
  for (std::size_t i : {3u, 77u, 120u, 499u / 2}) got[i] = kit::poison_value<float>();
  EXPECT_NE(diagnose_1d(expected, got).find("never written"), std::string::npos);
  got = expected;
  got[10] = NAN;
  got[20] = NAN;
  EXPECT_NE(diagnose_1d(expected, got).find("2 elements are NaN"), std::string::npos);
}

TEST(Diagnose, NothingIsSaidOfAPatternNoRuleKnowsOrOfARightOutput) {
  const auto expected = ramp(400);
  auto got = expected;
  EXPECT_EQ(diagnose_1d(expected, got), "");
  got[17] += 3.0f;  // values that are merely wrong, written, no NaN
  got[201] *= 2.0f;
  got[333] = -1.0f;
  EXPECT_EQ(diagnose_1d(expected, got), "");
}

TEST(Diagnose, AShapeThatIsNotTheOutputsIsReadAs1d) {
  const auto expected = ramp(30);
  auto got = expected;
  for (std::size_t i = 20; i < 30; ++i) got[i] = kit::poison_value<float>();
  // 8 x 8 would index past 30 elements; read as 1D, the tail rule still speaks.
  const std::string line =
      kit::diagnose_mismatches(expected, got, kExact, kit::Shape::d2(8, 8), nullptr);
  EXPECT_NE(line.find("the last 10 elements"), std::string::npos) << line;
}

TEST(Diagnose, A2dOutputGetsAMapOfWhereTheWrongElementsAre) {
  const std::size_t rows = 16, cols = 64;  // cells of 2 x 2
  const auto expected = ramp(rows * cols);
  auto got = expected;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 48; c < cols; ++c) got[r * cols + c] = kit::poison_value<float>();
  got[0] = -1.0f;  // one wrong element in the top-left cell
  const std::string text =
      kit::likely_mistake(expected, got, kExact, kit::Shape::d2(rows, cols), nullptr);
  EXPECT_NE(text.find("a cell is 2 x 2"), std::string::npos) << text;
  EXPECT_NE(text.find("    +" + std::string(23, '.') + std::string(8, '#') + "  row 0\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("    " + std::string(24, '.') + std::string(8, '#') + "  last row\n"),
            std::string::npos) << text;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 80u) << line;
  EXPECT_EQ(kit::likely_mistake(expected, expected, kExact, kit::Shape::d2(rows, cols), nullptr),
            "");
}

TEST(Diagnose, TheLikelyLinesFit80Columns) {
  const auto expected = ramp(1000);
  std::vector<float> got(1000, kit::poison_value<float>());
  for (std::size_t i = 0; i < 256; ++i) got[i] = expected[i];
  const kit::Launch launch = launch_1d(4, 256);
  const std::string text =
      kit::likely_mistake(expected, got, kExact, kit::Shape::d1(1000), &launch);
  ASSERT_EQ(text.rfind("  likely: only block 0", 0), 0u) << text;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 80u) << line;
}

}  // namespace

TEST(Diagnose, OutputsThatChangeBetweenRunsOfTheSameInputsAreARace) {
  const std::vector<float> first = {1, 2, 3, kit::poison_value<float>(), 5};
  std::vector<float> again = first;
  EXPECT_EQ(kit::race_note(first, again), "");  // the same wrong output twice: no race
  const std::vector<float> nan_twice = {std::nanf(""), 1};
  EXPECT_EQ(kit::race_note(nan_twice, nan_twice), "");
  again[1] = 7;
  again[3] = 4;
  const std::string note = kit::race_note(first, again);
  EXPECT_NE(note.find("likely: a race"), std::string::npos) << note;
  EXPECT_NE(note.find("2 of 5 elements"), std::string::npos) << note;
  EXPECT_NE(note.find("__syncthreads()"), std::string::npos) << note;
  for (std::size_t at = 0, end; at < note.size(); at = end + 1) {
    end = note.find('\n', at);
    EXPECT_LE(end - at, 80u);
  }
}
