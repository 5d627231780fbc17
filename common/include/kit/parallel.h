/// @file parallel.h
/// @brief Host loops over large test data, split across the CPU's cores.
///
/// A perf test checks outputs of tens of millions of elements and draws inputs as large; on one
/// core that host work, not the GPU's, is most of the test's time. Each loop here is cut into
/// contiguous parts, in index order, so a result merged part by part is the one a single loop
/// would give (the same values drawn, the same first mismatches reported).
#pragma once

#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace kit {

/// Elements below which a part is not worth a thread of its own.
inline constexpr std::size_t kMinElementsPerPart = std::size_t{1} << 20;

/// Whether parallel_parts() may start threads. A lab's worker sets it false before its sandbox
/// kills the process at any new thread (remote_worker.cu); loops there run on the caller's thread.
inline bool& threads_allowed() {
  static bool allowed = true;
  return allowed;
}

/// How many parts parallel_parts() cuts n elements into: 1 for small n or where no thread may
/// start, else up to the cores the machine reports (16 at most).
inline std::size_t part_count(std::size_t n) {
  if (!threads_allowed()) return 1;
  const std::size_t cores = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 16);
  return std::clamp<std::size_t>(n / kMinElementsPerPart, 1, cores);
}

/// Calls body(part, begin, end) for each of `parts` contiguous ranges of [0, n), part k being
/// [k n / parts, (k + 1) n / parts), each on its own thread (part 0 on the caller's; all of them,
/// in order, where threads_allowed() is false); returns when all are done. `body` must not throw.
template <class Body>
void parallel_parts(std::size_t n, std::size_t parts, const Body& body) {
  auto begin = [&](std::size_t k) { return n * k / parts; };
  if (!threads_allowed()) {
    for (std::size_t k = 0; k < parts; ++k) body(k, begin(k), begin(k + 1));
    return;
  }
  std::vector<std::thread> threads;
  threads.reserve(parts > 0 ? parts - 1 : 0);
  for (std::size_t k = 1; k < parts; ++k)
    threads.emplace_back([&, k] { body(k, begin(k), begin(k + 1)); });
  if (parts > 0) body(0, begin(0), begin(1));
  for (std::thread& t : threads) t.join();
}

}  // namespace kit
