// The families of real kernels that lab 06's GPU sweeps ask the driver about (sweep_kernels.h).
// Their many template instances (sample_kernels.cuh) are the slowest device code of the lab to
// compile: in a file of their own they compile beside the tests instead of after them.
#include "sweep_kernels.h"

#include "occupancy_checks.h"
#include "sample_kernels.cuh"

namespace lab06_grader {

const std::vector<SweepFamily>& sweep_families() {
  static const std::vector<std::size_t> kFewDynamic = {0, 3000};
  // The last two exceed what a kernel allows without opting in (48 KiB): no block can launch.
  static const std::vector<std::size_t> kDefaultDynamic = {
      0, 1, 127, 128, 1000, 4096, 12288, 20480, 33000, 40000, 48 * KiB, 48 * KiB + 1, 60000};
  static const std::vector<std::size_t> kOptInDynamic = {
      0, 20000, 48 * KiB + 1, 64 * KiB, 100000, 116736, 150000, 200000, 227 * KiB};
  static const std::vector<std::size_t> kMixedDynamic = {0, 5000, 16384, 40000};
  static const std::vector<std::size_t> kCarveoutDynamic = {0,     2000,  9000,  20000,
                                                            40000, 70000, 120000};
  static const std::vector<SweepFamily> families = {
      {"registers",
       {{"registers_kernel<2>", (const void*)registers_kernel<2>, -1, false, kFewDynamic},
        {"registers_kernel<12>", (const void*)registers_kernel<12>, -1, false, kFewDynamic},
        {"registers_kernel<28>", (const void*)registers_kernel<28>, -1, false, kFewDynamic},
        {"registers_kernel<44>", (const void*)registers_kernel<44>, -1, false, kFewDynamic},
        {"registers_kernel<60>", (const void*)registers_kernel<60>, -1, false, kFewDynamic},
        {"registers_kernel<90>", (const void*)registers_kernel<90>, -1, false, kFewDynamic},
        {"registers_kernel<130>", (const void*)registers_kernel<130>, -1, false, kFewDynamic},
        {"registers_kernel<200>", (const void*)registers_kernel<200>, -1, false, kFewDynamic}}},
      {"launch_bounds",
       {{"bounded_kernel<200, 1024, 1>", (const void*)bounded_kernel<200, 1024, 1>, -1, false,
         kFewDynamic},
        {"bounded_kernel<200, 256, 4>", (const void*)bounded_kernel<200, 256, 4>, -1, false,
         kFewDynamic},
        {"bounded_kernel<200, 384, 3>", (const void*)bounded_kernel<200, 384, 3>, -1, false,
         kFewDynamic},
        {"bounded_kernel<200, 96, 8>", (const void*)bounded_kernel<200, 96, 8>, -1, false,
         kFewDynamic},
        {"bounded_kernel<200, 100, 1>", (const void*)bounded_kernel<200, 100, 1>, -1, false,
         kFewDynamic},
        {"bounded_kernel<60, 640, 2>", (const void*)bounded_kernel<60, 640, 2>, -1, false,
         kFewDynamic}}},
      {"static_shared",
       {{"static_shared_kernel<4>", (const void*)static_shared_kernel<4>, -1, false, {0, 1000}},
        {"static_shared_kernel<1000>",
         (const void*)static_shared_kernel<1000>,
         -1,
         false,
         {0, 1000}},
        {"static_shared_kernel<4096>",
         (const void*)static_shared_kernel<4096>,
         -1,
         false,
         {0, 1000}},
        {"static_shared_kernel<10000>",
         (const void*)static_shared_kernel<10000>,
         -1,
         false,
         {0, 1000}},
        {"static_shared_kernel<20480>",
         (const void*)static_shared_kernel<20480>,
         -1,
         false,
         {0, 1000}},
        {"static_shared_kernel<33000>",
         (const void*)static_shared_kernel<33000>,
         -1,
         false,
         {0, 1000}},
        {"static_shared_kernel<49152>", (const void*)static_shared_kernel<49152>, -1, false, {0}}}},
      {"dynamic_shared",
       {{"dynamic_shared_kernel<0>", (const void*)dynamic_shared_kernel<0>, -1, false,
         kDefaultDynamic}}},
      {"dynamic_opt_in",
       {{"dynamic_shared_kernel<1> (opted in)", (const void*)dynamic_shared_kernel<1>, -1, true,
         kOptInDynamic}}},
      {"mixed",
       {{"mixed_kernel<24, 8192>", (const void*)mixed_kernel<24, 8192>, -1, false, kMixedDynamic},
        {"mixed_kernel<70, 2000>", (const void*)mixed_kernel<70, 2000>, -1, false, kMixedDynamic},
        {"mixed_kernel<40, 30000> (opted in)",
         (const void*)mixed_kernel<40, 30000>,
         -1,
         true,
         {0, 20000, 70000, 150000}}}},
      {"carveout",
       {{"carveout_kernel<0>", (const void*)carveout_kernel<0>, 0, true, kCarveoutDynamic},
        {"carveout_kernel<10>", (const void*)carveout_kernel<10>, 10, true, kCarveoutDynamic},
        {"carveout_kernel<25>", (const void*)carveout_kernel<25>, 25, true, kCarveoutDynamic},
        {"carveout_kernel<50>", (const void*)carveout_kernel<50>, 50, true, kCarveoutDynamic},
        {"carveout_kernel<75>", (const void*)carveout_kernel<75>, 75, true, kCarveoutDynamic},
        {"carveout_kernel<100>", (const void*)carveout_kernel<100>, 100, true, kCarveoutDynamic}}},
  };
  return families;
}

}  // namespace lab06_grader
