#!/bin/sh
# Regenerates this example's training profiles and its model: overlap_solver.c recorded with
# `smpirun -trace-ti` at np 4, 8, 16 and Nw 8, 12, 16 (nine profiles, record.sh), then `gridcast fit`.
# Run from the repository root: the model names its profiles by the paths given to fit.
#   GRIDCAST=path/to/gridcast  # default: build/bin/gridcast
set -eu
GRIDCAST="${GRIDCAST:-build/bin/gridcast}"
export GRIDCAST
here=examples/overlap-solver
rm -rf "$here/profiles"
for np in 4 8 16; do for nw in 8 12 16; do
  "$here/record.sh" "$np" "$nw" "$here/profiles/np$np-nw$nw" > /dev/null
done; done
"$GRIDCAST" fit "$here"/profiles/np4-nw8 "$here"/profiles/np4-nw12 "$here"/profiles/np4-nw16 \
  "$here"/profiles/np8-nw8 "$here"/profiles/np8-nw12 "$here"/profiles/np8-nw16 \
  "$here"/profiles/np16-nw8 "$here"/profiles/np16-nw12 "$here"/profiles/np16-nw16 -o "$here/model.json"
