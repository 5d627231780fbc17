// Benchmark of lab 06: your occupancy model and block-size chooser next to the CUDA occupancy API,
// for real kernels of different resource use, and what your block-size choice costs a memory-bound
// kernel. Every ratio is yours divided by the API's: 1.0 means agreement (the grader's GPU tests
// require it exactly, at every block size).
//
//   build/bin/bench_06_occupancy             your model and chooser
//   build/bin/bench_06_occupancy_reference   the reference solution's
//   build/bin/bench_06_occupancy --benchmark_filter=ChosenBlock   only the timed rows
//
// Rows:
//   BM_Model/<kernel>/<block>  occupancy() against cudaOccupancyMaxActiveBlocksPerMultiprocessor:
//                              blocks_ratio, occupancy_ratio (timed: one occupancy() call)
//   BM_Chooser/<kernel>        choose_block_size() against cudaOccupancyMaxPotentialBlockSize:
//                              block_ratio, min_grid_ratio (timed: one choose_block_size() call)
//   BM_ChosenBlock/<kernel>    a memory-bound kernel at your block size and at the API's, each the
//                              median of 21 runs, L2 flushed: time_ratio = your time / the API's;
//                              model_occupancy (api_block_model_occupancy): your occupancy() at
//                              your block size (the API's), for kit.py profile 06
// Like the grader's GPU tests, the chooser is fed the driver's blocks per SM, so step 3 is measured
// on its own.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kit/bench_main.h"
#include "kit/buffers.h"
#include "kit/check.h"
#include "kit/timing.h"
#include "occupancy.h"
#include "sample_kernels.cuh"

