/// @file launch.h
/// @brief The launch a lab used, the shape of its output, and which thread owned an element.
///
/// Launchers in the labs return the `Launch` they used, so a failing check can say which block and
/// thread were responsible for a wrong element.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

namespace kit {

/// Grid and block of one kernel launch.
struct Launch {
  dim3 grid{0, 0, 0};
  dim3 block{0, 0, 0};
  /// Elements each thread handles along x. With k > 1 a block owns a tile of blockDim.x * k
  /// consecutive elements and its thread t handles t, t + blockDim.x, ..., so that each of a warp's
  /// k accesses is still to 32 neighbouring elements.
  unsigned items_per_thread = 1;
};

/// The extent of an output array in elements, row-major: x is the fastest-moving index (columns),
/// then y (rows), then z (depth). `rank` only changes how coordinates are printed.
struct Shape {
  std::size_t x = 1;
  std::size_t y = 1;
  std::size_t z = 1;
  int rank = 1;

  static Shape d1(std::size_t n) { return {n, 1, 1, 1}; }
  static Shape d2(std::size_t rows, std::size_t cols) { return {cols, rows, 1, 2}; }
  static Shape d3(std::size_t depth, std::size_t rows, std::size_t cols) {
    return {cols, rows, depth, 3};
  }
  std::size_t size() const { return x * y * z; }
};

/// The block and thread of a launch that own one element.
struct Owner {
  dim3 block;
  dim3 thread;
};

/// The thread that should write element `index` of an output of `shape` under `launch`, with the
/// usual mapping: x coordinate from the x dimension, y from y, z from z (and tiles of
/// `items_per_thread` along x). When the grid is smaller than the data in a dimension, the element
/// belongs to the thread a grid-stride loop hands it to.
Owner expected_owner(const Shape& shape, const Launch& launch, std::size_t index);

/// "[17]", "(row 3, col 7)" or "(z 1, y 2, x 3)" for element `index` of `shape`.
std::string describe_location(const Shape& shape, std::size_t index);

/// "block (3,0,0) thread (77,0,0)".
std::string describe_owner(const Owner& owner);

/// "grid (4,1,1) x block (256,1,1)".
std::string describe_launch(const Launch& launch);

}  // namespace kit
