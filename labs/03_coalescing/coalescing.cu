// Lab 03, memory coalescing: the same data moved in a fast order and a slow one. Particles go
// from an array of structs to a struct of arrays, a matrix multiply gets the thread mapping that
// lets a warp read neighbouring addresses, and a transpose goes from naive to a padded
// shared-memory tile.
//
// Edit the TODO regions here and in coalescing_math.cuh, then grade:
//     python3 grader/kit.py grade 03
// The handout (docs/labs/03_coalescing.md) explains each step; `python3 grader/kit.py hint 03 1`
// gives hints one at a time.
#include "coalescing.h"
#include "kit/check.h"

namespace lab03 {

// ---- Step 1: array of structs to struct of arrays ---------------------------------------------

// `aos` is the AoS array seen as 4n plain floats: particle p's field f is aos[4 * p + f].
__global__ void aos_to_soa_kernel(unsigned n, const float* __restrict__ aos, ParticlesSoA soa) {
  // TODO(coalescing.1): copy the float that aos_to_soa_source picks for this thread into the array
  // of its field (field_array), at its particle. Threads past the 4n floats do nothing.
  // END(coalescing.1)
}

kit::Launch aos_to_soa(unsigned n, const Particle* d_aos, ParticlesSoA soa, cudaStream_t stream) {
  const kit::Launch launch = aos_to_soa_config(n);
  aos_to_soa_kernel<<<launch.grid, launch.block, 0, stream>>>(
      n, reinterpret_cast<const float*>(d_aos), soa);
  KIT_CHECK_LAUNCH("aos_to_soa_kernel");
  return launch;
}

__global__ void integrate_soa_kernel(unsigned n, float dt, ParticlesSoA soa) {
  // TODO(coalescing.1): x += vx * dt and y += vy * dt for this thread's particle, if it exists.
  // END(coalescing.1)
}

kit::Launch integrate_soa(unsigned n, float dt, ParticlesSoA soa, cudaStream_t stream) {
  const kit::Launch launch = integrate_config(n);
  integrate_soa_kernel<<<launch.grid, launch.block, 0, stream>>>(n, dt, soa);
  KIT_CHECK_LAUNCH("integrate_soa_kernel");
  return launch;
}

// Given, for comparison: each load of p[i].x by a warp spans 32 particles of 16 bytes, 512 bytes.
__global__ void integrate_aos_kernel(unsigned n, float dt, Particle* p) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    p[i].x += p[i].vx * dt;
    p[i].y += p[i].vy * dt;
  }
}

kit::Launch integrate_aos(unsigned n, float dt, Particle* d_aos, cudaStream_t stream) {
  const kit::Launch launch = integrate_config(n);
  integrate_aos_kernel<<<launch.grid, launch.block, 0, stream>>>(n, dt, d_aos);
  KIT_CHECK_LAUNCH("integrate_aos_kernel");
  return launch;
}

// ---- Step 2: the thread mapping of a matrix multiply -------------------------------------------

// Given: a correct matrix multiply with the bad mapping. Each thread computes one element of C as
// the dot product of a row of A and a column of B. Do not change it; write matmul_kernel below.
__global__ void matmul_bad_mapping_kernel(unsigned m, unsigned n, unsigned k,
                                          const float* __restrict__ a, const float* __restrict__ b,
                                          float* __restrict__ c) {
  const MatIndex e = matmul_element_bad(blockIdx, blockDim, threadIdx);
  if (e.row >= m || e.col >= n) return;
  float acc = 0.0f;
  for (unsigned i = 0; i < k; ++i) acc += a[std::size_t(e.row) * k + i] * b[std::size_t(i) * n + e.col];
  c[std::size_t(e.row) * n + e.col] = acc;
}

