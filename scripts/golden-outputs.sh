#!/usr/bin/env bash
# Prints a SHA-256 of every output of a fixed set of gridcast commands (the examples' predictions and
# replays under each collective selector, fits of the committed profiles, synthesis, import, convert,
# platform generation). A refactoring that must keep outputs byte-identical runs this before and after
# and diffs the two listings:
#   scripts/golden-outputs.sh build/bin/gridcast > before.txt   # ... change ...   then diff
# Usage: scripts/golden-outputs.sh [GRIDCAST]   (default build/bin/gridcast; run from anywhere)
set -euo pipefail
cd "$(dirname "$0")/.."
G="$(realpath "${1:-build/bin/gridcast}")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

n=0
# run NAME ARGS...: runs gridcast with ARGS (OUT stands for this command's output folder), then hashes its
# stdout, stderr, exit code and every file it wrote.
run() {
  local name="$1"; shift
  n=$((n + 1))
  local out="$work/$n"
  mkdir -p "$out"
  local args=() a
  for a in "$@"; do args+=("${a//OUT/$out/o}"); done
  local rc=0
  "$G" "${args[@]}" > "$out/stdout" 2> "$out/stderr" || rc=$?
  # Paths of the scratch folder differ between runs; they are not part of what is compared.
  sed -i "s#$work#WORK#g" "$out/stdout" "$out/stderr"
  # Wall-clock durations some commands print ("routes checked: ... in 0.607 s") are not outputs.
  sed -i -E 's/ in [0-9.e+-]+ s/ in T s/g' "$out/stdout" "$out/stderr"
  echo "$name rc=$rc stdout=$(sha256sum < "$out/stdout" | cut -c1-16) stderr=$(sha256sum < "$out/stderr" | cut -c1-16)"
  if [ -d "$out/o" ] || [ -f "$out/o" ]; then
    find "$out/o" -type f | LC_ALL=C sort | while read -r f; do
      sed -i "s#$work#WORK#g" "$f" 2>/dev/null || true
      echo "  ${f#"$out/o"} $(sha256sum < "$f" | cut -c1-16)"
    done
  fi
}

for ex in pingpong ring-halo predict-stencil overlap-solver; do
  read -r -a cmd < "examples/$ex/command"
  cmd=("${cmd[@]/out\/$ex/OUT}")
  run "example $ex" "${cmd[@]}"
  for sel in mpich smpi openmpi-4.1; do
    run "example $ex coll-selector:$sel" "${cmd[@]}" --cfg "gridcast/coll-selector:$sel"
  done
done
run "predict-stencil np 48 nw 24" predict examples/predict-stencil/model.json --nw 24 --np 48 \
  --platform examples/stencil3d/platform.xml --out OUT
run "overlap-solver np 24 on h100-32" predict examples/overlap-solver/model.json --nw 16 --np 24 \
  --platform platforms/h100-32/platform.xml --out OUT

# Fits of the committed profiles (model.json) and what synthesis makes of them.
ps=(examples/predict-stencil/profiles/*)
run "fit predict-stencil" fit "${ps[@]}" -o OUT
os=(examples/overlap-solver/profiles/*)
run "fit overlap-solver" fit "${os[@]}" -o OUT
run "synth predict-stencil" synth examples/predict-stencil/model.json --nw 24 --np 32 --out OUT
run "synth overlap-solver tit" synth examples/overlap-solver/model.json --nw 20 --np 12 --format tit --out OUT

mkdir -p "$work/tar" "$work/tar/lammps"
tar -xJf examples/hpl-hpcc/profiles.tar.xz -C "$work/tar"
tar -xJf examples/lammps-lj/profiles.tar.xz -C "$work/tar/lammps"
tar -xJf examples/hpl-hpcc/hpl-np2.tar.xz -C "$work/tar"
hpl=("$work"/tar/hpl-np2/n*)
run "fit hpl-hpcc" fit "${hpl[@]}" -o OUT
run "replay hpl-hpcc np2-n80" replay "$work/tar/profiles/np2-n80" --platform examples/pingpong/platform.xml --out OUT
lammps=("$work"/tar/lammps/profiles/np2-*)
run "fit lammps-lj" fit "${lammps[@]}" -o OUT

run "import tit ring-halo" import tit examples/ring-halo/trace/trace.txt --nw 1 --out OUT
run "convert hpl np1-n32 jsonl" convert "$work/tar/profiles/np1-n32" --to jsonl --out OUT

for p in platforms/*/; do
  p="${p%/}"
  [ -f "$p/spec.json" ] || continue  # platforms/gpus/ holds GPU data sheets, not a platform
  calib=()
  [ -f "$p/calibration.json" ] && calib=(--calibration "$p/calibration.json")
  run "platform ${p#platforms/}" platform "$p/spec.json" "${calib[@]}" -o OUT
done
run "algorithms" algorithms
