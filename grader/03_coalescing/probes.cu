// Lab 03's probes: grader code that runs in the worker (kit/remote.h), beside the student's code.
// They only report what the student's code says; every verdict is the judge's.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "remote.h"

// MatIndex and TileMove travel between the processes as their bytes: the student's header must
// still lay them out as the judge's copy (grader/03_coalescing/judge/coalescing_math.cuh) does.
static_assert(sizeof(lab03::MatIndex) == 2 * sizeof(unsigned) &&
                  offsetof(lab03::MatIndex, row) == 0 &&
                  offsetof(lab03::MatIndex, col) == sizeof(unsigned),
              "lab03::MatIndex is given: keep it {unsigned row; unsigned col;}");
static_assert(sizeof(lab03::TileMove) == 2 * sizeof(lab03::MatIndex) &&
                  offsetof(lab03::TileMove, global) == 0 &&
                  offsetof(lab03::TileMove, tile) == sizeof(lab03::MatIndex),
              "lab03::TileMove is given: keep it {MatIndex global; MatIndex tile;}");

unsigned lab03_probe::padded_pitch(int) { return lab03::kPaddedPitch; }

std::vector<lab03::MatIndex> lab03_probe::matmul_elements(dim3 grid, dim3 block,
                                                         std::uint64_t first_block,
                                                         std::uint64_t blocks) {
  const std::uint64_t grid_blocks = std::uint64_t(grid.x) * grid.y * grid.z;
  const std::uint64_t end = first_block < grid_blocks
                                ? first_block + std::min(blocks, grid_blocks - first_block)
                                : first_block;
  std::vector<lab03::MatIndex> said;
  said.reserve((end - first_block) * block.x * block.y * block.z);
  for (std::uint64_t b = first_block; b < end; ++b) {
    const uint3 block_idx = make_uint3(unsigned(b % grid.x), unsigned(b / grid.x % grid.y),
                                       unsigned(b / grid.x / grid.y));
    for (unsigned tz = 0; tz < block.z; ++tz)
      for (unsigned ty = 0; ty < block.y; ++ty)
        for (unsigned tx = 0; tx < block.x; ++tx)
          said.push_back(lab03::matmul_element(block_idx, block, make_uint3(tx, ty, tz)));
  }
  return said;
}

std::vector<std::uint64_t> lab03_probe::aos_to_soa_sources(unsigned grid_x, dim3 block, unsigned n,
                                                           std::uint64_t first_block,
                                                           std::uint64_t blocks) {
  const std::uint64_t end =
      first_block < grid_x ? first_block + std::min<std::uint64_t>(blocks, grid_x - first_block)
                           : first_block;
  std::vector<std::uint64_t> said;
  said.reserve((end - first_block) * block.x);
  for (std::uint64_t b = first_block; b < end; ++b)
    for (unsigned t = 0; t < block.x; ++t)
      said.push_back(lab03::aos_to_soa_source(make_uint3(unsigned(b), 0, 0), block,
                                              make_uint3(t, 0, 0), n));
  return said;
}

std::vector<lab03::TileMove> lab03_probe::tile_moves(uint3 block, dim3 threads, unsigned passes,
                                                     bool store) {
  std::vector<lab03::TileMove> said;
  said.reserve(std::size_t{passes} * threads.x * threads.y);
  for (unsigned pass = 0; pass < passes; ++pass)
    for (unsigned ty = 0; ty < threads.y; ++ty)
      for (unsigned tx = 0; tx < threads.x; ++tx) {
        const uint3 thread = make_uint3(tx, ty, 0);
        said.push_back(store ? lab03::tile_store(block, thread, pass)
                             : lab03::tile_load(block, thread, pass));
      }
  return said;
}
