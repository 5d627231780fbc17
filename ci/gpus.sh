# Shared by ci/selftest-gpus and ci/mutate-gpus (sourced, not run).

# Fills the array `gpus` with the GPUs to use: those CUDA_VISIBLE_DEVICES lists, else every GPU
# nvidia-smi sees (none: empty).
list_gpus() {
  gpus=()
  if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
    IFS=, read -r -a gpus <<< "$CUDA_VISIBLE_DEVICES"
  else
    mapfile -t gpus < <(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null)
  fi
}

# Runs a command on one GPU: CUDA_VISIBLE_DEVICES=GPU and a TMPDIR of that GPU's own. ncu's lock
# file lives beneath TMPDIR (TMPDIR/nvidia/nsight_compute), and one lock for the whole machine
# would make counter tests on different GPUs wait for each other. An empty GPU runs the command
# as it is (no GPU to choose).
on_gpu() {  # gpu command...
  local gpu="$1"
  shift
  if [ -z "$gpu" ]; then
    PYTHONUNBUFFERED=1 "$@"
    return
  fi
  local tmp="${TMPDIR:-/tmp}/kit-gpu-$gpu"
  mkdir -p "$tmp"
  TMPDIR="$tmp" CUDA_VISIBLE_DEVICES="$gpu" PYTHONUNBUFFERED=1 "$@"
}
