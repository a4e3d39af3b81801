#!/bin/sh
# Records one LAMMPS run (the LJ melt of in.lj) under SMPI with time-independent tracing and imports it
# as a gridcast profile directory (binary encoding). LAMMPS is built with smpicxx from Debian's source by
# scripts/build-lammps-smpi.sh (run it once first: ~6 min; this script does not start the build).
# Computation benchmarking is off (smpi/simulate-computation:no): LAMMPS' force loops run for real (the
# atoms move as they would, so which atoms cross which boundary is LAMMPS' own), but take no simulated
# time, so the trace holds the calls only and is the same on every machine.
#
#   ./record.sh NP N OUT [SEED] [STEPS]   # N: lattice cells per side (4 N^3 atoms; the profile's nw)
#                                         # SEED: velocity seed (default 87287), STEPS: MD steps (40)
#   GRIDCAST=path/to/gridcast             # default: gridcast on PATH, else build/bin/gridcast
#   GRIDCAST_CACHE=DIR                    # where build-lammps-smpi.sh built lmp ($HOME/.cache/gridcast)
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
[ $# -ge 3 ] && [ $# -le 5 ] || { echo "usage: record.sh NP N OUT [SEED] [STEPS]" >&2; exit 1; }
NP="$1"; N="$2"; OUT="$3"; SEED="${4:-87287}"; STEPS="${5:-40}"
GRIDCAST="${GRIDCAST:-$(command -v gridcast || echo "$root/build/bin/gridcast")}"
lmp="${GRIDCAST_CACHE:-$HOME/.cache/gridcast}/lammps-smpi-build/lmp"
[ -x "$lmp" ] || { echo "record.sh: $lmp not found: run scripts/build-lammps-smpi.sh first (~6 min)" >&2; exit 77; }
# MPI_Dims_create(NP, 3): the most balanced factorisation, non-increasing (what gridcast's grid rules use).
dims=$(python3 -c "
n=$NP; best=None
for a in range(1,n+1):
  for b in range(1,a+1):
    if n%(a*b)==0 and n//(a*b)<=b:
      d=(a,b,n//(a*b)); k=(max(d)-min(d),)
      best=d if best is None or k<(max(best)-min(best),) else best
print(*best)")
set -- $dims
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
i=0; while [ $i -lt "$NP" ]; do echo "node-$i"; i=$((i + 1)); done > "$work/hostfile"
# smpirun's default privatization (dlopen: smpicxx links lmp as a shared object, loaded once per rank)
# gives every rank its own copy of LAMMPS' globals.
(cd "$work" && smpirun -np "$NP" -platform "$here/../stencil3d/platform.xml" -hostfile hostfile -trace-ti \
  --cfg=tracing/filename:trace.txt --cfg=smpi/simulate-computation:no \
  --log=root.thres:critical "$lmp" -in "$here/in.lj" -log none -echo none -nocite \
  -var n "$N" -var px "$1" -var py "$2" -var pz "$3" -var seed "$SEED" -var steps "$STEPS" > stdout.txt) || {
  echo "record.sh: LAMMPS failed at NP $NP N $N:" >&2; tail -20 "$work/stdout.txt" >&2; exit 1; }
grep -q "^Loop time" "$work/stdout.txt" || { echo "record.sh: no 'Loop time' in LAMMPS' output:" >&2;
  tail -20 "$work/stdout.txt" >&2; exit 1; }
"$GRIDCAST" import tit "$work/trace.txt" --nw "$N" --out "$OUT" --force --encoding binary > /dev/null
grep "^Loop time" "$work/stdout.txt"
