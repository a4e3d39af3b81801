#!/bin/sh
# Records the profiles of this example: LAMMPS (`lmp` from the Debian package `lammps`) on the standard
# Lennard-Jones benchmark in.lj (32000 atoms at x=y=z=1, 100 steps), scaled with -var x/y/z to four
# sizes, at 1 and 2 ranks. nw is the number of atoms. GRIDCAST names the gridcast binary (default:
# build/bin/gridcast of this checkout). Writes profiles.tar.xz and summary.txt.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../record-real.sh"

: > "$here/summary.txt"
# x y z, and the atoms they give: 4 atoms per fcc cell, (20x)(20y)(20z) cells
for np in 1 2; do
  for size in "0.5 0.5 0.5 4000" "1 0.5 0.5 8000" "1 1 0.5 16000" "1 1 1 32000"; do
    set -- $size
    echo "== np $np, x $1 y $2 z $3, atoms $4" >> "$here/summary.txt"
    (cd "$work" && "$gridcast" profile --calibration "$calibration" --nw "$4" --out "$work/profiles/np$np-atoms$4" -- \
        mpirun -np "$np" $as_root --oversubscribe --bind-to none \
        lmp -in "$here/in.lj" -log none -screen none -var x "$1" -var y "$2" -var z "$3") \
      | grep -v "^host speed" | sed "s|$work/||" >> "$here/summary.txt"
  done
done
tar -C "$work" -cf - profiles | xz -9 -T1 > "$here/profiles.tar.xz"
