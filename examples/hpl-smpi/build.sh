#!/bin/sh
# Builds HPL (the hpl/ folder of Debian's hpcc source, fetched by fetch-source.sh) with SMPI's smpicc
# against Debian's reference BLAS (libblas-dev, through its CBLAS interface), with hpl_smpi_main.c as
# main() and without MPI derived datatypes. Every .c file of hpl/src and hpl/testing is compiled except the serial timers and matrix
# generator HPL's parallel driver does not use. Prints the path of the binary; rebuilds only when it is
# missing or older than hpl_smpi_main.c or this script.
#
#   examples/hpl-smpi/build.sh [BUILD_DIR]     # default: .cache/hpl-smpi-build of this checkout
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
cache="$here/../../.cache"
out="${1:-$cache/hpl-smpi-build}"
"$here/fetch-source.sh" "$cache/hpcc-src" >&2
hpl="$cache/hpcc-src/hpcc-1.5.0/hpl"
bin="$out/xhpl"
if [ -x "$bin" ] && [ "$bin" -nt "$here/hpl_smpi_main.c" ] && [ "$bin" -nt "$here/build.sh" ]; then
  echo "$bin"; exit 0
fi
mkdir -p "$out/obj"
# HPL_NO_MPI_DATATYPE: HPL sends contiguous buffers of MPI_DOUBLE instead of derived datatypes, whose
# sizes SMPI's time-independent traces do not record (they write datatype -1).
cflags="-O2 -DHPL_CALL_CBLAS -DHPL_NO_MPI_DATATYPE -I$hpl/include"
(cd "$hpl" && find src testing -name '*.c' ! -path 'testing/timer/*' ! -name HPL_dmatgen.c | sort) > "$out/sources.txt"
# Two compilers at a time: the machines this runs on are small.
sed 's|^\(.*\)$|\1 \1|' "$out/sources.txt" | while read -r src name; do
  echo "$src $(echo "$name" | tr / _).o"
done | xargs -P 2 -n 2 sh -c "smpicc $cflags -w -c \"$hpl/\$0\" -o \"$out/obj/\$1\"" 2>&1 | grep -v '^$' >&2 || true
smpicc $cflags -c "$here/hpl_smpi_main.c" -o "$out/obj/hpl_smpi_main.o"
smpicc -o "$bin" "$out"/obj/*.o -lblas -lm
echo "$bin"
