#!/bin/bash
# The GPU memory-system suite on a machine with an NVIDIA GPU (written for the H100, sm_90), in one
# command from the repository root:  OUT=/some/dir bench/gpu-cache/run-on-device.sh
# Needs nvcc and ncu (Nsight Compute) only; nothing of gridcast is built here. It
#   1. records nvidia-smi, nvcc and ncu versions            -> $OUT/versions.txt
#   2. builds suite.cu (nvcc -O3 -arch=sm_90 -std=c++17)    -> $OUT/build.log (ptxas registers)
#   3. checks the instrumented kernels' addresses against the host generator's, thread by thread
#                                                           -> $OUT/address_check.txt (MATCH/MISMATCH)
#   4. profiles the uninstrumented kernels once with ncu    -> $OUT/ncu.csv, $OUT/ncu-stderr.txt,
#      (caches flushed before each kernel: ncu's default)      $OUT/bases.txt (that run's buffer bases)
#   5. a summary of every step                              -> $OUT/summary.txt
# Each step has a time limit (build 150 s, check 100 s, ncu 200 s; ncu runs twice only when the first run
# refused a metric within a minute), so the whole stays under 8.5 minutes even when a step hangs; about
# 2 minutes on an H100 when all goes well.
# A failing step is noted and the next one still runs; whatever was measured stays in $OUT. Exit status
# 0 when every step succeeded, 1 otherwise. bench/gpu-cache/compare.py turns $OUT into the table.
#   --dry-run   checks what it can without a GPU (the sources compile, the tools, the metric names).
# SIZE=ci runs the suite at its CI sizes (working sets of a few hundred KB, all in L2) instead of the
# device sizes (5 to 185 MB): a second regime to check the model on.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dry=0
if [ "${1:-}" = "--dry-run" ]; then dry=1; fi
OUT=${OUT:-$PWD/gpu-cache-out}
size=${SIZE:-device}
mkdir -p "$OUT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
summary="$OUT/summary.txt"
[ "$dry" = 1 ] && summary="$work/summary.txt"
: > "$summary"
note() { echo "[gpu-cache $(date -u +%H:%M:%S)] $*" | tee -a "$summary"; }

for p in /usr/local/cuda/bin /usr/lib/cuda/bin; do
  if [ -d "$p" ]; then PATH="$PATH:$p"; fi
done
NCU=$(command -v ncu || true)
if [ -z "$NCU" ]; then
  NCU=$(ls -d /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda*/nsight-compute*/ncu 2>/dev/null | tail -n 1 || true)
fi

# The counters the comparison reads (GPUCACHE.md), the kernel time and clock, the sector counts behind
# the hit rates (to tell a coalescing difference from a cache difference), and the L2 sectors that come
# from the SMs' L1TEX units (loads, stores, atomics: what a memory trace holds, without the instruction
# and constant fetches that also go through L2 and dominate a kernel of a few microseconds).
metrics=(l1tex__t_sector_hit_rate.pct l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate.pct
  lts__t_sector_hit_rate.pct lts__t_sector_op_read_hit_rate.pct lts__t_sectors_op_read.sum
  lts__t_sectors_op_write.sum dram__sectors_read.sum dram__sectors_write.sum gpu__time_duration.sum
  sm__cycles_elapsed.avg.per_second l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
  l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum lts__t_sectors_op_atom.sum lts__t_sectors_op_red.sum
  lts__t_sectors_srcunit_tex.sum lts__t_sectors_srcunit_tex_lookup_hit.sum)

