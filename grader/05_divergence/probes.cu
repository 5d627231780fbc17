// Lab 05's probes: grader code that runs in the worker (kit/remote.h), because it calls the
// student's code on the host in ways a message cannot carry (one call per thread of a launch, and
// a condition that the student's analyze_branch calls back). They only report what the student's
// code says; every check is the judge's (test_branch.cu, test_model.cpp).
#include "remote.h"

std::vector<unsigned> lab05_probe::aligned_elements(unsigned n) {
  std::vector<unsigned> elements(n);
  for (unsigned t = 0; t < n; ++t) elements[t] = lab05::warp_aligned_element(t, n);
  return elements;
}

lab05::BranchStats lab05_probe::analyze(unsigned blocks, unsigned threads_per_block,
                                        const Condition& condition) {
  return lab05::analyze_branch(blocks, threads_per_block, lab05::BranchCondition(condition));
}
