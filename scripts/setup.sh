#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a first result: installs what is missing, builds
# gridcast (Release), and runs the main job on the bundled example.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"

echo
echo "== gridcast replay of the bundled example (examples/ring-halo) =="
build/bin/gridcast replay examples/ring-halo/trace/trace.txt \
  --platform examples/ring-halo/platform.xml --hostfile examples/ring-halo/hostfile \
  --out out/ring-halo
