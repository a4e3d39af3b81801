#!/usr/bin/env python3
"""Where a prediction's error is: per-function totals of `gridcast predict` against a measured profile.

    python3 bench/accuracy/compare_functions.py MODEL.json MEASURED_PROFILE --platform P.xml [--ranks-per-host K]

Predicts at the measured profile's (Nw, Np) (run.json's nw and np) on the platform, then prints one row
per function: calls, the time the prediction spends in it (prediction.json `functions[].seconds`, all
ranks), the time the profile recorded in it (the sum of its records' `seconds`, all ranks), their
difference and that difference as a share of the measured total. Compute functions also show the
predicted work in flops (contribution.json) as seconds on the recording host (run.json's
host.speed_flops): the latency model's own prediction, before the emulator's timing. The last rows compare
the makespan with the longest rank's recorded span (the sum of its records' seconds: a profile covers its
rank's whole time from MPI_Init to MPI_Finalize).

A function whose predicted and measured times differ most carries the error: a compute function points
at its latency model (model.json `latency`, the site formulas), an MPI function at waiting (an imbalance
the model does not reproduce) or at a cost the emulation does not have. Exit 0 when the table was printed,
1 when a step failed.
"""
from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def measured_totals(gridcast: str, profile: Path, tmp: Path) -> tuple[dict, dict, list[float], dict]:
    """(seconds by function, calls by function, span by rank, run.json) of a profile, all ranks."""
    run = json.loads((profile / "run.json").read_text())
    jsonl = profile
    if run["encoding"] != "jsonl":
        jsonl = tmp / "measured-jsonl"
        subprocess.run([gridcast, "convert", "--force", str(profile), "--to", "jsonl", "--out", str(jsonl)], check=True,
                       capture_output=True, text=True)
    seconds: dict[str, float] = collections.defaultdict(float)
    calls: collections.Counter = collections.Counter()
    spans = []
    for r in range(run["np"]):
        span = 0.0
        for name in (f"rank-{r:05d}.jsonl",):
            with open(jsonl / name) as f:
                for line in f:
                    if not line.strip() or line.lstrip().startswith("#"):
                        continue
                    rec = json.loads(line)
                    fn = rec.get("fn", rec["op"])
                    s = max(rec.get("seconds", -1.0), 0.0)
                    seconds[fn] += s
                    calls[fn] += 1
                    span += s
        spans.append(span)
    return seconds, calls, spans, run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("model", type=Path, help="model.json written by `gridcast fit`")
    ap.add_argument("measured", type=Path, help="the measured run's profile directory (its nw and np are the target)")
    ap.add_argument("--platform", type=Path, required=True, help="platform XML to predict on")
    ap.add_argument("--ranks-per-host", type=int, help="passed to `gridcast predict` (else its default placement)")
    ap.add_argument("--gridcast", default=str(ROOT / "build" / "bin" / "gridcast"), help="the gridcast binary")
    ap.add_argument("--top", type=int, default=0, help="print only the N functions with the largest |difference| (0: all)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gridcast-compare-") as tmp_name:
        tmp = Path(tmp_name)
        try:
            seconds, calls, spans, run = measured_totals(args.gridcast, args.measured, tmp)
        except (OSError, KeyError, json.JSONDecodeError, subprocess.CalledProcessError) as e:
            print(f"compare_functions: cannot read the profile {args.measured}: {e}", file=sys.stderr)
            return 1
        cmd = [args.gridcast, "predict", str(args.model), "--nw", repr(float(run.get("nw", 0))), "--np", str(run["np"]),
               "--platform", str(args.platform), "--out", str(tmp / "p"), "--no-timeline"]
        if args.ranks_per_host:
            cmd += ["--ranks-per-host", str(args.ranks_per_host)]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            print(f"compare_functions: {' '.join(cmd)} failed:\n{out.stderr}", file=sys.stderr)
            return 1
        prediction = json.loads((tmp / "p" / "prediction.json").read_text())
        contribution = json.loads((tmp / "p" / "contribution.json").read_text())
    speed = run["host"]["speed_flops"]
    pred_s = {f["name"]: f["seconds"] for f in prediction["functions"]}
    pred_calls = {f["name"]: f["calls"] for f in prediction["functions"]}
    work_s = {f["name"]: f["flops"] / speed for f in contribution["functions"] if f.get("latency_model")}
    names = sorted(set(pred_s) | set(seconds), key=lambda n: -abs(pred_s.get(n, 0.0) - seconds.get(n, 0.0)))
    if args.top > 0:
        names = names[:args.top]
    total = sum(seconds.values())
    print(f"# {args.model} predicted at Nw {run.get('nw', 0):g}, Np {run['np']} on {args.platform}, against {args.measured}")
    print(f"# times summed over the {run['np']} ranks; 'work s' = predicted flops / the recording host's "
          f"{speed:.4g} flop/s")
    print(f"{'function':<24} {'calls p':>8} {'calls m':>8} {'predicted s':>12} {'work s':>10} {'measured s':>11} "
          f"{'diff s':>10} {'diff %':>8} {'of total':>8}")
    for n in names:
        p, m = pred_s.get(n, 0.0), seconds.get(n, 0.0)
        rel = f"{100 * (p - m) / m:+7.1f}%" if m > 0 else "     n/a"
        work = f"{work_s[n]:10.4f}" if n in work_s else f"{'':>10}"
        print(f"{n:<24} {pred_calls.get(n, 0):>8} {calls.get(n, 0):>8} {p:>12.5f} {work} {m:>11.5f} {p - m:>+10.5f} "
              f"{rel} {100 * (p - m) / total:+7.1f}%")
    makespan, span = prediction["makespan_s"], max(spans)
    print(f"\nmakespan {makespan:.5f} s, longest recorded rank span {span:.5f} s: {100 * (makespan - span) / span:+.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
