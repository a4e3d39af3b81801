#!/bin/sh
# Records the profiles of this example: HPCC (which runs HPL first, then the other HPCC tests) from the
# Debian package `hpcc`, at 1 and 2 ranks and four matrix orders N. Run from anywhere; GRIDCAST names
# the gridcast binary (default: build/bin/gridcast of this checkout). Writes profiles.tar.xz (the
# profiles, binary encoding) and summary.txt (the driver's coverage tables).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../record-real.sh"
sizes=${SIZES:-"32 48 64 80"}

: > "$here/summary.txt"
for np in 1 2; do
  for n in $sizes; do
    # HPCC reads hpccinf.txt from its working directory: a process grid of 1 x np.
    run="$work/run-np$np-n$n"
    mkdir -p "$run"
    sed -e "s/@N@/$n/" -e "s/@P@/1/" -e "s/@Q@/$np/" "$here/hpccinf.template" > "$run/hpccinf.txt"
    echo "== np $np, N $n" >> "$here/summary.txt"
    (cd "$run" && "$gridcast" profile --calibration "$calibration" --nw "$n" --out "$work/profiles/np$np-n$n" -- \
        mpirun -np "$np" $as_root --oversubscribe --bind-to none hpcc) | grep -v '^host speed' | sed "s|$work/||" >> "$here/summary.txt"
  done
done
tar -C "$work" -cf - profiles | xz -9 -T1 > "$here/profiles.tar.xz"
