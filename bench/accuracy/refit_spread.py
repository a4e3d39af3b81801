#!/usr/bin/env python3
"""How much a size-extrapolation prediction moves between retrainings, and which sites move it: refits
random subsets of recorded training profiles, predicts each model at the targets, and prints the spread
of the makespans and the sites whose predicted work at the largest target moves most.

    python3 bench/accuracy/real_size.py --apps hpl --keep /tmp/rs --train-runs 8      # record once
    python3 bench/accuracy/refit_spread.py /tmp/rs --app hpl --runs 3 --draws 12 --targets 640,1024

Training profiles are DIR/APP-train-SIZE-K (real_size.py's --keep names; SIZE taken from the name); each
draw takes --runs of them at every size, uniformly without replacement from a generator seeded by
--seed, fits them with `gridcast fit` (default options) and predicts with `gridcast predict --np 2
--ranks-per-host 2` on platforms/this-machine (as real_size.py). A site's predicted work is its
model.json formula at the target times the counts of its enclosing loops (the ratio forest is normalized
to mean 1 per site, so it does not change a site's total): `flops` of a compute call, `absorbed_flops` of
a polling construct, shown as seconds on the recording host (run.json `host.speed_flops`). Fitting is
cheap and recording is not: record many runs once, refit subsets here (docs/reference/latency-model.md, "A median
per call, and what moved the HPL prediction"). Subsets of one pool overlap, so they vary less than fresh
recordings would. Exit 0 when the table was printed, 1 when a step failed or the directory has too few
profiles.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PLATFORM = ROOT / "platforms" / "this-machine" / "platform.xml"

# model.json's feature names (models/src/trace_formula.cpp), evaluated at (Nw, Np).
FEATURES = {
    "1": lambda w, p: 1.0, "Nw": lambda w, p: w, "Np": lambda w, p: p, "Nw/Np": lambda w, p: w / p,
    "Nw*Np": lambda w, p: w * p, "log2(Np)": lambda w, p: math.log2(p), "1/Np": lambda w, p: 1 / p,
    "Nw^2": lambda w, p: w * w, "Nw^3": lambda w, p: w ** 3, "Nw^(1/2)": lambda w, p: math.sqrt(w),
    "Nw^(2/3)": lambda w, p: w ** (2 / 3), "Np^2": lambda w, p: p * p, "Nw^2/Np": lambda w, p: w * w / p,
    "(Nw/Np)^(1/2)": lambda w, p: math.sqrt(w / p), "(Nw/Np)^(1/3)": lambda w, p: (w / p) ** (1 / 3),
    "(Nw/Np)^(2/3)": lambda w, p: (w / p) ** (2 / 3), "Nw/Np^2": lambda w, p: w / (p * p),
    "Nw*log2(Np)": lambda w, p: w * math.log2(p), "Nw/(Np-1)": lambda w, p: w / (p - 1) if p > 1 else 0.0,
    "Nw^3/Np": lambda w, p: w ** 3 / p, "Nw^3/Np^2": lambda w, p: w ** 3 / (p * p),
    "Nw^2/Np^(1/2)": lambda w, p: w * w / math.sqrt(p), "Nw*log2(Nw)": lambda w, p: w * math.log2(w) if w > 0 else 0.0,
    "Nw/Np*log2(Nw/Np)": lambda w, p: w / p * math.log2(w / p) if w > p else 0.0,
}


def evaluate(formula: dict, nw: float, np_: float) -> float:
    try:
        value = sum(t["coef"] * FEATURES[t["feature"]](nw, np_) for t in formula["terms"])
    except KeyError as e:
        raise SystemExit(f"refit_spread: unknown feature {e} in a model formula (update FEATURES)")
    return round(value) if formula.get("integer") else value


def site_work(model: dict, nw: float, np_: float) -> dict[str, tuple[float, str]]:
    """'group G @ path fn' -> (predicted flops of all its calls at (nw, np), formula text)."""
    out: dict[str, tuple[float, str]] = {}

    def walk(nodes: list, mult: float, path: tuple, group: int) -> None:
        for i, n in enumerate(nodes):
            here = path + (i,)
            if "loop" in n:
                walk(n["body"], mult * max(evaluate(n["loop"], nw, np_), 0), here, group)
            elif "poll" in n and "absorbed_flops" in n:
                f = n["absorbed_flops"]
                out[f"group {group} @{'.'.join(map(str, here))} {n['fn']} (absorbed)"] = (
                    mult * evaluate(f, nw, np_), f["text"])
            elif "call" in n and "flops" in n and model["tokens"][n["call"]]["op"] == "compute":
                f = n["flops"]
                out[f"group {group} @{'.'.join(map(str, here))} {n['fn']}"] = (mult * evaluate(f, nw, np_), f["text"])

    for g in model["groups"]:
        walk(g["template"], 1.0, (), g["id"])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("dir", type=Path, help="a real_size.py --keep directory (APP-train-SIZE-K profiles)")
    ap.add_argument("--app", default="hpl", help="the application's name prefix in DIR (default hpl)")
    ap.add_argument("--runs", type=int, default=3, help="profiles per training size in each draw (default 3)")
    ap.add_argument("--draws", type=int, default=12, help="how many subsets to refit (default 12)")
    ap.add_argument("--targets", default="640,1024", help="comma-separated target sizes (default 640,1024)")
    ap.add_argument("--seed", type=int, default=1, help="the subsets' generator seed (default 1)")
    ap.add_argument("--top", type=int, default=6, help="sites to list, largest spread first (default 6)")
    ap.add_argument("--gridcast", default=str(ROOT / "build" / "bin" / "gridcast"), help="the gridcast binary")
    args = ap.parse_args()
    try:
        targets = [int(t) for t in args.targets.split(",") if t]
    except ValueError:
        ap.error(f"--targets: not a list of integers: {args.targets}")
    if not targets or args.runs < 1 or args.draws < 1:
        ap.error("--targets, --runs and --draws need at least one")
    pools: dict[int, list[Path]] = {}
    for p in sorted(args.dir.glob(f"{args.app}-train-*-*")):
        m = re.fullmatch(rf"{re.escape(args.app)}-train-(\d+)-(\d+)", p.name)
        if m and p.is_dir():
            pools.setdefault(int(m.group(1)), []).append(p)
    short = {n: len(v) for n, v in pools.items() if len(v) < args.runs}
    if not pools or short:
        print(f"refit_spread: {args.dir}: need {args.runs} {args.app}-train-SIZE-K profiles at every size, found "
              f"{ {n: len(v) for n, v in sorted(pools.items())} }", file=sys.stderr)
        return 1
    speed = json.loads((next(iter(pools.values()))[0] / "run.json").read_text())["host"]["speed_flops"]
    rng = random.Random(args.seed)
    makespans: dict[int, list[float]] = {t: [] for t in targets}
    sites: dict[str, list[tuple[float, str]]] = {}
    big = max(targets)
    print(f"# refit_spread: {args.app}, sizes {', '.join(map(str, sorted(pools)))} "
          f"({', '.join(str(len(v)) for _, v in sorted(pools.items()))} profiles), {args.runs} a size, {args.draws} draws")
    with tempfile.TemporaryDirectory(prefix="gridcast-refit-") as tmp:
        for d in range(args.draws):
            chosen = [p for n in sorted(pools) for p in sorted(rng.sample(pools[n], args.runs))]
            model = Path(tmp) / f"model-{d}.json"
            fit = subprocess.run([args.gridcast, "fit", *map(str, chosen), "-o", str(model)], capture_output=True, text=True)
            if fit.returncode != 0:
                sys.stderr.write(f"refit_spread: fit of draw {d} failed:\n{fit.stderr}")
                return 1
            row = []
            for t in targets:
                out = subprocess.run([args.gridcast, "predict", str(model), "--nw", str(t), "--np", "2", "--platform",
                                      str(PLATFORM), "--ranks-per-host", "2", "--no-timeline"], capture_output=True, text=True)
                m = re.search(r"makespan: ([0-9.eE+-]+) s", out.stdout)
                if out.returncode != 0 or not m:
                    sys.stderr.write(f"refit_spread: predict of draw {d} at {t} failed:\n{out.stderr}")
                    return 1
                makespans[t].append(float(m.group(1)))
                row.append(f"{t}: {float(m.group(1)):.4f} s")
            for key, (work, text) in site_work(json.loads(model.read_text()), big, 2).items():
                sites.setdefault(key, [(0.0, "-")] * d).append((work / speed, text))
            for key in sites:  # a site absent from this draw's model (another template) counts as 0
                if len(sites[key]) < d + 1:
                    sites[key].append((0.0, "-"))
            print(f"  draw {d:>2}: {'  '.join(row)}", flush=True)
    print("\nmakespan over the draws:")
    for t in targets:
        v = makespans[t]
        print(f"  {args.app} at {t}: {min(v):.4f} .. {max(v):.4f} s, median {statistics.median(v):.4f} s")
    print(f"\nsites by the spread of their predicted work at {big} (seconds on the recording host):")
    ranked = sorted(sites.items(), key=lambda kv: -(max(w for w, _ in kv[1]) - min(w for w, _ in kv[1])))
    for key, values in ranked[:args.top]:
        works = [w for w, _ in values]
        forms = sorted({text for _, text in values})
        print(f"  {key}: {min(works):.4f} .. {max(works):.4f} s over {len(forms)} form(s): {'; '.join(forms[:4])}"
              f"{' ...' if len(forms) > 4 else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
