// Lab 02's student functions as the judge calls them (kit/remote.h): every function of bounds.h
// that a test calls (test_bounds.cu and hidden/), with its exact signature, plus the grader's probe
// that runs beside the student's code (probes.cu) and its codec.
//
// bounds.h is the lab's given interface (not a student file), so the judge includes it as it is;
// lab02::ceil_div and the constants of bounds.h are the kit's, compiled into the judge.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "bounds.h"
#include "kit/launch.h"
#include "kit/remote.h"

namespace lab02_probe {

/// How lab02::scale_shift_with_config ended, as seen in the process that ran it.
enum class Ended : std::uint8_t {
  returned = 1,          // returned normally
  invalid_argument = 2,  // threw std::invalid_argument (validate_launch refused the configuration)
  cuda_error = 3,        // threw kit::CudaError (the launch check reported a refused launch)
  other_exception = 4,   // threw another std::exception
};

/// What one call of lab02::scale_shift_with_config did in the worker.
struct WithConfigOutcome {
  Ended ended = Ended::returned;
  std::string what;                        // the exception's message (empty when it returned)
  kit::Launch launch;                      // what it returned (when it returned)
  cudaError_t left_pending = cudaSuccess;  // cudaGetLastError() in the worker right after the call
};

/// Calls lab02::scale_shift_with_config(n, a, b, d_in, d_out, grid, block, shared_bytes) in the
/// worker and reports how it ended and the CUDA error it left pending there (read, and so cleared,
/// with cudaGetLastError() right after the call, as the tests of step 4 did in one process).
/// Step 4's tests need this because the judge is another process: its own cudaGetLastError() never
/// sees a launch the student's code attempted, and kit::CudaError reaches the judge as a plain
/// std::runtime_error. A non-std exception is not caught (the judge reports it as before).
WithConfigOutcome scale_shift_with_config_outcome(unsigned n, float a, float b, const float* d_in,
                                                  float* d_out, dim3 grid, dim3 block,
                                                  std::size_t shared_bytes);

}  // namespace lab02_probe

namespace kit::remote {

/// WithConfigOutcome holds a std::string, so it travels field by field.
template <>
struct Codec<lab02_probe::WithConfigOutcome> {
  static void put(Writer& w, const lab02_probe::WithConfigOutcome& o) {
    w.pod(o.ended);
    w.text(o.what);
    w.pod(o.launch);
    w.pod(o.left_pending);
  }
  static lab02_probe::WithConfigOutcome get(Reader& r) {
    lab02_probe::WithConfigOutcome o;
    o.ended = r.pod<lab02_probe::Ended>();
    o.what = r.text();
    o.launch = r.pod<kit::Launch>();
    o.left_pending = r.pod<cudaError_t>();
    return o;
  }
};

}  // namespace kit::remote

#define KIT_LAB_REMOTE(X)                                                                         \
  X(lab02, scale_shift, kit::Launch, (unsigned, float, float, const float*, float*, cudaStream_t)) \
  X(lab02, rank1_update, kit::Launch,                                                             \
    (unsigned, unsigned, const float*, const float*, const float*, float*, cudaStream_t))          \
  X(lab02, grid_stride_blocks, unsigned, (unsigned, unsigned, unsigned))                          \
  X(lab02, scale_shift_grid_stride, kit::Launch,                                                  \
    (unsigned, float, float, const float*, float*, unsigned, cudaStream_t))                        \
  X(lab02, validate_launch, void, (dim3, dim3))                                                   \
  X(lab02, scale_shift_with_config, kit::Launch,                                                  \
    (unsigned, float, float, const float*, float*, dim3, dim3, std::size_t, cudaStream_t))         \
  X(lab02, scale_shift_fast, kit::Launch,                                                         \
    (unsigned, float, float, const float*, float*, cudaStream_t))                                 \
  X(lab02_probe, scale_shift_with_config_outcome, lab02_probe::WithConfigOutcome,                 \
    (unsigned, float, float, const float*, float*, dim3, dim3, std::size_t))
