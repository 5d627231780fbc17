// Benchmark of lab 04: the TFLOP/s of each matrix multiply at 4096^3, and the ratios the grader's
// performance step uses: matmul_tiled and matmul_blocked against cuBLAS FP32 (pedantic, no TF32),
// matmul_tiled against the naive coalesced kernel.
//
//   build/bin/bench_04_tiling             your kernels
//   build/bin/bench_04_tiling_reference   the reference solution's
#include <benchmark/benchmark.h>

#include <functional>

#include "gemm_baselines.cuh"
#include "kit/bench_main.h"
#include "kit/buffers.h"
#include "kit/random.h"
#include "kit/timing.h"
#include "tiling.h"

namespace {

using Run = std::function<void(unsigned, const float*, const float*, float*, cudaStream_t)>;

// Operands of one square size, shared by every benchmark of that size.
struct Square {
  unsigned size;
  kit::DeviceBuffer<float> a, b, c;
  explicit Square(unsigned s) : size(s), a(std::size_t(s) * s), b(std::size_t(s) * s), c(std::size_t(s) * s) {
    kit::Random rng(1);
    a.upload(rng.floats(a.size(), -1.0f, 1.0f));
    b.upload(rng.floats(b.size(), -1.0f, 1.0f));
  }
  double ms(const Run& run) {
    return kit::median_ms([&](cudaStream_t s) { run(size, a.data(), b.data(), c.data(), s); }, 11, 2);
  }
};

lab04_grader::Cublas& cublas() {
  static lab04_grader::Cublas handle;
  return handle;
}

void cublas_run(unsigned s, const float* a, const float* b, float* c, cudaStream_t st) {
  cublas().sgemm(s, s, s, a, b, c, st);
}
void naive_run(unsigned s, const float* a, const float* b, float* c, cudaStream_t st) {
  lab04_grader::naive_matmul(s, s, s, a, b, c, st);
}
void tiled_run(unsigned s, const float* a, const float* b, float* c, cudaStream_t st) {
  lab04::matmul_tiled(s, s, s, a, b, c, st);
}
void blocked_run(unsigned s, const float* a, const float* b, float* c, cudaStream_t st) {
  lab04::matmul_blocked(s, s, s, a, b, c, st);
}

// One kernel's rate and its ratio to cuBLAS (and to the naive kernel), measured back to back.
void BM_Matmul(benchmark::State& state, Run run) {
  Square sq(static_cast<unsigned>(state.range(0)));
  const double flops = 2.0 * sq.size * sq.size * sq.size;
  const double cublas_ms = sq.ms(cublas_run), naive_ms = sq.ms(naive_run);
  const double ms = kit::bench_time_ms(
      state, [&](cudaStream_t s) { run(sq.size, sq.a.data(), sq.b.data(), sq.c.data(), s); }, 11, 2);
  state.counters["TFLOP/s"] = flops / (ms * 1e-3) * 1e-12;
  state.counters["vs_cublas"] = cublas_ms / ms;
  state.counters["vs_naive"] = naive_ms / ms;
}
BENCHMARK_CAPTURE(BM_Matmul, cublas_fp32, Run(cublas_run))->UseManualTime()->Iterations(1)->Arg(4096);
BENCHMARK_CAPTURE(BM_Matmul, naive, Run(naive_run))->UseManualTime()->Iterations(1)->Arg(4096);
BENCHMARK_CAPTURE(BM_Matmul, tiled, Run(tiled_run))->UseManualTime()->Iterations(1)->Arg(4096);
BENCHMARK_CAPTURE(BM_Matmul, blocked, Run(blocked_run))->UseManualTime()->Iterations(1)->Arg(1024)->Arg(2048)->Arg(4096);

}  // namespace

KIT_BENCHMARK_MAIN();
