#!/bin/sh
# Records one run of stencil3d.c under SMPI with time-independent tracing, then imports it as a gridcast
# profile directory (binary encoding). Compute is only what the program declares (smpi_execute_flops)
# because computation benchmarking is off, so the trace is the same on every machine.
#
#   ./record.sh NP NW OUT [ARGS...]   # writes the profile directory OUT (run.json + rank-*.gct);
#                                     # the program runs with arguments NW ARGS...
#   GRIDCAST=path/to/gridcast  # default: gridcast on PATH, else build/bin/gridcast of this checkout
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
NP="$1"; NW="$2"; OUT="$3"; shift 3
GRIDCAST="${GRIDCAST:-$(command -v gridcast || echo "$here/../../build/bin/gridcast")}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

smpicc -O2 -o "$work/stencil3d" "$here/stencil3d.c" -lm
i=0; while [ $i -lt "$NP" ]; do echo "node-$i"; i=$((i + 1)); done > "$work/hostfile"
(cd "$work" && smpirun -np "$NP" -platform "$here/platform.xml" -hostfile hostfile -trace-ti \
  --cfg=tracing/filename:trace.txt --cfg=smpi/simulate-computation:no \
  --log=root.thres:warning "./stencil3d" "$NW" "$@" > stdout.txt)
"$GRIDCAST" import tit "$work/trace.txt" --nw "$NW" --out "$OUT" --encoding binary > /dev/null
sed -n 1p "$work/stdout.txt"
