// Benchmark of lab 03: each kernel's rate, next to the rates it is compared with. The transposes
// are reported as GB/s and as a fraction of cudaMemcpy (the performance step's bar); the matrix
// multiplies as TFLOP/s; the particle step for AoS and SoA side by side.
// BM_StridedCopy times the kit's own kernel, not one of the lab's: what a
// stride between neighbouring threads costs.
//
//   build/bin/bench_03_coalescing             your kernels
//   build/bin/bench_03_coalescing_reference   the reference solution's
#include <benchmark/benchmark.h>

#include <functional>

#include "coalescing.h"
#include "kit/bench_main.h"
#include "kit/buffers.h"
#include "kit/check.h"
#include "kit/random.h"
#include "kit/timing.h"

namespace {

// Median milliseconds of `run` (11 runs after 2 warm-ups, L2 flushed before each), reported as one
// iteration.
double time_ms(benchmark::State& state, const std::function<void(cudaStream_t)>& run) {
  return kit::bench_time_ms(state, run, 11, 2);
}

void BM_Integrate(benchmark::State& state, bool soa) {
  const auto n = static_cast<unsigned>(state.range(0));
  kit::Random rng(1);
  const auto f = rng.floats(std::size_t(4) * n, -1, 1);
  kit::DeviceBuffer<float> aos(f), x(n), y(n), vx(n), vy(n);
  const lab03::ParticlesSoA p{x.data(), y.data(), vx.data(), vy.data()};
  lab03::aos_to_soa(n, reinterpret_cast<const lab03::Particle*>(aos.data()), p);
  const double ms = time_ms(state, [&](cudaStream_t s) {
    if (soa)
      lab03::integrate_soa(n, 0.01f, p, s);
    else
      lab03::integrate_aos(n, 0.01f, reinterpret_cast<lab03::Particle*>(aos.data()), s);
  });
  state.counters["GB/s"] = 24.0 * n / (ms * 1e-3) * 1e-9;  // 4 floats read, 2 written per particle
}
BENCHMARK_CAPTURE(BM_Integrate, aos, false)->UseManualTime()->Iterations(1)->Arg(1 << 24);
BENCHMARK_CAPTURE(BM_Integrate, soa, true)->UseManualTime()->Iterations(1)->Arg(1 << 24);

using TransposeFn = kit::Launch (*)(unsigned, unsigned, const float*, float*, cudaStream_t);

void BM_Transpose(benchmark::State& state, TransposeFn transpose) {
  const auto size = static_cast<unsigned>(state.range(0));
  const std::size_t n = std::size_t(size) * size;
  kit::Random rng(1);
  kit::DeviceBuffer<float> in(rng.floats(n, -1, 1)), out(n);
  const kit::Timed copy = kit::device_copy_ceiling(in.data(), out.data(), n * sizeof(float));
  const double copy_ms = kit::median_ms(copy.run, 11, 2);
  const double ms = time_ms(state, [&](cudaStream_t s) { transpose(size, size, in.data(), out.data(), s); });
  state.counters["GB/s"] = 2.0 * n * sizeof(float) / (ms * 1e-3) * 1e-9;
  state.counters["copy_ratio"] = copy_ms / ms;
}
BENCHMARK_CAPTURE(BM_Transpose, naive, lab03::transpose_naive)->UseManualTime()->Iterations(1)->Arg(8192);
BENCHMARK_CAPTURE(BM_Transpose, tiled, lab03::transpose_tiled)->UseManualTime()->Iterations(1)->Arg(8192);
BENCHMARK_CAPTURE(BM_Transpose, padded, lab03::transpose_padded)->UseManualTime()->Iterations(1)->Arg(8192);

using MatmulFn = kit::Launch (*)(unsigned, unsigned, unsigned, const float*, const float*, float*,
                                 cudaStream_t);

void BM_Matmul(benchmark::State& state, MatmulFn matmul) {
  const auto s = static_cast<unsigned>(state.range(0));
  const std::size_t n = std::size_t(s) * s;
  kit::Random rng(1);
  kit::DeviceBuffer<float> a(rng.floats(n, -1, 1)), b(rng.floats(n, -1, 1)), c(n);
  const double ms = time_ms(state, [&](cudaStream_t st) { matmul(s, s, s, a.data(), b.data(), c.data(), st); });
  state.counters["TFLOP/s"] = 2.0 * s * s * s / (ms * 1e-3) * 1e-12;
}
BENCHMARK_CAPTURE(BM_Matmul, bad_mapping, lab03::matmul_bad_mapping)->UseManualTime()->Iterations(1)->Arg(2048);
BENCHMARK_CAPTURE(BM_Matmul, fixed_mapping, lab03::matmul)->UseManualTime()->Iterations(1)->Arg(2048);

// ---- What a stride costs (a kit kernel, not part of the lab) ----

// out[i] = in[i * stride]: neighbouring threads read floats `stride` apart
// and write neighbouring floats. From stride 8 on, each lane's 4 bytes sit
// in a 32-byte sector of their own.
__global__ void strided_copy_kernel(const float* __restrict__ in,
                                    float* __restrict__ out, unsigned n,
                                    unsigned stride) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[std::size_t(i) * stride];
}

// Copies 2^24 floats read with a stride of range(0) elements. GB/s counts
// the bytes used (4 read and 4 written per element), not the sectors moved;
// copy_ratio is that rate as a fraction of cudaMemcpy's over the same bytes,
// measured just before.
void BM_StridedCopy(benchmark::State& state) {
  const unsigned n = 1u << 24, block = 256;
  const auto stride = static_cast<unsigned>(state.range(0));
  kit::DeviceBuffer<float> in(std::size_t(n) * stride), out(n);
  KIT_CUDA_CHECK(cudaMemset(in.data(), 0, in.bytes()));  // values: speed only
  const kit::Timed copy =
      kit::device_copy_ceiling(in.data(), out.data(), out.bytes());
  const double copy_ms = kit::median_ms(copy.run, 11, 2);
  const double ms = time_ms(state, [&](cudaStream_t s) {
    strided_copy_kernel<<<(n + block - 1) / block, block, 0, s>>>(
        in.data(), out.data(), n, stride);
    KIT_CHECK_LAUNCH("strided_copy_kernel");
  });
  state.counters["GB/s"] = copy.work / (ms * 1e-3) * 1e-9;
  state.counters["copy_GB/s"] = copy.work / (copy_ms * 1e-3) * 1e-9;
  state.counters["copy_ratio"] = copy_ms / ms;
}
BENCHMARK(BM_StridedCopy)
    ->UseManualTime()
    ->Iterations(1)
    ->ArgName("stride")
    ->RangeMultiplier(2)
    ->Range(1, 32);

}  // namespace

KIT_BENCHMARK_MAIN();
