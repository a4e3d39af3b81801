#!/bin/sh
# Records one HPL run under SMPI with time-independent tracing and imports it as a gridcast profile
# directory (binary encoding). HPL is built by build.sh (source fetched from Debian by fetch-source.sh).
# Computation benchmarking is off (smpi/simulate-computation:no): HPL's BLAS runs for real, so the
# factorization and its pivots are HPL's own, but takes no simulated time, so the trace holds the calls
# only and is the same on every machine.
#
#   ./record.sh NP N OUT [P Q]   # N: HPL's matrix order (the profile's nw); P x Q: HPL's process grid,
#                                # by default MPI_Dims_create(NP, 2)'s (P >= Q), row-major
#   GRIDCAST=path/to/gridcast    # default: gridcast on PATH, else build/bin/gridcast of this checkout
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
[ $# -eq 3 ] || [ $# -eq 5 ] || { echo "usage: record.sh NP N OUT [P Q]" >&2; exit 1; }
NP="$1"; N="$2"; OUT="$3"
GRIDCAST="${GRIDCAST:-$(command -v gridcast || echo "$here/../../build/bin/gridcast")}"
if [ $# -ge 5 ]; then P="$4"; Q="$5"
else
  # MPI_Dims_create(NP, 2): the most balanced factorisation, P >= Q (Q the largest divisor with Q*Q <= NP).
  Q=1; d=1; while [ $((d * d)) -le "$NP" ]; do [ $((NP % d)) -eq 0 ] && Q=$d; d=$((d + 1)); done; P=$((NP / Q))
fi
[ $((P * Q)) -eq "$NP" ] || { echo "record.sh: P x Q = $P x $Q is not NP = $NP ranks" >&2; exit 1; }
xhpl="$("$here/build.sh")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

sed -e "s/@N@/$N/" -e "s/@P@/$P/" -e "s/@Q@/$Q/" "$here/hpccinf.template" > "$work/hpccinf.txt"
i=0; while [ $i -lt "$NP" ]; do echo "node-$i"; i=$((i + 1)); done > "$work/hostfile"
(cd "$work" && smpirun -np "$NP" -platform "$here/../stencil3d/platform.xml" -hostfile hostfile -trace-ti \
  --cfg=tracing/filename:trace.txt --cfg=smpi/simulate-computation:no \
  --log=root.thres:critical "$xhpl" > stdout.txt)
# SMPI's TIT tracer does not write MPI_Iprobe; it writes the simulated cost of each probe (smpi/iprobe,
# 1e-4 s times the number of probes in a row, as an execution) as a compute burst. HPL declares no compute
# of its own here, so every compute line is one of the probes that HPL's panel broadcast polls with while
# it waits: SMPI's polling cost, whose number follows the simulated timing, not HPL's calls. They go.
for f in "$work"/trace.txt_files/*; do sed -i '/ compute /d' "$f"; done
grep -q passed "$work/stdout.txt" || { echo "record.sh: HPL did not pass at NP $NP N $N ($P x $Q):" >&2;
  cat "$work/stdout.txt" "$work/HPL.out" >&2 2>/dev/null; exit 1; }
"$GRIDCAST" import tit "$work/trace.txt" --nw "$N" --out "$OUT" --force --encoding binary > /dev/null
sed -n 1p "$work/stdout.txt"
