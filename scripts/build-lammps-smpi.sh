#!/bin/sh
# Builds a minimal LAMMPS with SimGrid's smpicxx, so that it runs under `smpirun` (the Debian `lammps`
# binary is linked against Open MPI and cannot). Used by examples/lammps-smpi/record.sh and
# bench/trace_model_validation.py --apps lammps.
#
#   scripts/build-lammps-smpi.sh          # prints the path of the lmp binary (building it if needed)
#
# Source: Debian's `lammps` source package at the version of the installed `lammps` binary package
# (`apt-get source lammps=VERSION`, Debian's patches applied), so the program is the one the
# lammps-lj example profiles natively. `apt-get source` needs a deb-src entry; Debian 12 ships without
# one: as root the script adds /etc/apt/sources.list.d/gridcast-deb-src.sources (the deb entries'
# suites, type deb-src) and runs `apt-get update`; otherwise it says what to add.
#
# Build: LAMMPS' CMake (cmake/ of the source) with CMAKE_CXX_COMPILER=smpicxx and BUILD_MPI=on, core only:
# no optional package (the LJ melt of examples/lammps-smpi/in.lj needs lj/cut, nve, fcc lattice: all
# core), no JPEG/PNG/gzip/FFmpeg, no OpenMP, ccache when installed, -j${JOBS:-2}. smpicxx links every
# program as a shared object (-shared -fPIC): smpirun's default global-variable privatization (dlopen:
# one copy of the program per rank) then gives every rank its own copy of LAMMPS' static state.
#
# Cache: ${GRIDCAST_CACHE:-$HOME/.cache/gridcast}/lammps-src (the source) and .../lammps-smpi-build (the
# build). Idempotent: nothing is fetched when the source is there, and the build is CMake's incremental
# one (a no-op when nothing changed); a build dir configured by another version of this script is
# reconfigured in place. The first build took 341 s of wall time (-j2, nice 10, on a loaded 2-core VM);
# afterwards it is a no-op of seconds.
set -eu
cache="${GRIDCAST_CACHE:-$HOME/.cache/gridcast}"
src_root="$cache/lammps-src"
build="$cache/lammps-smpi-build"
jobs="${JOBS:-2}"
log() { echo "build-lammps-smpi: $*" >&2; }

command -v smpicxx >/dev/null || { log "smpicxx not found (Debian package libsimgrid-dev)"; exit 1; }
command -v cmake >/dev/null || { log "cmake not found"; exit 1; }
version="$(dpkg-query -W -f='${source:Version}' lammps 2>/dev/null || true)"
# bookworm's version, when the binary package is not installed.
[ -n "$version" ] || version="20220106.git7586adbb6a+ds1-2"
upstream="${version%-*}"              # 20220106.git7586adbb6a+ds1
src="$src_root/lammps-$upstream"

# 1. The source, once.
if [ ! -f "$src/cmake/CMakeLists.txt" ]; then
  if ! apt-get source --print-uris "lammps=$version" >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
      list=/etc/apt/sources.list.d/gridcast-deb-src.sources
      log "no deb-src entry for lammps: adding $list and running apt-get update"
      cat > "$list" <<'EOF'
# Added by gridcast's scripts/build-lammps-smpi.sh: `apt-get source lammps`.
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
      apt-get update >/dev/null
    fi
    apt-get source --print-uris "lammps=$version" >/dev/null 2>&1 || {
      log "apt-get source lammps=$version is not possible: add a 'Types: deb-src' entry for"
      log "http://deb.debian.org/debian bookworm to /etc/apt/sources.list.d/ and run apt-get update"
      exit 1; }
  fi
  command -v dpkg-source >/dev/null || { log "dpkg-source not found (Debian package dpkg-dev)"; exit 1; }
  mkdir -p "$src_root"
  log "fetching lammps=$version into $src_root"
  (cd "$src_root" && apt-get source "lammps=$version" >/dev/null 2>&1) || {
    log "apt-get source lammps=$version failed in $src_root"; exit 1; }
  [ -f "$src/cmake/CMakeLists.txt" ] || { log "no $src/cmake/CMakeLists.txt after apt-get source"; exit 1; }
fi

# 2. Configure (again when this script changed: its options are the build's).
stamp="$(sha1sum < "$0" | cut -c1-12)-$version"
if [ ! -f "$build/CMakeCache.txt" ] || [ "$(cat "$build/.gridcast-stamp" 2>/dev/null)" != "$stamp" ]; then
  mkdir -p "$build"
  launcher=""
  command -v ccache >/dev/null && launcher="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache"
  # MPI_CXX_COMPILER=smpicxx: FindMPI takes SMPI's mpi.h from the wrapper, never Open MPI's.
  # -O2 without -g: a smaller shared object, copied once per rank by the privatization.
  # SMPI_NO_OVERRIDE_MALLOC: smpicxx's smpi_helpers.h otherwise turns malloc/calloc/realloc/free into
  # macros (for SMPI's shared-malloc, not used here), which breaks <malloc.h> in info.cpp.
  # shellcheck disable=SC2086
  cmake -S "$src/cmake" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG -DSMPI_NO_OVERRIDE_MALLOC" \
    -DCMAKE_CXX_COMPILER=smpicxx -DBUILD_MPI=on -DMPI_CXX_COMPILER=smpicxx \
    -DBUILD_OMP=off -DBUILD_SHARED_LIBS=off -DBUILD_TOOLS=off -DBUILD_DOC=off -DBUILD_LAMMPS_SHELL=off \
    -DWITH_JPEG=off -DWITH_PNG=off -DWITH_GZIP=off -DWITH_FFMPEG=off -DLAMMPS_EXCEPTIONS=off \
    -DENABLE_TESTING=off $launcher > "$build/configure.log" 2>&1 || {
      log "cmake configure failed: see $build/configure.log"; tail -20 "$build/configure.log" >&2; exit 1; }
  echo "$stamp" > "$build/.gridcast-stamp"
fi

# 3. Build (incremental).
start=$(date +%s)
nice -n 10 cmake --build "$build" -j "$jobs" --target lmp > "$build/build.log" 2>&1 || {
  log "build failed: see $build/build.log"; tail -30 "$build/build.log" >&2; exit 1; }
end=$(date +%s)
[ $((end - start)) -gt 5 ] && log "built $build/lmp in $((end - start)) s"
echo "$build/lmp"
