#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a first result: installs what is missing, builds
# gridcast (Release), and runs the main job on the bundled example.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"

echo
echo "== gridcast predict on the bundled example (examples/predict-stencil) =="
echo "   a model fitted on runs at 4-16 ranks, predicting 64 ranks at twice the size"
build/bin/gridcast predict examples/predict-stencil/model.json --nw 32 --np 64 \
  --platform examples/stencil3d/platform.xml --out out/predict-stencil
