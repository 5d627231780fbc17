// What the judge sees of lab 05's branch_map.cuh (kit/remote.h): the declaration only. The
// student's definition runs in the worker; grader/05_divergence/remote.h lists it, and the probe
// lab05_probe::aligned_elements (probes.cu) asks it about every thread of a launch at once.
#pragma once

#include <cuda_runtime.h>

namespace lab05 {
unsigned warp_aligned_element(unsigned t, unsigned n);
}  // namespace lab05
