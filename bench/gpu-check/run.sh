#!/bin/sh
# Builds and runs bench/gpu-check/gpu_check.cu on the machine's GPU (docs/guides/gpu.md "Checked on a real
# GPU"). Without nvcc or without a GPU it says so and exits 0: nothing else of gridcast needs CUDA.
# Usage: bench/gpu-check/run.sh [OUT_DIR]   (default build/gpu-check; the JSON lines go to stdout and
# OUT_DIR/gpu-check.jsonl)
set -eu
here=$(dirname "$0")
out=${1:-build/gpu-check}
if ! command -v nvcc >/dev/null 2>&1; then
  for p in /usr/local/cuda/bin /usr/lib/cuda/bin; do [ -x "$p/nvcc" ] && PATH="$p:$PATH"; done
fi
if ! command -v nvcc >/dev/null 2>&1; then
  echo "gpu-check skipped: nvcc not found"
  exit 0
fi
if command -v nvidia-smi >/dev/null 2>&1 && ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check skipped: no GPU visible to nvidia-smi"
  exit 0
fi
mkdir -p "$out"
nvcc -O2 -std=c++17 -o "$out/gpu_check" "$here/gpu_check.cu"
"$out/gpu_check" | tee "$out/gpu-check.jsonl"
