#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what is missing, then builds and tests the Release
# configuration and the AddressSanitizer + UndefinedBehaviorSanitizer configuration.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
jobs="$(nproc)"
# Each phase says how long it took: CI's time budget is watched phase by phase.
phase() { echo "== $1: $(( SECONDS - start )) s"; start=$SECONDS; }

echo "== Release build and tests =="
start=$SECONDS
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$jobs"
phase "Release build"
ctest --test-dir build --output-on-failure -j"$jobs"
phase "Release tests"

echo "== ASan + UBSan build and tests =="
# GRIDCAST_FUZZ: the readers' libFuzzer harnesses (clang, a small build of their own) come with this
# configuration, and its tests run each for a bounded time (label fuzz, docs/guides/fuzzing.md): 5 s
# each here, not the default 15, a regression run from the seeds that keeps the whole suite near CI's
# 30-minute budget on 2 cores (14 harnesses on 2 cores: about 70 s saved; the whole CI took 35.6 min on this
# 2-core VM with 8 s). Campaigns run scripts/fuzz.sh. The tests, and in this configuration the libraries too,
# are unity builds (GRIDCAST_UNITY_BUILD, CMakeLists.txt): on this 2-core VM the whole suite went from
# 1,917 s to 1,565 s (Release build 468 -> 407 s, sanitized build 837 -> 574 s; CI's machine: 2,137 s before).
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRIDCAST_SANITIZE=ON -DGRIDCAST_FUZZ=ON \
  -DGRIDCAST_FUZZ_SECONDS=5
cmake --build build-asan -j"$jobs"
phase "ASan + UBSan build"
# SimGrid switches stacks between actors (ucontext); ASan needs to be told not to flag them.
ASAN_OPTIONS="detect_stack_use_after_return=0:detect_leaks=0" \
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE no-sanitizer
phase "ASan + UBSan tests"
