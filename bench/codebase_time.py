#!/usr/bin/env python3
"""Build and test-suite time of the code base against an earlier commit, measured in one run.

    python3 bench/codebase_time.py --base ba40ce0 --json bench/results/codebase_time.json

Issue 16 (the redesign) asks that a clean Release build and the test suite take no longer than they
did before it. ba40ce0 is the commit the issue was filed on. Each commit (the base, then HEAD) is
checked out into a fresh worktree under --work, configured as scripts/test.sh configures its Release
phase, built from scratch with `cmake --build -j JOBS` and tested with `ctest -j JOBS`, one after the
other on the same machine. Nothing else should run meanwhile: the load average is printed before each
phase.

Figures:
  build wall      elapsed seconds of the build
  build cpu       user + sys seconds of the build and its children (os.wait4): comparable on a busy
                  machine, where wall time is not
  tests           the number of tests ctest ran, and how many passed
  suite wall      elapsed seconds of ctest
  suite cpu       user + sys seconds of ctest and its children
  common          the tests both suites have, by name: the sum of their times in each suite. The suite
                  grew with the capabilities added since (sampling, wait states, studies...), so the
                  whole suite's time answers "does CI still fit", and the common tests' time answers
                  "did the redesign make the same checks slower".
  lines           the C and C++ lines the commit holds (.c, .cpp, .hpp, .h, .cc; git grep -c), and the
                  build's CPU seconds per 1,000 of them: the code grew with the same capabilities, so
                  the build's total answers "how long does it take", and its time per line "did the
                  structure make the same amount of code slower to build".
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import results_json

ROOT = Path(__file__).resolve().parent.parent
TEST_LINE = re.compile(r"Test\s+#\d+: (\S.*?) \.+\**\s*(Passed|\*\*\*Failed|Failed|\*\*\*Timeout|Not Run|\*\*\*Skipped|Skipped)?.*?([0-9.]+) sec")


def timed(cmd: list[str], cwd: Path, log: Path) -> tuple[float, float, int]:
    """Runs cmd with its output to log; returns (wall s, user+sys s of it and its children, exit code)."""
    start = time.monotonic()
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    return wall, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)


def code_lines(commit: str) -> int:
    """The lines of the commit's C and C++ files (what a clean build may compile)."""
    out = subprocess.run(["git", "grep", "-c", "", commit, "--", "*.c", "*.cpp", "*.hpp", "*.h", "*.cc"], cwd=ROOT,
                         check=True, capture_output=True, text=True).stdout
    return sum(int(line.rsplit(":", 1)[1]) for line in out.splitlines() if line)


def test_times(log: Path) -> dict[str, tuple[float, bool]]:
    times = {}
    for line in log.read_text(errors="replace").splitlines():
        m = TEST_LINE.search(line)
        if m:
            times[m.group(1).strip()] = (float(m.group(3)), "Passed" in line)
    return times