kit::Launch matmul_bad_mapping(unsigned m, unsigned n, unsigned k, const float* d_a,
                               const float* d_b, float* d_c, cudaStream_t stream) {
  const kit::Launch launch = matmul_bad_config(m, n);
  matmul_bad_mapping_kernel<<<launch.grid, launch.block, 0, stream>>>(m, n, k, d_a, d_b, d_c);
  KIT_CHECK_LAUNCH("matmul_bad_mapping_kernel");
  return launch;
}

__global__ void matmul_kernel(unsigned m, unsigned n, unsigned k, const float* __restrict__ a,
                              const float* __restrict__ b, float* __restrict__ c) {
  // TODO(coalescing.2): the same dot product as matmul_bad_mapping_kernel, for the element your
  // matmul_element picks. The arithmetic does not change; only which thread does what.
  // END(coalescing.2)
}

kit::Launch matmul(unsigned m, unsigned n, unsigned k, const float* d_a, const float* d_b,
                   float* d_c, cudaStream_t stream) {
  const kit::Launch launch = matmul_config(m, n);
  matmul_kernel<<<launch.grid, launch.block, 0, stream>>>(m, n, k, d_a, d_b, d_c);
  KIT_CHECK_LAUNCH("matmul_kernel");
  return launch;
}

// ---- Step 3: matrix transpose ------------------------------------------------------------------

// out (cols x rows) = transpose of in (rows x cols), one element per thread.
__global__ void transpose_naive_kernel(unsigned rows, unsigned cols, const float* __restrict__ in,
                                       float* __restrict__ out) {
  // TODO(coalescing.3): move the element naive_transpose_element picks to its transposed_offset,
  // if it lies inside the matrix.
  // END(coalescing.3)
}

kit::Launch transpose_naive(unsigned rows, unsigned cols, const float* d_in, float* d_out,
                            cudaStream_t stream) {
  const kit::Launch launch = transpose_naive_config(rows, cols);
  transpose_naive_kernel<<<launch.grid, launch.block, 0, stream>>>(rows, cols, d_in, d_out);
  KIT_CHECK_LAUNCH("transpose_naive_kernel");
  return launch;
}

// One block transposes one kTile x kTile tile through shared memory, `Pitch` floats per tile row:
// kUnpaddedPitch for transpose_tiled, kPaddedPitch for transpose_padded. Phase 1 loads the input
// tile into `tile` (pass by pass, tile_load); phase 2 writes it out transposed (tile_store).
template <unsigned Pitch>
__global__ void transpose_tiled_kernel(unsigned rows, unsigned cols, const float* __restrict__ in,
                                       float* __restrict__ out) {
  static_assert(Pitch >= kTile, "a tile row must hold kTile floats");
  // TODO(coalescing.3): declare the tile, `__shared__ float tile[kTile][Pitch];`. Phase 1: for each
  // pass, load the element tile_load names (if it lies inside the input) into its tile position.
  // Phase 2: for each pass, store the tile position tile_store names into its element of the
  // output (if it lies inside the output, which is cols x rows). Between the phases, threads read
  // what other threads wrote: synchronise, and say why in a comment.
  // END(coalescing.3)
}

kit::Launch transpose_tiled(unsigned rows, unsigned cols, const float* d_in, float* d_out,
                            cudaStream_t stream) {
  const kit::Launch launch = transpose_tiled_config(rows, cols);
  transpose_tiled_kernel<kUnpaddedPitch><<<launch.grid, launch.block, 0, stream>>>(rows, cols, d_in,
                                                                                  d_out);
  KIT_CHECK_LAUNCH("transpose_tiled_kernel<kUnpaddedPitch>");
  return launch;
}

kit::Launch transpose_padded(unsigned rows, unsigned cols, const float* d_in, float* d_out,
                             cudaStream_t stream) {
  const kit::Launch launch = transpose_tiled_config(rows, cols);
  transpose_tiled_kernel<kPaddedPitch><<<launch.grid, launch.block, 0, stream>>>(rows, cols, d_in,
                                                                                d_out);
  KIT_CHECK_LAUNCH("transpose_tiled_kernel<kPaddedPitch>");
  return launch;
}

}  // namespace lab03
