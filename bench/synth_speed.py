#!/usr/bin/env python3
"""Synthesis speed and memory of the trace model.

    cmake --build build --target gridcast gridcast_bench_synth_speed && python3 bench/synth_speed.py

Fits the models of examples/stencil3d and examples/master-worker (training runs recorded with smpirun,
as bench/trace_model_validation.py does; reused from --work), then streams every rank at np 64 with
build/bin/gridcast_bench_synth_speed at a size Nw and at a size whose loops run 100x more iterations,
--reps times each. Prints medians of calls/s and the peak RSS of each run; the issue's targets are
RSS flat (within 10 %) when the iterations grow 100x, and >= 5 M calls/s.
Exit 0 when both hold, 1 otherwise, 77 when a tool is missing.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import trace_model_validation as tmv  # noqa: E402

# app -> (Nw, Nw with 100x the loop iterations)
CASES = {"stencil3d": (32, 3200), "master-worker": (16, 1600)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=str(tmv.ROOT / "build"))
    ap.add_argument("--work", default=None)
    ap.add_argument("--np", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    gridcast = Path(args.build) / "bin" / "gridcast"
    bench = Path(args.build) / "bin" / "gridcast_bench_synth_speed"
    if not gridcast.exists() or not bench.exists() or not shutil.which("smpirun"):
        print("synth_speed: needs gridcast, gridcast_bench_synth_speed and smpirun", file=sys.stderr)
        return 77
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="gridcast-synth-"))
    work.mkdir(parents=True, exist_ok=True)
    ok = True
    print(f"{'app':<14} {'np':>4} {'Nw':>6} {'calls':>10} {'calls/s (median)':>17} {'RSS MiB':>8}")
    for app, sizes in CASES.items():
        folder, train_nw, _, _ = tmv.APPS[app]
        profiles = [tmv.record(app, p, w, work / f"{app}-np{p}-nw{w}", str(gridcast))
                    for p in tmv.TRAIN_NP for w in train_nw]
        model = work / f"{app}.model.json"
        tmv.run([str(gridcast), "fit", *map(str, profiles), "-o", str(model)])
        rss = []
        for nw in sizes:
            runs = [json.loads(tmv.run([str(bench), str(model), str(nw), str(args.np)])) for _ in range(args.reps)]
            rate = statistics.median(r["calls_per_s"] for r in runs)
            mem = statistics.median(r["max_rss_kib"] for r in runs) / 1024
            rss.append(mem)
            ok = ok and rate >= 5e6
            print(f"{app:<14} {args.np:>4} {nw:>6} {runs[0]['calls']:>10} {rate:>17,.0f} {mem:>8.1f}")
        growth = rss[1] / rss[0]
        ok = ok and growth <= 1.10
        print(f"{'':<14} RSS ratio at 100x iterations: {growth:.3f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
