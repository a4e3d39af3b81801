#!/usr/bin/env bash
# Runs gridcast's libFuzzer harnesses (fuzz/, docs/guides/fuzzing.md) for a bounded time each and fails on any
# finding: a crash, a sanitizer report, an exception other than InputError, an input slower than --timeout
# seconds or one that takes more than --rss-mb of memory.
#   scripts/fuzz.sh [--seconds N] [--jobs J] [--build-dir DIR] [--work-dir DIR] [HARNESS...]
# Without --build-dir it builds the harnesses alone (clang, into build-fuzz/); with it, it runs those the
# main build made with -DGRIDCAST_FUZZ=ON (DIR/fuzz/). New inputs that reach new code stay in
# WORK/<harness>/corpus (build-fuzz/runs by default), findings in WORK/<harness>/ as crash-*, timeout-*,
# oom-* or leak-* files: rerun one with `DIR/fuzz/fuzz_<harness> FILE`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

seconds=60 jobs=1 build_dir="" work_dir="" timeout=20 rss_mb=2048
harnesses=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --build-dir) build_dir="$2"; shift 2 ;;
    --work-dir) work_dir="$2"; shift 2 ;;
    --timeout) timeout="$2"; shift 2 ;;
    --rss-mb) rss_mb="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 1 ;;
    *) harnesses+=("$1"); shift ;;
  esac
done

if [ -z "$build_dir" ]; then
  build_dir="$root/build-fuzz"
  cxx="$(command -v clang++-14 || command -v clang++ || true)"
  if [ -z "$cxx" ]; then
    echo "fuzz.sh: no clang++ found (Debian: apt-get install clang-14 libclang-rt-14-dev)" >&2
    exit 1
  fi
  cmake -S "$root/fuzz" -B "$build_dir/fuzz" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=None >/dev/null
  cmake --build "$build_dir/fuzz" -j"$(nproc)"
fi
[ -n "$work_dir" ] || work_dir="$build_dir/fuzz-runs"
mkdir -p "$work_dir"
build_dir="$(cd "$build_dir" && pwd)" work_dir="$(cd "$work_dir" && pwd)"
if [ ${#harnesses[@]} -eq 0 ]; then
  # The list the build uses: fuzz/harnesses.cmake.
  read -r -a harnesses <<< "$(sed -n 's/^set(GRIDCAST_FUZZ_HARNESSES//; /^ *#/d; s/)//; p' "$root/fuzz/harnesses.cmake" | tr '\n' ' ')"
fi

# Leaks are findings here (the sanitized test run turns them off for SimGrid's sake; the fuzzed readers
# do not run SimGrid in this process).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1"
failed=0
for h in "${harnesses[@]}"; do
  bin="$build_dir/fuzz/fuzz_$h"
  if [ ! -x "$bin" ]; then
    echo "fuzz.sh: no harness $bin (build with -DGRIDCAST_FUZZ=ON, or run without --build-dir)" >&2
    exit 1
  fi
  mkdir -p "$work_dir/$h/corpus"
  # Former findings (fuzz/regressions/<harness>/) are read with the seeds: each run tries them again.
  regressions=""
  [ ! -d "$root/fuzz/regressions/$h" ] || regressions="$root/fuzz/regressions/$h"
  log="$work_dir/$h/log.txt"
  # New inputs go to the first folder; the checked-in seeds are only read. In the work folder, where
  # -jobs writes its fuzz-N.log files.
  set +e
  cd "$work_dir/$h"
  if [ "$jobs" -gt 1 ]; then
    "$bin" -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb="$rss_mb" -print_final_stats=1 \
      -artifact_prefix="$work_dir/$h/" -jobs="$jobs" -workers="$jobs" "$work_dir/$h/corpus" "$root/fuzz/corpus/$h" $regressions >"$log" 2>&1
  else
    "$bin" -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb="$rss_mb" -print_final_stats=1 \
      -artifact_prefix="$work_dir/$h/" "$work_dir/$h/corpus" "$root/fuzz/corpus/$h" $regressions >"$log" 2>&1
  fi
  rc=$?
  cd "$root"
  set -e
  execs="$({ cat "$log" "$work_dir/$h"/fuzz-*.log 2>/dev/null || true; } | awk '/stat::number_of_executed_units/ {s += $2} END {print s + 0}')"
  if [ "$rc" -ne 0 ]; then
    echo "fuzz: $h: FINDING after $execs executions (log: $log)"
    grep -E "finding:|ERROR: |SUMMARY: |Test unit written" "$log" | head -20
    failed=1
  else
    echo "fuzz: $h: $execs executions in ${seconds} s, no finding"
  fi
done
exit $failed
