#!/bin/bash
# Runs on a machine with a CUDA GPU (and nvcc, Open MPI): builds gpu_app.cu, measures it (3 runs per
# configuration), calibrates the machine with `gridcast calibrate`, and profiles one run of each
# configuration with `gridcast profile`. Everything lands in $OUT (default ./gpu-real-out).
# GRIDCAST is the gridcast program (default build/bin/gridcast); its libgridcast-hook.so sits in ../lib.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/gpu-real-out}
GRIDCAST=${GRIDCAST:-$PWD/build/bin/gridcast}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
# -cudart shared: the hook sees the CUDA runtime only through the dynamic linker.
nvcc -O2 -cudart shared -o "$work/gpu_app" "$here/gpu_app.cu" $(mpicxx --showme:compile) $(mpicxx --showme:link)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/gpu.txt"
# name np nx ny iters work bulk_MiB
configs=("np1 1 8192 2048 200 2000 256" "np2 2 8192 1024 200 2000 256")
for c in "${configs[@]}"; do
  set -- $c
  name=$1; np=$2; shift 2
  for rep in 1 2 3; do
    mpirun --allow-run-as-root -np "$np" "$work/gpu_app" "$@" | tee -a "$OUT/measured-$name.txt"
    /usr/bin/time -f "wall_s %e" -a -o "$OUT/wall-$name.txt" mpirun --allow-run-as-root -np "$np" "$work/gpu_app" "$@" > /dev/null
  done
done
"$GRIDCAST" calibrate -o "$OUT/calibration.json" --mpirun "mpirun --allow-run-as-root" > "$OUT/calibrate.log" 2>&1 || echo "calibrate failed: see calibrate.log"
for c in "${configs[@]}"; do
  set -- $c
  name=$1; np=$2; shift 2
  cal=()
  [ -f "$OUT/calibration.json" ] && cal=(--calibration "$OUT/calibration.json")
  "$GRIDCAST" profile --nw $(( $2 * $3 )) --out "$OUT/profile-$name" "${cal[@]}" -- \
    mpirun --allow-run-as-root -np "$np" "$work/gpu_app" "$@" 2>&1 | tee "$OUT/profile-$name.log"
done
