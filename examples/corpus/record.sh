#!/bin/sh
# Records one run of a corpus program under SMPI and writes it as a gridcast profile directory (binary
# encoding).
#
#   examples/corpus/record.sh NAME NP NW OUTDIR [ARGS...]
#       builds NAME/NAME.c, runs it (arguments NW ARGS...) with smpirun on a generated NP-host cluster
#       (scripts/gen_cluster.py: one rank per host, 1 Gflop/s hosts on 1.25 GBps / 5 us links to a
#       100 GBps backbone, the examples' platform), writes the profile to OUTDIR and prints the program's
#       first line of output. Next to the profile, OUTDIR.smpi/ keeps what the run used and measured:
#       platform.xml, hostfile and smpirun.txt (SMPI's simulated time, "Simulated time: T seconds"), so a
#       prediction at this point can run on the same platform.
#   CORPUS_RECORDER=hook (default) | tit
#       hook: gridcast's own profiler linked into the program (scripts/smpi-hook.sh), which records what a
#             real run's profile holds: communicator creations, the communicator of each collective,
#             MPI_PROC_NULL halves of a sendrecv.
#       tit:  `smpirun -trace-ti`, imported with `gridcast import tit`: SMPI's time-independent trace,
#             which has none of those (docs/studies/trace-model-validation.md).
#   GRIDCAST=path/to/gridcast  # default: gridcast on PATH, else build/bin/gridcast of this checkout
# Computation benchmarking is off (smpi/simulate-computation:no): compute is only what the program
# declares with smpi_execute_flops, so the profile is the same on every machine.
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

recorder="${CORPUS_RECORDER:-hook}"
python3 "$here/../../scripts/gen_cluster.py" --hosts "$np" --bw 1.25GBps --lat 5us --backbone-bw 100GBps \
  --out-dir "$work" > /dev/null
case "$recorder" in
  hook)
    GRIDCAST="$gridcast" "$here/../../scripts/smpi-hook.sh" build "$work/$name" "$here/$name/$name.c" -- -O2 -I "$here"
    GRIDCAST="$gridcast" "$here/../../scripts/smpi-hook.sh" record "$np" "$nw" 1e9 "$out" "$work/platform.xml" \
      "$work/hostfile" "$work/$name" "$nw" "$@"
    cp "$work/platform.xml" "$work/hostfile" "$out.smpi/"
    if ! grep -q "Simulated time" "$out.smpi/smpirun.txt" || [ ! -s "$out.smpi/stdout.txt" ]; then
      echo "record.sh: $name at np $np, NW $nw ended without its summary line" >&2
      exit 1
    fi
    sed -n 1p "$out.smpi/stdout.txt"
    exit 0
    ;;
  tit) ;;
  *) echo "record.sh: CORPUS_RECORDER is hook or tit, not '$recorder'" >&2; exit 1 ;;
esac
smpicc -O2 -I "$here" -o "$work/$name" "$here/$name/$name.c" -lm
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
