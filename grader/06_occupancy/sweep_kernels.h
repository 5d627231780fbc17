// The kernels of lab 06's GPU sweeps (test_occupancy.cu), in families that each vary one resource:
// registers, launch bounds, static shared memory, dynamic shared memory, both mixed, the carveout.
// Compiled in sweep_kernels.cu; never launched (the driver answers from their attributes).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "sample_kernels.cuh"

namespace lab06_grader {

// One kernel of the sweep: how to find it, the attributes to set first, the dynamic shared memory
// sizes to try.
struct SweepKernel : SampleKernel {
  std::vector<std::size_t> dynamic_sizes;
};

struct SweepFamily {
  std::string name;
  std::vector<SweepKernel> kernels;
};

// Every family, in the order the tests are instantiated.
const std::vector<SweepFamily>& sweep_families();

}  // namespace lab06_grader