def measure(commit: str, work: Path, jobs: int, reuse: bool) -> dict:
    sha_full = subprocess.run(["git", "rev-parse", commit], cwd=ROOT, check=True, capture_output=True,
                              text=True).stdout.strip()
    kept = work / f"{sha_full}.json"
    if reuse and kept.exists():
        print(f"{commit}: reusing the measurement in {kept}", flush=True)
        return json.loads(kept.read_text())
    tree = work / commit
    if tree.exists():
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False)
        subprocess.run(["rm", "-rf", str(tree)], check=True)
    subprocess.run(["git", "worktree", "add", "--detach", str(tree), commit], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, check=True, capture_output=True,
                         text=True).stdout.strip()
    build = tree / "build"
    subprocess.run(["cmake", "-S", ".", "-B", "build", "-DCMAKE_BUILD_TYPE=Release"], cwd=tree, check=True,
                   stdout=subprocess.DEVNULL)
    print(f"{commit} ({sha}): building, load average {os.getloadavg()[0]:.2f}", flush=True)
    b_wall, b_cpu, rc = timed(["cmake", "--build", "build", f"-j{jobs}"], tree, work / f"{commit}.build.log")
    if rc != 0:
        sys.exit(f"codebase_time: the build of {commit} failed (exit {rc}); see {work / (commit + '.build.log')}")
    print(f"{commit}: testing, load average {os.getloadavg()[0]:.2f}", flush=True)
    log = work / f"{commit}.ctest.log"
    t_wall, t_cpu, _ = timed(["ctest", "--test-dir", str(build), f"-j{jobs}"], tree, log)
    times = test_times(log)
    result = {"commit": commit, "sha": sha, "build_wall_s": round(b_wall, 1), "build_cpu_s": round(b_cpu, 1),
            "tests": len(times), "passed": sum(ok for _, ok in times.values()),
            "suite_wall_s": round(t_wall, 1), "suite_cpu_s": round(t_cpu, 1), "times": times,
              "load_average_after": round(os.getloadavg()[0], 2)}
    kept.write_text(json.dumps(result))
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default="ba40ce0", help="the earlier commit (default: ba40ce0, issue 16's)")
    ap.add_argument("--head", default="HEAD", help="the commit to compare (default: HEAD, committed state)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/gridcast-codebase-time"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--json", type=Path)
    ap.add_argument("--reuse", action="store_true",
                    help="take a commit's figures from an earlier run in --work (same commit id) instead of "
                         "measuring it again: for a base measured earlier on the same idle machine")
    ap.add_argument("--only", choices=("base", "head"), help="measure one side and stop (for --reuse later)")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    base = measure(args.base, args.work, args.jobs, args.reuse) if args.only != "head" else None
    head = measure(args.head, args.work, args.jobs, args.reuse) if args.only != "base" else None
    if base is None or head is None:
        return 0
    for m in (base, head):
        m["lines"] = code_lines(m["sha"])
        m["build_cpu_s_per_kline"] = round(1000 * m["build_cpu_s"] / m["lines"], 2)
    common = sorted(set(base["times"]) & set(head["times"]))
    base_common = sum(base["times"][n][0] for n in common)
    head_common = sum(head["times"][n][0] for n in common)

    print(f"\n{'':24} {'base ' + base['sha']:>14} {'head ' + head['sha']:>14} {'head/base':>10}")
    for key, label in (("build_wall_s", "build wall s"), ("build_cpu_s", "build cpu s"),
                       ("lines", "C/C++ lines"), ("build_cpu_s_per_kline", "build cpu s / 1000 lines"),
                       ("suite_wall_s", "suite wall s"), ("suite_cpu_s", "suite cpu s")):
        print(f"{label:24} {base[key]:>14} {head[key]:>14} {head[key] / base[key]:>9.2f}x")
    print(f"{'tests (passed)':24} {str(base['tests']) + ' (' + str(base['passed']) + ')':>14} "
          f"{str(head['tests']) + ' (' + str(head['passed']) + ')':>14}")
    print(f"{'common tests: sum s':24} {base_common:>14.1f} {head_common:>14.1f} "
          f"{head_common / base_common if base_common else float('nan'):>9.2f}x   ({len(common)} tests)")
    if args.json:
        rows = [{k: v for k, v in m.items() if k != "times"} for m in (base, head)]
        summary = {"common_tests": len(common), "common_base_s": round(base_common, 2),
                   "common_head_s": round(head_common, 2),
                   "build_cpu_ratio": round(head["build_cpu_s"] / base["build_cpu_s"], 3),
                   "build_cpu_per_kline_ratio": round(head["build_cpu_s_per_kline"] / base["build_cpu_s_per_kline"], 3),
                   "suite_wall_ratio": round(head["suite_wall_s"] / base["suite_wall_s"], 3),
                   "common_ratio": round(head_common / base_common, 3) if base_common else None}
        results_json.write(args.json, "codebase_time", rows, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
