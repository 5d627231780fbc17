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
  // TODO(divergence.3): the hardware cuts a block into runs of kWarpSize threads; round up.
  return 0;
  // END(divergence.3)
}

BranchStats analyze_branch(unsigned blocks, unsigned threads_per_block,
                           const BranchCondition& condition) {
  BranchStats stats;
  // TODO(divergence.3): visit every warp of every block; ask `condition` for each of its threads
  // (a partial last warp has fewer than 32) and count: the warps, the warps whose threads
  // disagree, the active lanes, and the lane slots issued (32 for each path a warp runs).
  (void)blocks;
  (void)threads_per_block;
  (void)condition;
  // END(divergence.3)
  return stats;
}

double branch_efficiency(const BranchStats& stats) {
  // TODO(divergence.3): the fraction of warps that did not diverge.
  (void)stats;
  return 0.0;
  // END(divergence.3)
}

double simt_efficiency(const BranchStats& stats) {
  // TODO(divergence.3): useful lanes over issued lane slots.
  (void)stats;
  return 0.0;
  // END(divergence.3)
}

}  // namespace lab05