# Keeps the metrics this ncu knows on this GPU (one unknown name would make ncu profile nothing). When
# the list is not understood (fewer than half of ours found in it), all are kept.
filter_metrics() {
  local known kept=() dropped=() m
  known=$(timeout 30 "$NCU" --query-metrics 2>/dev/null || true)
  for m in "${metrics[@]}"; do
    if printf '%s\n' "$known" | grep -q "^${m%%.*}[[:space:]]"; then kept+=("$m"); else dropped+=("$m"); fi
  done
  if [ "${#kept[@]}" -lt $(( ${#metrics[@]} / 2 )) ]; then
    note "ncu --query-metrics: list not understood ($(printf '%s\n' "$known" | wc -l) lines): keeping all ${#metrics[@]} metrics"
    return 0
  fi
  [ "${#dropped[@]}" = 0 ] || note "metrics not on this GPU, dropped: ${dropped[*]}"
  metrics=("${kept[@]}")
}

{
  echo "== nvidia-smi"; nvidia-smi 2>&1 || true
  echo "== nvcc"; nvcc --version 2>&1 || true
  echo "== ncu ($NCU)"; [ -n "$NCU" ] && "$NCU" --version 2>&1 || true
} > "$( [ "$dry" = 1 ] && echo "$work" || echo "$OUT")/versions.txt"
note "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total,mig.mode.current --format=csv,noheader 2>&1 | head -n 1 || true)"
note "nvcc: $(nvcc --version 2>&1 | grep -i release | head -n 1 || true)"
note "ncu: ${NCU:-none} $([ -n "$NCU" ] && "$NCU" --version 2>&1 | tail -n 1 || true)"

# Host code alone (what gen_traces shares with suite.cu): g++ must take it without CUDA.
printf '#include "suite.hpp"\n#include "warp_group.hpp"\nint main() { return gcbench::make_case("gemm", gcbench::SizeClass::Ci).launches.size() == 1 ? 0 : 1; }\n' > "$work/host.cpp"
if g++ -std=c++17 -O1 -Wall -I"$here" -o "$work/host" "$work/host.cpp" > "$work/host.log" 2>&1 && "$work/host"; then
  note "host code compiles with g++ alone: ok"
else
  note "host code does not compile with g++:"; cat "$work/host.log"; status=1
fi

build_log="$OUT/build.log"
[ "$dry" = 1 ] && build_log="$work/build.log"
if ! command -v nvcc > /dev/null 2>&1; then
  note "nvcc not found"; status=1
elif timeout 150 nvcc -O3 -arch=sm_90 -std=c++17 -Xptxas -v -o "$work/suite" "$here/suite.cu" > "$build_log" 2>&1; then
  note "suite.cu built: $(grep -c 'Used [0-9]* registers' "$build_log" || true) kernels"
else
  note "suite.cu failed to build (see build.log):"; tail -n 20 "$build_log"; status=1
fi

if [ -z "$NCU" ]; then
  note "ncu not found"; status=1
else
  filter_metrics
fi
metric_list=$(IFS=,; echo "${metrics[*]}")
ncu_cmd=("$NCU" --clock-control none --csv --page raw --metrics "$metric_list" "$work/suite" --plain all --size "$size" --bases-out "$OUT/bases.txt")

if [ "$dry" = 1 ]; then
  note "dry run: would run $work/suite --check all > $OUT/address_check.txt"
  note "dry run: would run ${ncu_cmd[*]} > $OUT/ncu.csv"
  note "dry run: $([ "$status" = 0 ] && echo ok || echo FAILED)"
  exit "$status"
fi

if [ -x "$work/suite" ]; then
  rc=0
  timeout 100 "$work/suite" --check all --size "$size" > "$OUT/address_check.txt" 2>&1 || rc=$?
  note "address check (exit $rc): $(grep -c '^MATCH' "$OUT/address_check.txt" || true) MATCH, $(grep -c '^MISMATCH' "$OUT/address_check.txt" || true) MISMATCH, $(grep -c '^ERROR' "$OUT/address_check.txt" || true) ERROR"
  grep -E '^(MISMATCH|ERROR|  first)' "$OUT/address_check.txt" | tee -a "$summary" || true
  [ "$rc" = 0 ] || status=1
  if [ -n "$NCU" ]; then
    rc=0
    note "running: ${ncu_cmd[*]}"
    started=$SECONDS
    timeout 200 "${ncu_cmd[@]}" > "$OUT/ncu.csv" 2> "$OUT/ncu-stderr.txt" || rc=$?
    rows=$(grep -c '"k_' "$OUT/ncu.csv" || true)
    if [ "$rows" = 0 ] && [ $((SECONDS - started)) -lt 60 ] && grep -qi 'metric' "$OUT/ncu.csv" "$OUT/ncu-stderr.txt"; then
      # A metric this ncu refuses makes it profile nothing, quickly: once more with the essential ones.
      grep -i 'metric' "$OUT/ncu.csv" "$OUT/ncu-stderr.txt" | head -n 5 | tee -a "$summary" || true
      ncu_cmd=("$NCU" --clock-control none --csv --page raw --metrics
        l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct,dram__sectors_read.sum,dram__sectors_write.sum,gpu__time_duration.sum
        "$work/suite" --plain all --size "$size" --bases-out "$OUT/bases.txt")
      note "no kernel profiled: once more with the essential metrics: ${ncu_cmd[*]}"
      rc=0
      timeout 150 "${ncu_cmd[@]}" > "$OUT/ncu.csv" 2> "$OUT/ncu-stderr.txt" || rc=$?
      rows=$(grep -c '"k_' "$OUT/ncu.csv" || true)
    fi
    note "ncu (exit $rc): $rows kernel rows in ncu.csv (16 expected)"
    grep -E 'ERR|rror|WARN' "$OUT/ncu-stderr.txt" "$OUT/ncu.csv" | head -n 20 | tee -a "$summary" || true
    [ "$rc" = 0 ] && [ "$rows" -ge 16 ] || status=1
  fi
fi
note "done: $([ "$status" = 0 ] && echo ok || echo 'with failures (see above)'); files in $OUT: $(ls "$OUT" | tr '\n' ' ')"
exit "$status"
