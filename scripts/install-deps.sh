#!/usr/bin/env bash
# Installs what gridcast needs on Debian 12, only what is missing. Safe to run again.
set -euo pipefail

packages=(
  build-essential cmake pkg-config python3
  libsimgrid-dev          # SimGrid 3.32: the simulation kernel, smpicc/smpirun for ground-truth traces
  libboost-dev libboost-program-options-dev
  nlohmann-json3-dev libtinyxml2-dev
  catch2                  # v2, the test framework
  openmpi-bin libopenmpi-dev  # real MPI runs (calibration, profiling)
  libeigen3-dev libdtl-dev  # trace model: least squares (Eigen), Myers diffs (dtl, header-only)
  libdlib-dev             # latency model: random forest regression of call latency ratios
  libblas-dev hpcc lammps     # profiler: BLAS of its test program; HPCC and LAMMPS for examples/ and bench/
  libprotobuf-dev protobuf-compiler  # timeline.pftrace (--timeline-format perfetto): Perfetto's protobuf format
  libelf-dev              # profiler: reads the symbol tables of the application and its libraries (--functions check)
  linux-perf              # bench/profiler_overhead.py --cycles: the ranks' own CPU cycles (perf stat)
  clang-14 libclang-rt-14-dev  # fuzz/: libFuzzer harnesses of the readers (-fsanitize=fuzzer, scripts/fuzz.sh)
  slurm-wlm munge         # gridcast study submit: a real single-node Slurm for the job-array test (scripts/slurm-local.sh)
  gnuplot-nox             # gridcast study report: the plots (SVG)
  chromium                # tests: the study report opened headless
  universal-ctags         # tests: the code's size limits (scripts/code-size.py)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: everything is installed"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