namespace {

using lab06::BlockChoice;
using lab06::DeviceSpec;
using lab06::Occupancy;
using lab06_grader::DynamicBytes;
using lab06_grader::SampleKernel;

// ---- Memory-bound kernels, for the timed rows ---------------------------------------------------
//
// One float read and one written per element: their speed depends on how many loads the SMs keep
// in flight, and so on how many warps the block size lets each SM hold.

__global__ void scale_kernel(const float* in, float* out, unsigned n) {
  const unsigned i = threadIdx.x + blockIdx.x * blockDim.x;
  if (i < n) out[i] = 2.0f * in[i] + 1.0f;
}

// The same, for blocks of at most 100 threads: a kernel limit that is not a multiple of 32.
__global__ void __launch_bounds__(100)
    scale_kernel_max100(const float* in, float* out, unsigned n) {
  const unsigned i = threadIdx.x + blockIdx.x * blockDim.x;
  if (i < n) out[i] = 2.0f * in[i] + 1.0f;
}

// Each thread stages kStaged elements through dynamic shared memory (128 B per thread), so a
// larger block takes more shared memory and the chooser trades threads per block for blocks.
constexpr unsigned kStaged = 32;

__global__ void staged_scale_kernel(const float* in, float* out, unsigned n) {
  extern __shared__ float tile[];
  const std::size_t base = std::size_t{blockIdx.x} * blockDim.x * kStaged;
  for (unsigned k = 0; k < kStaged; ++k) {
    const std::size_t i = base + k * blockDim.x + threadIdx.x;
    tile[k * blockDim.x + threadIdx.x] = i < n ? in[i] : 0.0f;
  }
  __syncthreads();  // the whole tile is loaded before any thread reads its neighbour's element
  for (unsigned k = 0; k < kStaged; ++k) {
    const std::size_t i = base + k * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * tile[k * blockDim.x + (threadIdx.x + 1) % blockDim.x] + 1.0f;
  }
}

// ---- The kernels compared -----------------------------------------------------------------------

// A kernel, the dynamic shared memory a block of it asks for, and (timed rows) its elements per
// thread.
struct Case {
  SampleKernel kernel;
  DynamicBytes dynamic;        // bytes of dynamic shared memory for a block size
  unsigned items_per_thread;   // elements each thread handles (timed rows)
};

// The grader's kernels (sample_kernels.cuh), one of each kind of resource use: few registers, many,
// launch bounds, static, dynamic (opted in) and mixed shared memory, a carveout preference.
const std::vector<Case>& model_cases() {
  using namespace lab06_grader;
  static const std::vector<Case> cases = {
      {{"registers_kernel<2>", (const void*)registers_kernel<2>, -1, false}, {0, 0}, 1},
      {{"registers_kernel<60>", (const void*)registers_kernel<60>, -1, false}, {0, 0}, 1},
      {{"registers_kernel<130>", (const void*)registers_kernel<130>, -1, false}, {0, 0}, 1},
      {{"bounded_kernel<200,96,8>", (const void*)bounded_kernel<200, 96, 8>, -1, false}, {0, 0}, 1},
      {{"static_shared_kernel<33000>", (const void*)static_shared_kernel<33000>, -1, false},
       {0, 0}, 1},
      {{"dynamic_shared_kernel<1>_opted_in", (const void*)dynamic_shared_kernel<1>, -1, true},
       {0, 60000}, 1},
      {{"mixed_kernel<24,8192>", (const void*)mixed_kernel<24, 8192>, -1, false}, {0, 16384}, 1},
      {{"carveout_kernel<10>", (const void*)carveout_kernel<10>, 10, true}, {0, 2000}, 1},
  };
  return cases;
}

const std::vector<Case>& timed_cases() {
  static const std::vector<Case> cases = {
      {{"scale_kernel", (const void*)scale_kernel, -1, false}, {0, 0}, 1},
      {{"scale_kernel_max100", (const void*)scale_kernel_max100, -1, false}, {0, 0}, 1},
      {{"staged_scale_kernel", (const void*)staged_scale_kernel, -1, true},
       {kStaged * sizeof(float), 0}, kStaged},
  };
  return cases;
}

// ---- Helpers ------------------------------------------------------------------------------------

const DeviceSpec& device() {
  static const DeviceSpec spec = lab06::device_spec_from_device(0);
  return spec;
}

// yours / the API's, where 1.0 means agreement; both 0 agree, and anything against an API's 0 is
// infinitely off.
double agreement(double yours, double api) {
  if (api == 0) return yours == 0 ? 1.0 : INFINITY;
  return yours / api;
}

// Occupancy (resident warps / the SM's warp slots) of `blocks` resident blocks of `block` threads.
double occupancy_of(int blocks, int block) {
  const int warps = (block + device().warp_size - 1) / device().warp_size;
  return static_cast<double>(blocks * warps) / (device().max_threads_per_sm / device().warp_size);
}

// The API's blocks per SM (0 where it refuses, as the grader feeds it to the chooser).
int api_blocks(const void* func, int block, std::size_t dynamic) {
  return std::max(0, lab06_grader::driver_blocks(func, block, dynamic));
}

// The student's choice, with the driver as its occupancy calculator (as the grader's GPU test).
BlockChoice your_choice(const Case& c, const cudaFuncAttributes& attr) {
  const lab06::DynamicSharedFn dynamic = c.dynamic;
  return lab06::choose_block_size(
      device(), lab06::kernel_resources(attr), dynamic,
      [&](int block, std::size_t bytes) { return api_blocks(c.kernel.func, block, bytes); });
}

// What cudaOccupancyMaxPotentialBlockSizeVariableSMem chooses (block 0 when it refuses).
BlockChoice api_choice(const Case& c) {
  BlockChoice choice;
  if (cudaOccupancyMaxPotentialBlockSizeVariableSMem(&choice.min_grid_size, &choice.block_size,
                                                     c.kernel.func, c.dynamic, 0) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky
    return {};
  }
  choice.blocks_per_sm = api_blocks(c.kernel.func, choice.block_size, c.dynamic(choice.block_size));
  return choice;
}

// `value` with 3 decimals.
std::string fixed(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", value);
  return text;
}

std::string unfinished(const char* function, const char* step) {
  return std::string("your ") + function + " returned 0: is TODO(" + step + ") done?";
}

// ---- Benchmarks ---------------------------------------------------------------------------------

// Your occupancy() for blocks of `block` against the API's.
void model_vs_api(benchmark::State& state, const Case& c, const cudaFuncAttributes& attr,
                  int block) {
  const std::size_t dynamic = c.dynamic(block);
  const lab06::KernelResources resources = lab06::kernel_resources(attr);
  Occupancy yours;
  for (auto _ : state) {
    yours = lab06::occupancy(device(), resources, block, dynamic);
    benchmark::DoNotOptimize(yours);
  }
  const int api = api_blocks(c.kernel.func, block, dynamic);
  const double api_occupancy = occupancy_of(api, block);
  state.counters["blocks"] = yours.blocks_per_sm;
  state.counters["api_blocks"] = api;
  state.counters["blocks_ratio"] = agreement(yours.blocks_per_sm, api);
  state.counters["occupancy"] = yours.occupancy;
  state.counters["api_occupancy"] = api_occupancy;
  state.counters["occupancy_ratio"] = agreement(yours.occupancy, api_occupancy);
  const std::string case_text = "dynamic " + std::to_string(dynamic) + " B; ";
  if (yours.blocks_per_sm == 0 && api > 0)
    state.SetLabel(case_text + unfinished("occupancy()", "occupancy.2"));
  else if (yours.blocks_per_sm != api)
    state.SetLabel(case_text + "DISAGREE: yours " + std::to_string(yours.blocks_per_sm) +
                   " blocks/SM, the API's " + std::to_string(api));
  else
    state.SetLabel(case_text + "limited by " + lab06::to_string(yours.limited_by));
}

// Your choose_block_size() against cudaOccupancyMaxPotentialBlockSize.
void chooser_vs_api(benchmark::State& state, const Case& c, const cudaFuncAttributes& attr) {
  BlockChoice yours;
  for (auto _ : state) {
    yours = your_choice(c, attr);
    benchmark::DoNotOptimize(yours);
  }
  const BlockChoice api = api_choice(c);
  state.counters["block"] = yours.block_size;
  state.counters["api_block"] = api.block_size;
  state.counters["block_ratio"] = agreement(yours.block_size, api.block_size);
  state.counters["min_grid_ratio"] = agreement(yours.min_grid_size, api.min_grid_size);
  if (yours.block_size == 0 && api.block_size > 0)
    state.SetLabel(unfinished("choose_block_size()", "occupancy.3"));
  else
    state.SetLabel("yours " + std::to_string(yours.block_size) + " x " +
                   std::to_string(yours.blocks_per_sm) + " blocks/SM, the API's " +
                   std::to_string(api.block_size) + " x " + std::to_string(api.blocks_per_sm));
}

// A memory-bound kernel over 2^26 floats at your chosen block size, against the API's choice.
void chosen_block_time(benchmark::State& state, const Case& c, const cudaFuncAttributes& attr) {
  const BlockChoice yours = your_choice(c, attr);
  const BlockChoice api = api_choice(c);
  std::string problem;
  if (yours.block_size == 0)
    problem = unfinished("choose_block_size()", "occupancy.3") + " (nothing to time)";
  else if (yours.block_size < 0 || yours.block_size > attr.maxThreadsPerBlock ||
           api_blocks(c.kernel.func, yours.block_size, c.dynamic(yours.block_size)) == 0)
    problem = "your choose_block_size() chose blocks of " + std::to_string(yours.block_size) +
              " threads, which " + c.kernel.name + " cannot launch (at most " +
              std::to_string(attr.maxThreadsPerBlock) + " threads and " +
              std::to_string(attr.maxDynamicSharedSizeBytes) + " B of dynamic shared memory "
              "per block)";
  else if (api.block_size == 0)
    problem = "cudaOccupancyMaxPotentialBlockSize found no block size for " + c.kernel.name;
  if (!problem.empty()) {
    state.SkipWithError(problem.c_str());
    return;
  }

  const unsigned n = 1u << 26;
  kit::DeviceBuffer<float> in(n), out(n);
  KIT_CUDA_CHECK(cudaMemset(in.data(), 0, in.bytes()));  // values do not change a copy's speed
  // One run at `block` threads per block (the kernels differ only in their launch bounds and
  // shared memory, not in their arguments).
  auto run_with = [&](int block) {
    const unsigned per_block = static_cast<unsigned>(block) * c.items_per_thread;
    const dim3 grid((n + per_block - 1) / per_block);
    const std::size_t dynamic = c.dynamic(block);
    return [&, grid, block, dynamic](cudaStream_t stream) {
      const float* src = in.data();
      float* dst = out.data();
      unsigned count = n;
      void* args[] = {&src, &dst, &count};
      KIT_CUDA_CHECK(cudaLaunchKernel(c.kernel.func, grid, dim3(block), args, dynamic, stream));
    };
  };
  const double api_ms = kit::median_ms(run_with(api.block_size));
  const double ms = kit::bench_time_ms(state, run_with(yours.block_size));
  state.counters["block"] = yours.block_size;
  state.counters["api_block"] = api.block_size;
  state.counters["ms"] = ms;
  state.counters["api_ms"] = api_ms;
  state.counters["time_ratio"] = ms / api_ms;
  state.counters["GB/s"] = 2.0 * sizeof(float) * n / (ms * 1e-3) * 1e-9;
  // Your occupancy() at both block sizes launched here: kit.py profile 06 shows it next to the
  // occupancy Nsight Compute reads for the same launches.
  const lab06::KernelResources resources = lab06::kernel_resources(attr);
  for (const auto& [key, block] : {std::pair{"model_occupancy", yours.block_size},
                                   std::pair{"api_block_model_occupancy", api.block_size}})
    state.counters[key] = lab06::occupancy(device(), resources, block, c.dynamic(block)).occupancy;
  state.SetLabel("occupancy yours " + fixed(occupancy_of(yours.blocks_per_sm, yours.block_size)) +
                 ", the API's " + fixed(occupancy_of(api.blocks_per_sm, api.block_size)));
}

// Registers every row; runs once the GPU is known, because the rows are named by its kernels'
// attributes (the block sizes each kernel allows).
void register_benchmarks() {
  std::vector<cudaFuncAttributes> attrs;
  for (const Case& c : model_cases()) attrs.push_back(lab06_grader::prepare(c.kernel, device()));
  for (std::size_t k = 0; k < model_cases().size(); ++k) {
    const Case& c = model_cases()[k];
    const cudaFuncAttributes attr = attrs[k];
    // 256 threads (or the kernel's largest block, when smaller), and the kernel's largest block.
    std::vector<int> blocks = {std::min(256, attr.maxThreadsPerBlock), attr.maxThreadsPerBlock};
    blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
    for (int block : blocks)
      benchmark::RegisterBenchmark(
          ("BM_Model/" + c.kernel.name + "/" + std::to_string(block)).c_str(),
          [&c, attr, block](benchmark::State& state) { model_vs_api(state, c, attr, block); });
  }
  for (std::size_t k = 0; k < model_cases().size(); ++k) {
    const Case& c = model_cases()[k];
    const cudaFuncAttributes attr = attrs[k];
    benchmark::RegisterBenchmark(
        ("BM_Chooser/" + c.kernel.name).c_str(),
        [&c, attr](benchmark::State& state) { chooser_vs_api(state, c, attr); })
        ->Unit(benchmark::kMicrosecond);
  }
  for (const Case& c : timed_cases()) {
    const cudaFuncAttributes attr = lab06_grader::prepare(c.kernel, device());
    benchmark::RegisterBenchmark(
        ("BM_ChosenBlock/" + c.kernel.name).c_str(),
        [&c, attr](benchmark::State& state) { chosen_block_time(state, c, attr); })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond)
        ->Iterations(3);
  }
}

}  // namespace

int main(int argc, char** argv) {
  kit::BenchHooks hooks;
  hooks.before_run = register_benchmarks;
  return kit::bench_main(argc, argv, hooks);
}
