#include "kit/diagnose.h"

#include <algorithm>
#include <sstream>

namespace kit {
namespace detail {
namespace {

/// Share of a rule's evidence that must agree before it speaks.
constexpr double kAgree = 0.9;

struct Coord {
  std::size_t x, y, z;
};

Coord coord(const Shape& s, std::size_t i) {
  return {i % s.x, (i / s.x) % s.y, i / (s.x * s.y)};
}

std::size_t block_count(const Launch& l) {
  return static_cast<std::size_t>(l.grid.x) * l.grid.y * l.grid.z;
}

std::string plural(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// "the last column", "the last 3 columns".
std::string last(std::size_t n, const char* one, const char* many) {
  return n == 1 ? std::string("the last ") + one : "the last " + plural(n, one, many);
}

// Only the elements of block 0 right, every other block's wrong: each block did block 0's work.
std::string only_block_zero(const Pattern& p, const Shape& s, const Launch* launch) {
  if (launch == nullptr || block_count(*launch) < 2) return "";
  const std::size_t tile_x = std::size_t(launch->block.x) * std::max(1u, launch->items_per_thread);
  const std::size_t tile_y = launch->block.y, tile_z = launch->block.z;
  std::size_t inside = 0, inside_wrong = 0, outside = 0, outside_wrong = 0;
  for (std::size_t i = 0; i < p.wrong.size(); ++i) {
    const Coord c = coord(s, i);
    const bool first = c.x < tile_x && c.y < tile_y && c.z < tile_z;
    (first ? inside : outside) += 1;
    (first ? inside_wrong : outside_wrong) += p.wrong[i];
  }
  if (inside == 0 || inside_wrong > 0 || outside == 0 || outside_wrong < kAgree * outside)
    return "";
  return "only block 0's elements are right: every block handled block 0's elements, as when "
         "the global index lacks blockIdx (blockIdx.x * blockDim.x + threadIdx.x)";
}

// The wrong elements are exactly a tail [first, n), none written: the grid stops short.
std::string tail_unwritten(const Pattern& p, const Shape& s, const Launch* launch) {
  if (s.rank != 1) return "";
  const std::size_t n = p.wrong.size();
  std::size_t first = n;
  while (first > 0 && p.wrong[first - 1] && p.unwritten[first - 1]) --first;
  if (first == n || first == 0 || n - first != p.wrong_count) return "";
  const std::string tail = last(n - first, "element", "elements") + " (from [" +
                           std::to_string(first) + "])" +
                           (n - first == 1 ? " was never written" : " were never written");
  if (launch != nullptr && launch->grid.y == 1 && launch->grid.z == 1) {
    const std::size_t covered = std::size_t(launch->grid.x) * launch->block.x *
                                std::max(1u, launch->items_per_thread);
    const std::size_t tile = std::size_t(launch->block.x) * std::max(1u, launch->items_per_thread);
    if (covered == first && n - first < tile)
      return tail + ", and the grid has exactly " + std::to_string(covered) +
             " threads' worth: its block count was rounded down (round it up: (n + block - 1) "
             "/ block), or, for a grid chosen smaller than the data, the kernel lacks its "
             "grid-stride loop (i += gridDim.x * blockDim.x)";
    if (covered == first)
      return tail + ": the grid has " + std::to_string(covered) +
             " threads' worth and nothing handled the rest; a grid smaller than the data needs "
             "a grid-stride loop (i += gridDim.x * blockDim.x, while i < n)";
    if (covered >= n)
      return tail + ", although the grid has a thread for every element: a bounds check that "
                    "stops short (i < n - 1 instead of i < n?)";
  }
  return tail + ": the grid, or a loop, stops short of n (round the block count up; loop while "
                "i < n)";
}

// 2D: the wrong elements are exactly the last columns and/or rows, none written.
std::string edge_unwritten(const Pattern& p, const Shape& s, const Launch* launch) {
  if (s.rank != 2 || s.x < 2 || s.y < 2) return "";
  auto dead = [&](std::size_t i) { return p.wrong[i] && p.unwritten[i]; };
  std::size_t c0 = s.x, r0 = s.y;
  auto column_dead = [&](std::size_t c) {
    for (std::size_t r = 0; r < s.y; ++r)
      if (!dead(r * s.x + c)) return false;
    return true;
  };
  auto row_dead = [&](std::size_t r) {
    for (std::size_t c = 0; c < s.x; ++c)
      if (!dead(r * s.x + c)) return false;
    return true;
  };
  while (c0 > 1 && column_dead(c0 - 1)) --c0;
  while (r0 > 1 && row_dead(r0 - 1)) --r0;
  if (c0 == s.x && r0 == s.y) return "";
  const std::size_t edge = s.x * s.y - c0 * r0;  // elements with col >= c0 or row >= r0
  if (edge != p.wrong_count) return "";
  std::string what;
  if (c0 < s.x) what = last(s.x - c0, "column", "columns");
  if (r0 < s.y) what += (what.empty() ? "" : " and ") + last(s.y - r0, "row", "rows");
  what += (s.x - c0) + (s.y - r0) == 1 ? " was never written" : " were never written";
  // A grid that has threads for every column (row) it left unwritten did not round down: the
  // threads were there, and the index or the guard kept them from those elements.
  const bool short_x = c0 < s.x, short_y = r0 < s.y;
  if (launch != nullptr && launch->grid.x > 0 && launch->block.x > 0) {
    const std::size_t across = std::size_t(launch->grid.x) * launch->block.x *
                               std::max(1u, launch->items_per_thread);
    const std::size_t down = std::size_t(launch->grid.y) * launch->block.y;
    if ((!short_x || across >= s.x) && (!short_y || down >= s.y))
      return what + ", although the grid has threads for them: the column index from the y "
                    "axis and the row from x (swapped), or a guard that stops short";
  }
  return what + ": the grid is rounded down in " +
         (short_x && short_y ? "x and y" : short_x ? "x (columns)" : "y (rows)") +
         "; round each block count up, (extent + block - 1) / block";
}

// Each wrong element holds the value `source(i)` should have (an index mapped wrongly).
template <class Source>
bool holds_values_of(const Pattern& p, Source source) {
  std::size_t seen = 0, agree = 0;
  for (std::size_t i = 0; i < p.wrong.size(); ++i) {
    if (!p.wrong[i] || p.unwritten[i]) continue;
    const std::size_t j = source(i);
    if (j >= p.expected.size() || j == i || p.close(p.expected[i], p.expected[j])) continue;
    ++seen;
    agree += p.close(p.expected[j], p.got[i]);
  }
  return seen >= 2 && agree >= kAgree * seen;
}

std::string shifted(const Pattern& p) {
  const std::size_t n = p.wrong.size();
  if (holds_values_of(p, [n](std::size_t i) { return i + 1 < n ? i + 1 : n; }))
    return "wrong elements hold the value of the element after them: an index off by one "
           "(i + 1 where i was meant)";
  if (holds_values_of(p, [n](std::size_t i) { return i > 0 ? i - 1 : n; }))
    return "wrong elements hold the value of the element before them: an index off by one "
           "(i - 1 where i was meant)";
  return "";
}

std::string swapped(const Pattern& p, const Shape& s) {
  if (s.rank != 2) return "";
  const std::size_t rows = s.y, cols = s.x, n = p.wrong.size();
  // The value of (r, c) stored at c * rows + r: rows and columns swapped.
  if (holds_values_of(p, [=](std::size_t j) {
        const std::size_t c = j / rows, r = j % rows;
        return c < cols ? r * cols + c : n;
      }))
    return "wrong elements hold the value of the transposed position: rows and columns are "
           "swapped in the index (row * cols + col is row-major)";
  // The value of (r, c) stored at r * rows + c: the row stride is the other extent.
  if (rows != cols && holds_values_of(p, [=](std::size_t j) {
        const std::size_t r = j / rows, c = j % rows;
        return r < rows && c < cols ? r * cols + c : n;
      }))
    return "wrong elements hold values of other rows: the row stride is the number of rows, "
           "not of columns (row-major: row * cols + col)";
  return "";
}

std::string never_written(const Pattern& p) {
  if (p.unwritten_count != p.wrong_count) return "";
  return "every wrong element was never written (still the poison pattern): no thread stored "
         "to them; check that the grid covers every element and that the bounds check lets "
         "every valid index through (i < n, not i < n - 1)";
}

std::string nans(const Pattern& p) {
  if (p.nan_count == 0) return "";
  return plural(p.nan_count, "element is", "elements are") +
         " NaN where a number was expected: a value used before anything was written to it "
         "(uninitialised shared or local memory?) or a division by zero";
}

}  // namespace

std::string diagnose(const Pattern& p, const Shape& given, const Launch* launch) {
  // A shape that does not describe the output is not trusted: the rules see a 1D array then.
  const Shape shape = given.size() == p.wrong.size() ? given : Shape::d1(p.wrong.size());
  for (const std::string& line :
       {only_block_zero(p, shape, launch), tail_unwritten(p, shape, launch),
        edge_unwritten(p, shape, launch), shifted(p), swapped(p, shape), never_written(p), nans(p)})
    if (!line.empty()) return line;
  return "";
}

std::string wrong_map(const Pattern& p, const Shape& s) {
  if (s.rank != 2 || s.size() != p.wrong.size() || p.wrong_count == 0) return "";
  constexpr std::size_t kMaxRows = 8, kMaxCols = 32;
  const std::size_t cell_rows = (s.y + kMaxRows - 1) / kMaxRows;
  const std::size_t cell_cols = (s.x + kMaxCols - 1) / kMaxCols;
  const std::size_t rows = (s.y + cell_rows - 1) / cell_rows;
  const std::size_t cols = (s.x + cell_cols - 1) / cell_cols;
  std::ostringstream out;
  out << "  where the wrong elements are (" << s.y << " x " << s.x << "; a cell is " << cell_rows
      << " x " << cell_cols << ")\n    '#' all wrong, '+' some, '.' none:\n";
  for (std::size_t cr = 0; cr < rows; ++cr) {
    out << "    ";
    for (std::size_t cc = 0; cc < cols; ++cc) {
      std::size_t total = 0, wrong = 0;
      for (std::size_t r = cr * cell_rows; r < std::min(s.y, (cr + 1) * cell_rows); ++r)
        for (std::size_t c = cc * cell_cols; c < std::min(s.x, (cc + 1) * cell_cols); ++c) {
          ++total;
          wrong += p.wrong[r * s.x + c];
        }
      out << (wrong == 0 ? '.' : wrong == total ? '#' : '+');
    }
    out << (cr == 0 ? "  row 0" : cr + 1 == rows ? "  last row" : "") << "\n";
  }
  return out.str();
}

std::string race_line(std::size_t differ, std::size_t size) {
  if (differ == 0) return "";
  return wrap_text("likely: a race: a second run of the same inputs changed " +
                       std::to_string(differ) + " of " + std::to_string(size) +
                       " elements; a deterministic mistake gives the same output every time. "
                       "Look for a missing __syncthreads() between writing shared memory and "
                       "reading it (or overwriting it).",
                   80, "  ");
}

}  // namespace detail

std::string wrap_text(const std::string& text, std::size_t width, const std::string& indent) {
  std::istringstream words(text);
  std::string word, line, out;
  while (words >> word) {
    if (!line.empty() && indent.size() + line.size() + 1 + word.size() > width) {
      out += indent + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) out += indent + line + "\n";
  return out;
}

}  // namespace kit
