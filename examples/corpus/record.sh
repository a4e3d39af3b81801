#!/bin/sh
# Records one run of a corpus program under SMPI with time-independent tracing and imports it as a
# gridcast profile directory (binary encoding), like scripts/record-smpi.sh does for the examples.
#
#   examples/corpus/record.sh NAME NP NW OUTDIR [ARGS...]
#       builds NAME/NAME.c with smpicc, runs it (arguments NW ARGS...) with `smpirun -trace-ti` on a
#       generated NP-host cluster (scripts/gen_cluster.py: one rank per host, 1 Gflop/s hosts on
#       1.25 GBps / 5 us links to a 100 GBps backbone, the examples' platform), imports the trace into
#       OUTDIR and prints the program's first line of output. Next to the profile, OUTDIR.smpi/ keeps
#       what the run used and measured: platform.xml, hostfile and smpirun.txt (SMPI's simulated time,
#       "Simulated time: T seconds"), so a prediction at this point can run on the same platform.
#   GRIDCAST=path/to/gridcast  # default: gridcast on PATH, else build/bin/gridcast of this checkout
# Computation benchmarking is off (smpi/simulate-computation:no): compute is only what the program
# declares with smpi_execute_flops, so the trace is the same on every machine.
set -eu
if [ $# -lt 4 ]; then
  echo "usage: examples/corpus/record.sh NAME NP NW OUTDIR [ARGS...]" >&2
  exit 1
fi
here="$(cd "$(dirname "$0")" && pwd)"
name="$1"; np="$2"; nw="$3"; out="$4"; shift 4
if [ ! -f "$here/$name/$name.c" ]; then
  echo "record.sh: no corpus program $here/$name/$name.c" >&2
  exit 1
fi
gridcast="${GRIDCAST:-$(command -v gridcast || echo "$here/../../build/bin/gridcast")}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
case "$gridcast" in /*) ;; */*) gridcast="$PWD/$gridcast" ;; esac
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

smpicc -O2 -I "$here" -o "$work/$name" "$here/$name/$name.c" -lm
python3 "$here/../../scripts/gen_cluster.py" --hosts "$np" --bw 1.25GBps --lat 5us --backbone-bw 100GBps \
  --out-dir "$work" > /dev/null
(cd "$work" && smpirun -np "$np" -platform platform.xml -hostfile hostfile -trace-ti \
  --cfg=tracing/filename:trace.txt --cfg=smpi/simulate-computation:no --cfg=smpi/display-timing:yes \
  --log=root.thres:warning --log=smpi_utils.thres:info "./$name" "$nw" "$@" > stdout.txt 2> stderr.txt) || {
  cat "$work/stderr.txt" >&2
  echo "record.sh: smpirun of $name at np $np, NW $nw failed" >&2
  exit 1
}
# SMPI 3.32's smpirun exits 0 after MPI_Abort: every corpus program prints its summary line on rank 0 at
# the end, so a run without it (or with an abort) failed.
if [ ! -s "$work/stdout.txt" ] || grep -q "MPI_Abort was called" "$work/stderr.txt"; then
  grep -v '^\[' "$work/stderr.txt" | sort -u >&2
  echo "record.sh: $name at np $np, NW $nw aborted (no summary line)" >&2
  exit 1
fi
rm -rf "$out" "$out.smpi"
# Imported from inside $work so that run.json's command names trace.txt, not the mktemp directory.
(cd "$work" && "$gridcast" import tit trace.txt --nw "$nw" --out "$out" --force --encoding binary > /dev/null)
mkdir -p "$out.smpi"
cp "$work/platform.xml" "$work/hostfile" "$out.smpi/"
grep -h "Simulated time" "$work/stdout.txt" "$work/stderr.txt" > "$out.smpi/smpirun.txt" || true
sed -n 1p "$work/stdout.txt"
