#!/usr/bin/env python3
"""How much a study's local pool gains from the cores (issue 21: at least 1.8x on 2 cores for 48 points).

    cmake --build build && python3 bench/study_speed.py --json bench/results/study_speed.json

Case: a 48-point study of the bundled stencil model (examples/predict-stencil) on the spec of
examples/study-stencil: Nw 32, 48, 64 and 96 x np 8, 16, 32 and 64 x three network variants (the spec,
NICs 4x faster, NICs with 10x the latency), fast-forward off so that each point is a real emulation
(0.1 to 1 s on one core). `gridcast study run` runs it with -j 1 and with -j N (N: --jobs, default the
core count) into fresh folders, --reps times each, interleaved (j1, jN, j1, jN, ...) so that a change of
the machine's load hits both alike. It prints the wall seconds of each run, the medians and their ratio,
the CPU seconds of the children (os.wait4), and checks that every run's results.csv is byte-identical
(the pool's size must not change a figure). Platform generation is part of each run (3 platforms).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import results_json  # noqa: E402


def write_study(folder: Path) -> Path:
    study = {
        "name": "study-speed",
        "description": "bench/study_speed.py: 48 points of the bundled stencil model",
        "predict": str(ROOT / "examples/predict-stencil/model.json"),
        "platform": {"spec": str(ROOT / "examples/study-stencil/spec.json")},
        "scaling": "weak",
        "set": {"fast_forward": "off"},
        "axes": [{"key": "nw", "values": [32, 48, 64, 96]}, {"key": "np", "values": [8, 16, 32, 64]}],
        "variants": [
            {"name": "10G"},
            {"name": "40G", "set": {"spec.node_kinds.node.nics.link.bandwidth": "40Gbps"}},
            {"name": "50us", "set": {"spec.node_kinds.node.nics.link.latency": "50us"}},
        ],
    }
    path = folder / "study.json"
    path.write_text(json.dumps(study, indent=1) + "\n")
    return path


def run(gridcast: Path, study: Path, out: Path, jobs: int) -> dict:
    if out.exists():
        shutil.rmtree(out)
    cmd = [str(gridcast), "study", "run", str(study), "--out", str(out), "-j", str(jobs), "--quiet"]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    stdout, stderr = proc.communicate()
    if status != 0:
        sys.exit(f"study_speed: {' '.join(cmd)} failed:\n{stdout}{stderr}")
    # The children's CPU: os.wait4 of the study gives its own; the points are its children, waited by it.
    return {"jobs": jobs, "wall_s": round(wall, 3), "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
            "results": (out / "results.csv").read_bytes()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gridcast", default=str(ROOT / "build" / "bin" / "gridcast"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", help="write the figures to this file (bench/results/study_speed.json)")
    args = ap.parse_args()
    gridcast = Path(args.gridcast)
    if not gridcast.exists():
        sys.exit(f"study_speed: {gridcast} not found: build first (cmake --build build)")

    with tempfile.TemporaryDirectory(prefix="gridcast-study-speed-") as tmp:
        folder = Path(tmp)
        study = write_study(folder)
        runs: list[dict] = []
        for rep in range(args.reps):
            for jobs in (1, args.jobs):
                r = run(gridcast, study, folder / f"out-j{jobs}-{rep}", jobs)
                runs.append(r)
                print(f"rep {rep + 1}: -j {jobs}: {r['wall_s']:.2f} s wall, {r['cpu_s']:.2f} s CPU (points included)",
                      flush=True)
        identical = len({r["results"] for r in runs}) == 1
        points = (folder / "out-j1-0" / "results.csv").read_text().count("\n") - 1

    one = statistics.median(r["wall_s"] for r in runs if r["jobs"] == 1)
    many = statistics.median(r["wall_s"] for r in runs if r["jobs"] == args.jobs)
    speedup = one / many
    print(f"\n{points} points: -j 1 median {one:.2f} s, -j {args.jobs} median {many:.2f} s: "
          f"{speedup:.2f}x (target at least 1.8x on 2 cores); results.csv identical in every run: "
          f"{'yes' if identical else 'NO'}")
    if args.json:
        rows = [{k: v for k, v in r.items() if k != "results"} for r in runs]
        results_json.write(Path(args.json), "study_speed", rows,
                           {"points": points, "jobs": args.jobs, "median_wall_s_j1": round(one, 3),
                            f"median_wall_s_j{args.jobs}": round(many, 3), "median_wall_s_jN": round(many, 3),
                            "speedup": round(speedup, 3), "target_speedup": 1.8, "results_identical": identical,
                            "reps": args.reps})
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
