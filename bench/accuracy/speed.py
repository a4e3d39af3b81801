#!/usr/bin/env python3
"""Speed of `gridcast fit` and `gridcast predict` at the sizes issue 7 names.

    cmake --build build --target gridcast && python3 bench/accuracy/speed.py
    python3 bench/accuracy/speed.py --predict-iterations 8      # a shorter predict

1. fit: 20 profiles of 8 ranks x ~100k calls each (the stencil of examples/predict-stencil synthesized
   at np 8 and Nw 6400..7160, ~99 000 calls per rank), `gridcast fit` timed (wall and CPU). Target < 10 s.
2. predict: the same model at 4096 ranks on a 4096-host cluster (scripts/gen_cluster.py), for
   --predict-iterations iterations of the stencil (Nw = iterations; the issue's target is 1000
   iterations in under a minute), timed. Prints calls/s so that longer runs can be extrapolated.
Medians of --reps runs. Exit 0 always (figures, not assertions); 77 when gridcast is missing.
"""
from __future__ import annotations

import argparse
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds (children's user + system) of one command, and its output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        sys.stderr.write(f"command failed ({res.returncode}): {' '.join(cmd)}\n{res.stdout}{res.stderr}")
        raise SystemExit(1)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, res.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gridcast", default=str(ROOT / "build" / "bin" / "gridcast"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--predict-ranks", type=int, default=4096)
    ap.add_argument("--predict-iterations", type=int, default=4)
    args = ap.parse_args()
    if not Path(args.gridcast).exists():
        print("speed: build gridcast first", file=sys.stderr)
        return 77
    model = ROOT / "examples" / "predict-stencil" / "model.json"
    with tempfile.TemporaryDirectory(prefix="gridcast-speed-") as tmp:
        work = Path(tmp)
        profiles = []
        for i in range(20):
            nw = 6400 + 40 * i
            p = work / f"p{nw}"
            subprocess.run([args.gridcast, "synth", str(model), "--nw", str(nw), "--np", "8", "--out", str(p)],
                           check=True, capture_output=True)
            profiles.append(str(p))
        fits = [timed([args.gridcast, "fit", *profiles, "-o", str(work / "fit.json")]) for _ in range(args.reps)]
        print(f"fit: 20 profiles x 8 ranks x ~99k calls: wall {statistics.median(f[0] for f in fits):.2f} s, "
              f"CPU {statistics.median(f[1] for f in fits):.2f} s (median of {args.reps}; target < 10 s)")

        subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_cluster.py"), "--hosts",
                        str(args.predict_ranks), "--out-dir", str(work / "cluster")], check=True, capture_output=True)
        runs = [timed([args.gridcast, "predict", str(model), "--nw", str(args.predict_iterations), "--np",
                       str(args.predict_ranks), "--platform", str(work / "cluster" / "platform.xml")])
                for _ in range(args.reps)]
        calls = int(re.search(r"calls: (\d+)", runs[0][2]).group(1))
        wall = statistics.median(r[0] for r in runs)
        print(f"predict: {args.predict_ranks} ranks x {args.predict_iterations} iterations ({calls} calls): wall "
              f"{wall:.2f} s, CPU {statistics.median(r[1] for r in runs):.2f} s, {calls / wall:,.0f} calls/s "
              f"(median of {args.reps}; target: 1000 iterations in < 60 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
