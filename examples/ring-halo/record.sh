#!/bin/sh
# Re-records the committed traces: builds ring_halo.c with smpicc and runs it under SMPI with
# time-independent tracing. Compute is only what the program declares (smpi_execute_flops) because
# computation benchmarking is off, so the output is the same on every machine; the timestamped file
# names SMPI picks are renamed to stable ones. `git diff` after running this should be empty.
#
#   ./record.sh            # writes trace/trace.txt and trace/trace.txt_files/
#   NP=4 ./record.sh       # any rank count up to the 8 hosts of platform.xml
set -eu
cd "$(dirname "$0")"
NP="${NP:-8}"
NAME=ring_halo
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

smpicc -O2 -o "$work/$NAME" "$NAME.c" -lm
# Recorded from inside trace/ so that the index lists paths relative to itself.
rm -rf trace && mkdir trace && cd trace
smpirun -np "$NP" -platform ../platform.xml -hostfile ../hostfile -trace-ti \
  --cfg=tracing/filename:trace.txt --cfg=smpi/simulate-computation:no \
  --log=root.thres:warning "$work/$NAME"

# <stamp>_rank-<i>.txt -> <name>_rank-<i>.txt, index rewritten accordingly (paths stay relative).
: > "$work/index"
while IFS= read -r entry; do
  stable="trace.txt_files/${NAME}_rank-${entry##*_rank-}"
  mv "$entry" "$stable"
  echo "$stable" >> "$work/index"
done < trace.txt
mv "$work/index" trace.txt
echo "recorded $(wc -l < trace.txt) ranks, $(cat trace.txt_files/*.txt | wc -l) actions, $(cat trace.txt_files/*.txt | wc -c) bytes"
