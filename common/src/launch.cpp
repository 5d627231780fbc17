#include "kit/launch.h"

#include <sstream>

namespace kit {
namespace {

// Splits coordinate c over `grid` blocks of `block` threads that each handle `items` elements
// strided by `block`, wrapping as a grid-stride loop does.
void split(std::size_t c, unsigned grid, unsigned block, unsigned items, unsigned& block_idx,
           unsigned& thread_idx) {
  if (grid == 0 || block == 0 || items == 0) {
    block_idx = thread_idx = 0;
    return;
  }
  const std::size_t tile = static_cast<std::size_t>(block) * items;
  block_idx = static_cast<unsigned>((c / tile) % grid);
  thread_idx = static_cast<unsigned>((c % tile) % block);
}

std::string triple(const dim3& d) {
  std::ostringstream out;
  out << "(" << d.x << "," << d.y << "," << d.z << ")";
  return out.str();
}

}  // namespace

Owner expected_owner(const Shape& shape, const Launch& launch, std::size_t index) {
  const std::size_t x = index % shape.x;
  const std::size_t y = (index / shape.x) % shape.y;
  const std::size_t z = index / (shape.x * shape.y);
  Owner owner;
  split(x, launch.grid.x, launch.block.x, launch.items_per_thread, owner.block.x, owner.thread.x);
  split(y, launch.grid.y, launch.block.y, 1, owner.block.y, owner.thread.y);
  split(z, launch.grid.z, launch.block.z, 1, owner.block.z, owner.thread.z);
  return owner;
}

std::string describe_location(const Shape& shape, std::size_t index) {
  std::ostringstream out;
  const std::size_t x = index % shape.x;
  const std::size_t y = (index / shape.x) % shape.y;
  const std::size_t z = index / (shape.x * shape.y);
  switch (shape.rank) {
    case 2: out << "(row " << y << ", col " << x << ")"; break;
    case 3: out << "(z " << z << ", y " << y << ", x " << x << ")"; break;
    default: out << "[" << index << "]";
  }
  return out.str();
}

std::string describe_owner(const Owner& owner) {
  return "block " + triple(owner.block) + " thread " + triple(owner.thread);
}

std::string describe_launch(const Launch& launch) {
  std::string text = "grid " + triple(launch.grid) + " x block " + triple(launch.block);
  if (launch.items_per_thread != 1)
    text += ", " + std::to_string(launch.items_per_thread) + " elements per thread";
  return text;
}

}  // namespace kit
