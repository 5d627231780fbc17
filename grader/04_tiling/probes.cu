// Lab 04's probes: grader code that runs in the worker (kit/remote.h), beside the student's code.
// They only report what the student's code says; every verdict is the judge's.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "remote.h"

lab04_probe::TileSizes lab04_probe::tile_sizes(int) {
  return {lab04::kTile,    lab04::kBlockM,  lab04::kBlockN,      lab04::kBlockK,
          lab04::kThreadM, lab04::kThreadN, lab04::kBlockThreads};
}

std::vector<lab04::MatIndex> lab04_probe::tile_elements(unsigned row0, unsigned col0,
                                                       unsigned ty, unsigned tx, unsigned tile,
                                                       unsigned phases) {
  std::vector<lab04::MatIndex> out;
  out.reserve(2 * std::size_t{phases} * tile);
  for (unsigned p = 0; p < phases; ++p)
    for (unsigned j = 0; j < tile; ++j) {
      out.push_back(lab04::a_tile_element(row0, p, ty, j, tile));
      out.push_back(lab04::b_tile_element(col0, p, j, tx, tile));
    }
  return out;
}

float lab04_probe::load_or_zero_on_host(std::vector<float> storage, unsigned rows, unsigned cols,
                                        lab04::MatIndex e) {
  return lab04::load_or_zero(storage.data(), rows, cols, e);
}

float lab04_probe::load_or_zero_past_2_to_32(unsigned rows, unsigned cols, lab04::MatIndex e,
                                             float value) {
  const std::size_t offset = std::size_t{e.row} * cols + e.col;
  const std::size_t wrapped = offset & 0xffffffffu;  // what a 32-bit offset computes
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t bytes = (offset + 1) * sizeof(float) + page;
  // Address space only: no access, no memory behind it until a page is opened below.
  void* space = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (space == MAP_FAILED)
    throw std::runtime_error("the grader could not reserve " + std::to_string(bytes >> 30) +
                             " GiB of address space for its 2^32 test");
  float* m = static_cast<float*>(space);
  bool opened = true;
  for (const auto& [at, value] : {std::pair{offset, value}, std::pair{wrapped, -value}}) {
    const std::uintptr_t start = reinterpret_cast<std::uintptr_t>(m + at) / page * page;
    opened = opened && mprotect(reinterpret_cast<void*>(start), page, PROT_READ | PROT_WRITE) == 0;
    if (opened) m[at] = value;
  }
  const float got = opened ? lab04::load_or_zero(m, rows, cols, e) : 0.0f;
  munmap(space, bytes);
  if (!opened) throw std::runtime_error("the grader could not open a page for its 2^32 test");
  return got;
}
