#!/usr/bin/env python3
"""Speed of `gridcast fit` and `gridcast predict` at the sizes the prediction targets name.

    cmake --build build --target gridcast && python3 bench/accuracy/speed.py
    python3 bench/accuracy/speed.py --predict-iterations 8      # a shorter predict
    python3 bench/accuracy/speed.py --skip-fit --reps 1          # only predict and the fast-forward error

1. fit: 20 profiles of 8 ranks x ~100k calls each (the stencil of examples/predict-stencil synthesized
   at np 8 and Nw 6400..7160, ~99 000 calls per rank), `gridcast fit` timed (wall and CPU). Target < 10 s.
2. predict: the same model at 4096 ranks on a 4096-host cluster (scripts/gen_cluster.py), for
   --predict-iterations iterations of the stencil (Nw = iterations; the issue's target is 1000
   iterations in under a minute), timed, with steady-state fast-forward (predict's default, `--fast-forward
   auto`; docs/reference/emulator.md). Prints calls/s of what was emulated.
3. fast-forward error: the same model at --ff-ranks ranks x --ff-iterations iterations (256 x 200 by
   default, where the full emulation is affordable), predicted with `--fast-forward auto` and `off`:
   the relative makespan error and both wall times.
Medians of --reps runs (wall time is that of a possibly loaded machine; CPU time is less disturbed).
Exit 0 always (figures, not assertions); 77 when gridcast is missing.
"""
from __future__ import annotations

import argparse
import json
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
    ap.add_argument("--predict-iterations", type=int, default=1000)
    ap.add_argument("--ff-ranks", type=int, default=256)
    ap.add_argument("--ff-iterations", type=int, default=200)
    ap.add_argument("--skip-fit", action="store_true", help="do not time `gridcast fit`")
    args = ap.parse_args()
    if not Path(args.gridcast).exists():
        print("speed: build gridcast first", file=sys.stderr)
        return 77
    model = ROOT / "examples" / "predict-stencil" / "model.json"
    with tempfile.TemporaryDirectory(prefix="gridcast-speed-") as tmp:
        work = Path(tmp)
        if not args.skip_fit:
            profiles = []
            for i in range(20):
                nw = 6400 + 40 * i
                p = work / f"p{nw}"
                subprocess.run([args.gridcast, "synth", "--force", str(model), "--nw", str(nw), "--np", "8", "--out", str(p)],
                               check=True, capture_output=True)
                profiles.append(str(p))
            fits = [timed([args.gridcast, "fit", *profiles, "-o", str(work / "fit.json")]) for _ in range(args.reps)]
            print(f"fit: 20 profiles x 8 ranks x ~99k calls: wall {statistics.median(f[0] for f in fits):.2f} s, "
                  f"CPU {statistics.median(f[1] for f in fits):.2f} s (median of {args.reps}; target < 10 s)")

        subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_cluster.py"), "--hosts",
                        str(args.predict_ranks), "--out-dir", str(work / "cluster")], check=True, capture_output=True)
        def predict(np_: int, nw: int, platform: Path, out: Path, extra: list[str]) -> tuple[float, float, str]:
            return timed([args.gridcast, "predict", str(model), "--nw", str(nw), "--np", str(np_), "--platform",
                          str(platform), "--out", str(out), "--no-timeline", *extra])

        runs = [predict(args.predict_ranks, args.predict_iterations, work / "cluster" / "platform.xml", work / "big", [])
                for _ in range(args.reps)]
        calls = int(re.search(r"calls: (\d+)", runs[0][2]).group(1))
        ff = json.loads((work / "big" / "prediction.json").read_text())["fast_forward"]
        emulated = calls - ff["extrapolated_calls"]
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        how = (f"fast-forward skipped {ff['iterations_skipped_per_rank']} of {ff['loop_iterations']} loop iterations "
               f"per rank" if ff["applied"] else f"no fast-forward ({ff['reason']})")
        print(f"predict: {args.predict_ranks} ranks x {args.predict_iterations} iterations ({calls} calls, {emulated} "
              f"emulated; {how}): wall {wall:.2f} s, CPU {cpu:.2f} s, {emulated / cpu:,.0f} emulated calls per CPU s "
              f"(median of {args.reps}; target: 1000 iterations in < 60 s)")

        subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_cluster.py"), "--hosts", str(args.ff_ranks),
                        "--out-dir", str(work / "ffcluster")], check=True, capture_output=True)
        plat = work / "ffcluster" / "platform.xml"
        errors, walls_auto, walls_off = [], [], []
        for rep in range(args.reps):
            a = predict(args.ff_ranks, args.ff_iterations, plat, work / f"ff-auto{rep}", [])
            o = predict(args.ff_ranks, args.ff_iterations, plat, work / f"ff-off{rep}", ["--fast-forward", "off"])
            pa = json.loads((work / f"ff-auto{rep}" / "prediction.json").read_text())
            po = json.loads((work / f"ff-off{rep}" / "prediction.json").read_text())
            errors.append(abs(pa["makespan_s"] / po["makespan_s"] - 1))
            walls_auto.append(a[0])
            walls_off.append(o[0])
        f = pa["fast_forward"]
        print(f"fast-forward error: {args.ff_ranks} ranks x {args.ff_iterations} iterations, makespan "
              f"{pa['makespan_s']:.9g} s (auto: {f['iterations_skipped_per_rank']} of {f['loop_iterations']} loop "
              f"iterations skipped) vs {po['makespan_s']:.9g} s (off): relative error "
              f"{statistics.median(errors):.2e}; wall {statistics.median(walls_auto):.2f} s vs "
              f"{statistics.median(walls_off):.2f} s (median of {args.reps})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
