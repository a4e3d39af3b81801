#!/bin/sh
# Shared body of the examples' record.sh scripts: builds an example's C program with smpicc and runs it under
# SMPI with time-independent tracing. Compute is only what the program declares (smpi_execute_flops) because
# computation benchmarking is off, so the trace is the same on every machine.
#
#   record-smpi.sh trace DIR NAME NP
#       Re-records the committed traces of the example in DIR: DIR/trace/trace.txt and
#       DIR/trace/trace.txt_files/NAME_rank-<i>.txt (SMPI's timestamped file names renamed to stable ones,
#       so `git diff` after a re-record is empty). Uses DIR/platform.xml and DIR/hostfile.
#   record-smpi.sh profile DIR NAME NP NW OUT [ARGS...]
#       Records one run (program arguments NW ARGS...) on DIR/platform.xml with hosts node-0..node-(NP-1),
#       imports it as the gridcast profile directory OUT (binary encoding) and prints the program's first
#       line of output. GRIDCAST=path/to/gridcast; default: gridcast on PATH, else build/bin/gridcast of this
#       checkout.
# DIR/NAME.c is the program.
set -eu
mode="$1"; dir="$(cd "$2" && pwd)"; name="$3"; np="$4"; shift 4
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

smpicc -O2 -o "$work/$name" "$dir/$name.c" -lm

# Runs the program under SMPI in the current directory: smpirun_ti HOSTFILE [PROGRAM ARGS...]
smpirun_ti() {
  hostfile="$1"; shift
  smpirun -np "$np" -platform "$dir/platform.xml" -hostfile "$hostfile" -trace-ti \
    --cfg=tracing/filename:trace.txt --cfg=smpi/simulate-computation:no \
    --log=root.thres:warning "$work/$name" "$@"
}

case "$mode" in
  trace)
    # Recorded from inside trace/ so that the index lists paths relative to itself.
    cd "$dir" && rm -rf trace && mkdir trace && cd trace
    smpirun_ti ../hostfile
    # <stamp>_rank-<i>.txt -> <name>_rank-<i>.txt, index rewritten accordingly (paths stay relative).
    : > "$work/index"
    while IFS= read -r entry; do
      stable="trace.txt_files/${name}_rank-${entry##*_rank-}"
      mv "$entry" "$stable"
      echo "$stable" >> "$work/index"
    done < trace.txt
    mv "$work/index" trace.txt
    echo "recorded $(wc -l < trace.txt) ranks, $(cat trace.txt_files/*.txt | wc -l) actions, $(cat trace.txt_files/*.txt | wc -c) bytes"
    ;;
  profile)
    nw="$1"; out="$2"; shift 2
    here="$(cd "$(dirname "$0")" && pwd)"
    gridcast="${GRIDCAST:-$(command -v gridcast || echo "$here/../build/bin/gridcast")}"
    i=0; while [ $i -lt "$np" ]; do echo "node-$i"; i=$((i + 1)); done > "$work/hostfile"
    (cd "$work" && smpirun_ti hostfile "$nw" "$@" > stdout.txt)
    # Imported from inside $work so that run.json's command names trace.txt, not the random mktemp
    # directory: re-recording a committed profile then leaves `git diff` empty.
    case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
    case "$gridcast" in /*) ;; */*) gridcast="$PWD/$gridcast" ;; esac
    (cd "$work" && "$gridcast" import tit trace.txt --nw "$nw" --out "$out" --force --encoding binary > /dev/null)
    sed -n 1p "$work/stdout.txt"
    ;;
  *)
    echo "record-smpi.sh: unknown mode '$mode' (expected trace or profile)" >&2
    exit 2
    ;;
esac
