// Lab 02's probe: grader code that runs in the worker (kit/remote.h), beside the student's code.
// It only reports what the student's code did (what it threw, what CUDA error it left pending in
// its own process); every verdict is the judge's (test_bounds.cu).
#include <stdexcept>

#include "kit/check.h"
#include "remote.h"

lab02_probe::WithConfigOutcome lab02_probe::scale_shift_with_config_outcome(
    unsigned n, float a, float b, const float* d_in, float* d_out, dim3 grid, dim3 block,
    std::size_t shared_bytes) {
  WithConfigOutcome outcome;
  try {
    outcome.launch = lab02::scale_shift_with_config(n, a, b, d_in, d_out, grid, block, shared_bytes);
    outcome.ended = Ended::returned;
  } catch (const std::invalid_argument& e) {
    outcome.ended = Ended::invalid_argument;
    outcome.what = e.what();
  } catch (const kit::CudaError& e) {
    outcome.ended = Ended::cuda_error;
    outcome.what = e.what();
  } catch (const std::exception& e) {
    outcome.ended = Ended::other_exception;
    outcome.what = e.what();
  }
  // Also clears it, so the worker's own check after this call reports only what is still wrong
  // (a fault of a kernel that did run).
  outcome.left_pending = cudaGetLastError();
  return outcome;
}
