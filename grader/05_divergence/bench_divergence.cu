// Benchmark of lab 05: the branch both ways, and every rung of the reduction ladder against
// cub::DeviceReduce::Sum, with the same ratios the performance step grades.
// BM_CubSum is CUB's own rate, the top of the ladder.
//
//   build/bin/bench_05_divergence             your kernels
//   build/bin/bench_05_divergence_reference   the reference solution's
#include <benchmark/benchmark.h>

#include "cub_sum.cuh"
#include "per_lane.cuh"
#include "divergence.h"
#include "kit/bench_main.h"
#include "kit/buffers.h"
#include "kit/check.h"
#include "kit/random.h"
#include "kit/timing.h"

namespace {

void BM_Branch(benchmark::State& state) {
  const unsigned n = 1u << 25;
  kit::Random rng(1);
  kit::DeviceBuffer<float> x(rng.floats(n, -1, 1)), out(n);
  const double per_lane_ms = kit::median_ms([&](cudaStream_t stream) {
    lab05_grader::branch_per_lane(n, x.data(), out.data(), stream);
  });
  const double aligned_ms = kit::bench_time_ms(state, [&](cudaStream_t stream) {
    lab05::branch_warp_aligned(n, x.data(), out.data(), stream);
  });
  state.counters["aligned_ms"] = aligned_ms;
  state.counters["per_lane_ms"] = per_lane_ms;
  state.counters["speedup"] = per_lane_ms / aligned_ms;
}
BENCHMARK(BM_Branch)->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(3);

using FloatReducer = kit::Launch (*)(const float*, unsigned, float*, float*, cudaStream_t);

// Every reduction sums 2^28 floats (1 GiB); bandwidth = bytes read / time.
constexpr unsigned kReduceN = 1u << 28;
double read_gbps(double ms) { return 4.0 * kReduceN / (ms * 1e-3) * 1e-9; }

// Bandwidth of one reduction, and its ratio to CUB's.
void reduce_benchmark(benchmark::State& state, FloatReducer reduce) {
  const unsigned n = kReduceN;
  kit::DeviceBuffer<float> in(n), scratch(lab05::reduce_scratch_elements(n)), out(1), cub_out(1);
  KIT_CUDA_CHECK(cudaMemset(in.data(), 0, in.bytes()));  // values do not change a sum's speed
  lab05_grader::CubSum cub_sum(in.data(), cub_out.data(), n);
  const double cub_ms = kit::median_ms([&](cudaStream_t stream) { cub_sum.run(stream); });
  const double ms = kit::bench_time_ms(state, [&](cudaStream_t stream) {
    reduce(in.data(), n, out.data(), scratch.data(), stream);
  });
  state.counters["GB/s"] = read_gbps(ms);
  state.counters["cub_GB/s"] = read_gbps(cub_ms);
  state.counters["cub_ratio"] = cub_ms / ms;
}

// The ceiling alone: cub::DeviceReduce::Sum, the top of the ladder.
void BM_CubSum(benchmark::State& state) {
  kit::DeviceBuffer<float> in(kReduceN), out(1);
  KIT_CUDA_CHECK(cudaMemset(in.data(), 0, in.bytes()));
  lab05_grader::CubSum cub_sum(in.data(), out.data(), kReduceN);
  const double ms = kit::bench_time_ms(
      state, [&](cudaStream_t stream) { cub_sum.run(stream); });
  state.counters["GB/s"] = read_gbps(ms);
}

BENCHMARK_CAPTURE(reduce_benchmark, interleaved, FloatReducer(lab05::reduce_interleaved))
    ->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(1);
BENCHMARK_CAPTURE(reduce_benchmark, sequential, FloatReducer(lab05::reduce_sequential))
    ->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(1);
BENCHMARK_CAPTURE(reduce_benchmark, shuffle, FloatReducer(lab05::reduce_shuffle))
    ->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(1);
BENCHMARK_CAPTURE(reduce_benchmark, grid_stride, FloatReducer(lab05::reduce_grid_stride))
    ->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(1);
BENCHMARK_CAPTURE(reduce_benchmark, best, FloatReducer(lab05::reduce_best))
    ->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(1);
BENCHMARK(BM_CubSum)
    ->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(1);

}  // namespace

KIT_BENCHMARK_MAIN();
