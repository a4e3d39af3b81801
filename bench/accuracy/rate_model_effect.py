#!/usr/bin/env python3
"""How much a rate model (compute charged at the host's rate for the rank's data footprint) would move a
size extrapolation: reads run.json of training and measured profiles, prints each one's footprint, the
rate its host's curve gives there, and for every target the factor rate(training) / rate(target) that
such a model would apply to the target's predicted compute time (relative to one host speed).

    python3 bench/accuracy/rate_model_effect.py --train DIR... --target DIR...
    # e.g. on the profiles of `python3 bench/accuracy/real_size.py --apps hpl --keep /tmp/rs`:
    python3 bench/accuracy/rate_model_effect.py --train /tmp/rs/hpl-train-{128,192,256,320}-0 \\
            --target /tmp/rs/hpl-measure-640-0 /tmp/rs/hpl-measure-1024-0

A profile's footprint is run.json `footprint_bytes` (each rank's peak resident set above its resident
set when MPI_Init returned, recorded by the hook), its mean over the ranks; the curve is run.json
`host.rate_curve` (calibration.json `compute.rate_by_working_set`, carried by `gridcast profile
--calibration`), interpolated in log2 of the size as gridcast's `rate_at` does. The factor is taken
against the training point nearest the target in footprint (the one a regression's extrapolation leans
on): above 1, the target's compute runs slower per flop than that training point's, and a prediction at
one host speed comes out under by that much. Exit 1 when a profile lacks the footprint or the curve.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path


def rate_at(curve: list[dict], size: float) -> float:
    """The rate at `size` bytes: linear in log2(size) between points, the end points' rates outside."""
    if size <= curve[0]["working_set_bytes"]:
        return curve[0]["speed_flops"]
    if size >= curve[-1]["working_set_bytes"]:
        return curve[-1]["speed_flops"]
    k = next(i for i, p in enumerate(curve) if p["working_set_bytes"] >= size)
    a, b = curve[k - 1], curve[k]
    t = (math.log2(size) - math.log2(a["working_set_bytes"])) / (
        math.log2(b["working_set_bytes"]) - math.log2(a["working_set_bytes"]))
    return a["speed_flops"] + t * (b["speed_flops"] - a["speed_flops"])


def describe(profile: Path) -> tuple[float, float, float]:
    """(nw, mean footprint in bytes, rate at it) of a profile."""
    run = json.loads((profile / "run.json").read_text())
    footprints = run.get("footprint_bytes")
    curve = run["host"].get("rate_curve")
    if not footprints or not curve:
        missing = "footprint_bytes" if not footprints else "host.rate_curve"
        raise SystemExit(f"rate_model_effect: {profile / 'run.json'} has no {missing} (record it with this "
                         "gridcast's `profile --calibration` on a calibration with compute.rate_by_working_set)")
    fp = sum(footprints) / len(footprints)
    return run.get("nw", 0.0), fp, rate_at(curve, fp)


def factor(train: list[tuple[float, float, float]], fp: float, rate: float) -> float:
    """rate at the training footprint nearest `fp` (in log2) / `rate`; `train` holds describe() tuples."""
    nearest = min(train, key=lambda t: abs(math.log2(max(t[1], 1.0)) - math.log2(max(fp, 1.0))))
    return nearest[2] / rate


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--train", type=Path, nargs="+", required=True, help="training profile directories")
    ap.add_argument("--target", type=Path, nargs="+", required=True, help="measured profile directories")
    args = ap.parse_args()
    train = [(p, *describe(p)) for p in args.train]
    print(f"{'profile':<40} {'nw':>8} {'footprint MB':>12} {'rate Gflop/s':>12} {'factor':>8}")
    for p, nw, fp, rate in train:
        print(f"{str(p)[-40:]:<40} {nw:>8g} {fp / 1e6:>12.2f} {rate / 1e9:>12.3f} {'':>8}")
    for p in args.target:
        nw, fp, rate = describe(p)
        f = factor([t[1:] for t in train], fp, rate)
        print(f"{str(p)[-40:]:<40} {nw:>8g} {fp / 1e6:>12.2f} {rate / 1e9:>12.3f} {f:>8.3f}")
    print("factor: rate at the nearest training footprint / rate at the target's (> 1: the target is slower per flop)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
