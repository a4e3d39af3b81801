#!/bin/sh
# Records hpl-np2.tar.xz: HPL's own section of HPCC at 2 ranks (process grid 1 x 2, block size 32) for
# N = 128, 192, 256, 320, the profiles bench/accuracy/real_size.py trains on. Each whole-HPCC profile is
# cut to HPL's section (from HPL_grid_init's three MPI_Comm_split to MPI_Finalize) by
# build/bin/gridcast_bench_profile_tail, as the bench does. N is a multiple of 2 x 32 so that both ranks
# own the same number of panels and the same rank owns the last one at every size (at N 160, 5 panels,
# the last is rank 0's; at N 128 rank 1's: another code path). GRIDCAST and TOOLS name the binaries
# (default: build/bin of this checkout); SIZES the orders.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../record-real.sh"
tail_tool=${TOOLS:-$root/build/bin}/gridcast_bench_profile_tail
sizes=${SIZES:-"128 192 256 320"}
mkdir -p "$work/hpl-np2"
for n in $sizes; do
  run="$work/run-n$n"
  mkdir -p "$run"
  sed -e "s/@N@/$n/" -e "s/@P@/1/" -e "s/@Q@/2/" "$here/hpccinf.template" |
    sed -e 's/^64           NBs$/32           NBs/' > "$run/hpccinf.txt"
  (cd "$run" && "$gridcast" profile --calibration "$calibration" --nw "$n" --out "$work/whole-n$n" -- \
      mpirun -np 2 $as_root --oversubscribe --bind-to none hpcc) > /dev/null
  "$tail_tool" "$work/whole-n$n" "$work/hpl-np2/n$n" MPI_Comm_split 3
  rm -rf "$work/whole-n$n"
done
tar -C "$work" -cf - hpl-np2 | xz -9 -T1 > "$here/hpl-np2.tar.xz"
