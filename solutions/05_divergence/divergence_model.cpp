// Lab 05, warp divergence, Step 3: a model of what a branch costs, computed on the CPU.
//
// The hardware issues one instruction for all 32 lanes of a warp. At an if/else, a warp whose
// threads all agree runs one path; a warp whose threads disagree runs both, one after the other,
// with the lanes of the other path masked off. This file counts exactly that, with no GPU.
//
// Edit the TODO regions of Step 3, then grade (the Step 3 tests need no GPU):
//     python3 grader/kit.py grade 05
//     build/bin/grade_05_divergence --gtest_filter='DivergenceModel*'
// The handout (docs/labs/05_divergence.md) defines every quantity; `python3 grader/kit.py hint 05 3`
// gives hints one at a time.
#include "divergence_model.h"

#include <algorithm>

namespace lab05 {

unsigned warps_per_block(unsigned threads_per_block) {
  // DONE(divergence.3): the hardware cuts a block into runs of kWarpSize threads; round up.
  return (threads_per_block + kWarpSize - 1) / kWarpSize;
  // END(divergence.3)
}

BranchStats analyze_branch(unsigned blocks, unsigned threads_per_block,
                           const BranchCondition& condition) {
  BranchStats stats;
  // DONE(divergence.3): visit every warp of every block; ask `condition` for each of its threads
  // (a partial last warp has fewer than 32) and count: the warps, the warps whose threads
  // disagree, the active lanes, and the lane slots issued (32 for each path a warp runs).
  const unsigned warps = warps_per_block(threads_per_block);
  for (unsigned block = 0; block < blocks; ++block) {
    for (unsigned warp = 0; warp < warps; ++warp) {
      const unsigned first = warp * kWarpSize;
      const unsigned end = std::min(first + kWarpSize, threads_per_block);
      unsigned taken = 0;
      for (unsigned thread = first; thread < end; ++thread) taken += condition(block, thread) ? 1 : 0;
      const unsigned lanes = end - first;
      const bool diverges = taken != 0 && taken != lanes;
      stats.warps += 1;
      stats.divergent_warps += diverges ? 1 : 0;
      stats.active_lanes += lanes;
      stats.issued_lanes += (diverges ? 2 : 1) * kWarpSize;
    }
  }
  // END(divergence.3)
  return stats;
}

double branch_efficiency(const BranchStats& stats) {
  // DONE(divergence.3): the fraction of warps that did not diverge.
  if (stats.warps == 0) return 1.0;
  return static_cast<double>(stats.warps - stats.divergent_warps) / static_cast<double>(stats.warps);
  // END(divergence.3)
}

double simt_efficiency(const BranchStats& stats) {
  // DONE(divergence.3): useful lanes over issued lane slots.
  if (stats.issued_lanes == 0) return 1.0;
  return static_cast<double>(stats.active_lanes) / static_cast<double>(stats.issued_lanes);
  // END(divergence.3)
}

}  // namespace lab05
