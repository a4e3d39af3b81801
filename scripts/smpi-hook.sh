#!/bin/sh
# Records an MPI program under SimGrid's SMPI with gridcast's own profiler (libgridcast-hook-smpi.a linked
# into the program), for process counts no machine at hand can run. Unlike `smpirun -trace-ti`, the profile
# holds what the hook records on a real run: communicator creations (MPI_Cart_create, MPI_Cart_sub,
# MPI_Comm_split) with their communicators, the communicator of every collective, the half of an
# MPI_Sendrecv whose other side is MPI_PROC_NULL, local calls. Times are SMPI's simulated time.
#
#   scripts/smpi-hook.sh build APP SOURCE... [-- FLAGS...]
#       Compiles the sources (.c with smpicc, .cpp/.cc/.cxx with smpicxx, .f/.f90 with smpif90; FLAGS go to
#       every compiler) and links them with the hook into the program APP.
#   scripts/smpi-hook.sh record NP NW HOST_SPEED OUT PLATFORM HOSTFILE APP [ARGS...]
#       Runs APP ARGS... with smpirun on NP ranks of PLATFORM/HOSTFILE and imports what the hook recorded as
#       the profile directory OUT (binary encoding) with workload size NW (`gridcast import hook`).
#       HOST_SPEED: flop/s of the platform's hosts, which turn the recorded compute seconds into work.
#       smpirun's output goes to OUT.smpi/smpirun.txt.
#
# The run uses smpi/simulate-computation:no (compute is only what the program declares with
# smpi_execute_flops, so the profile is the same on every machine) and smpi/wtime:0 (SMPI would otherwise
# add 10 ns of simulated time to each of the hook's clock readings).
#   GRIDCAST=path/to/gridcast         default: gridcast on PATH, else build/bin/gridcast of this checkout
#   GRIDCAST_HOOK_SMPI=path/to/libgridcast-hook-smpi.a   default: ../lib beside $GRIDCAST
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
usage() {
  echo "usage: scripts/smpi-hook.sh build APP SOURCE... [-- FLAGS...]" >&2
  echo "       scripts/smpi-hook.sh record NP NW HOST_SPEED OUT PLATFORM HOSTFILE APP [ARGS...]" >&2
  exit 1
}
[ $# -ge 1 ] || usage
gridcast="${GRIDCAST:-$(command -v gridcast || echo "$here/../build/bin/gridcast")}"
case "$gridcast" in /*) ;; */*) gridcast="$PWD/$gridcast" ;; esac
abs() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }

case "$1" in
  build)
    [ $# -ge 3 ] || usage
    app="$(abs "$2")"; shift 2
    mkdir -p "$(dirname "$app")"
    hook="${GRIDCAST_HOOK_SMPI:-$(dirname "$gridcast")/../lib/libgridcast-hook-smpi.a}"
    if [ ! -f "$hook" ]; then
      echo "smpi-hook.sh: no $hook (built with gridcast where SimGrid's SMPI headers are; GRIDCAST_HOOK_SMPI=...)" >&2
      exit 1
    fi
    sources=""
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do sources="$sources $1"; shift; done
    [ $# -gt 0 ] && shift  # the "--"
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    objects=""; i=0
    for src in $sources; do
      case "$src" in
        *.c) cc=smpicc ;;
        *.cpp|*.cc|*.cxx) cc=smpicxx ;;
        *.f|*.f90|*.F|*.F90) cc=smpif90 ;;
        *) echo "smpi-hook.sh: $src: not a C, C++ or Fortran source" >&2; exit 1 ;;
      esac
      i=$((i + 1))
      "$cc" "$@" -c "$src" -o "$work/$i.o"
      objects="$objects $work/$i.o"
    done
    # The whole archive: the program's MPI calls would otherwise resolve to libsimgrid's MPI_* before
    # the linker looks into the hook.
    # shellcheck disable=SC2086
    smpicxx -o "$app" $objects -Wl,--whole-archive "$hook" -Wl,--no-whole-archive "$@" -ldl -lpthread -lm
    ;;
  record)
    [ $# -ge 8 ] || usage
    np="$2"; nw="$3"; speed="$4"; out="$(abs "$5")"; platform="$(abs "$6")"; hostfile="$(abs "$7")"
    app="$(abs "$8")"; shift 8
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    mkdir "$work/raw"
    (cd "$work" && GRIDCAST_HOOK_DIR="$work/raw" smpirun -np "$np" -platform "$platform" -hostfile "$hostfile" \
      --cfg=smpi/simulate-computation:no --cfg=smpi/wtime:0 --cfg=smpi/display-timing:yes \
      --log=root.thres:warning --log=smpi_utils.thres:info "$app" "$@" > stdout.txt 2> stderr.txt) || {
      cat "$work/stderr.txt" >&2
      echo "smpi-hook.sh: smpirun of $app at np $np failed" >&2
      exit 1
    }
    if grep -q "MPI_Abort was called" "$work/stderr.txt"; then
      grep -v '^\[' "$work/stderr.txt" | sort -u >&2
      echo "smpi-hook.sh: $app at np $np called MPI_Abort" >&2
      exit 1
    fi
    rm -rf "$out" "$out.smpi"
    # From inside $work: run.json then names raw/, not the mktemp directory.
    (cd "$work" && "$gridcast" import hook raw --nw "$nw" --host-speed "$speed" --out "$out" --force \
      --encoding binary > import.txt) || {
      cat "$work/import.txt" >&2
      echo "smpi-hook.sh: the hook's files of $app at np $np did not import" >&2
      exit 1
    }
    mkdir -p "$out.smpi"
    grep -h "Simulated time" "$work/stdout.txt" "$work/stderr.txt" > "$out.smpi/smpirun.txt" || true
    cp "$work/stdout.txt" "$out.smpi/stdout.txt"
    ;;
  *) usage ;;
esac
