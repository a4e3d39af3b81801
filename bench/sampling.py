#!/usr/bin/env python3
"""Sampled prediction (`gridcast predict --sample`, docs/reference/sampling.md) against full emulation.

    cmake --build build --target gridcast && python3 bench/sampling.py --json bench/results/sampling.json
    python3 bench/sampling.py --seeds 10 --workloads stencil-steady         # a quick look

For each workload below:
  full      `predict --fast-forward off`: every iteration emulated, the exact answer, and its wall time;
  ff        `predict` with fast-forward (the default), for the steady workloads' comparison;
  sampled   `predict --sample auto` once per --sample-seed 1..S (the same run, another draw of iterations):
            the estimate's error against full, whether full lies in the 95 % interval (coverage, up to
            1e-9 of rounding: an interval of width 0 is exact only to the clock's rounding), the
            share of iterations emulated and the wall time (median), and full's wall over that median.
The phases column counts the strata, the transient first iterations' one included. The workloads are run
one after another, nothing else of the bench beside them, so that the wall times
are comparable.

Workloads:
  stencil-steady   examples/predict-stencil/model.json at Nw 512, 256 ranks: every iteration alike
                   (the issue's "steady workloads" check: --sample auto against fast-forward);
  overlap-solver   examples/overlap-solver/model.json at Nw 256, 64 ranks: nonblocking halo with overlap;
  cg-dot           the corpus' conjugate gradient (examples/corpus/cg-dot), fitted from its training
                   recordings (bench/corpus_validation.py's cache), at Nw 1024 and 1,024 ranks, with
                   --variability on: each call's work drawn from its fitted distribution, so iterations
                   differ and fast-forward's window is a guess.
Exit 0 when every run succeeded (the figures are reported, not judged), 1 otherwise, 77 when gridcast is
missing.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import results_json  # noqa: E402


def cluster(hosts: int, work: Path) -> Path:
    out = work / f"cluster-{hosts}"
    if not (out / "platform.xml").exists():
        subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_cluster.py"), "--hosts", str(hosts), "--out",
                        str(out)], check=True, capture_output=True)
    return out / "platform.xml"


def cg_dot_model(gridcast: str, work: Path) -> Path:
    """The corpus' cg-dot fitted from its training recordings (recorded once, cached like corpus_validation's)."""
    import corpus_validation as cv  # noqa: E402  (imports trace_model_validation, which needs nothing more)
    steps = cv.Steps(gridcast, None)
    train_np, train_nw = cv.PROGRAMS["cg-dot"]
    cache = Path(os.environ.get("GRIDCAST_CACHE", str(Path.home() / ".cache" / "gridcast"))) / "corpus-bench"
    profiles = [cv.record(steps, "cg-dot", p, w, cache) for p in train_np for w in train_nw]
    model = work / "cg-dot.model.json"
    subprocess.run([gridcast, "fit", *map(str, profiles), "-o", str(model)], check=True, capture_output=True)
    return model


def predict(gridcast: str, model: Path, nw: int, np_: int, platform: Path, extra: list[str]) -> dict:
    cmd = [gridcast, "predict", str(model), "--nw", str(nw), "--np", str(np_), "--platform", str(platform), *extra]
    with tempfile.TemporaryDirectory() as tmp:
        start = time.monotonic()
        p = subprocess.run([*cmd, "--out", tmp, "--no-timeline"], capture_output=True, text=True)
        wall = time.monotonic() - start
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr}")
        doc = json.loads((Path(tmp) / "prediction.json").read_text())
    return {"wall_s": wall, "makespan_s": doc["makespan_s"], "sampling": doc.get("sampling"),
            "fast_forward": doc.get("fast_forward")}


def measure(gridcast: str, name: str, model: Path, nw: int, np_: int, platform: Path, extra: list[str],
            seeds: int) -> dict:
    print(f"{name}: full emulation ...", file=sys.stderr, flush=True)
    full = predict(gridcast, model, nw, np_, platform, [*extra, "--fast-forward", "off"])
    ff = predict(gridcast, model, nw, np_, platform, extra)
    exact = full["makespan_s"]
    runs = []
    for s in range(1, seeds + 1):
        r = predict(gridcast, model, nw, np_, platform, [*extra, "--sample", "auto", "--sample-seed", str(s)])
        smp = r["sampling"]
        if not smp["applied"]:
            raise RuntimeError(f"{name}: sampling not applied: {smp['reason']}")
        lo, hi = smp["interval_s"]
        units = smp["units"]
        # Covered: inside the interval, up to the rounding of the clock's sums (1e-9 relative), which an
        # interval of width 0 (every sampled unit alike) would otherwise miss.
        slack = 1e-9 * exact
        runs.append({"seed": s, "estimate_s": r["makespan_s"], "error_pct": 100 * (r["makespan_s"] - exact) / exact,
                     "covered": lo - slack <= exact <= hi + slack, "half_width_pct": 100 * smp["half_width_relative"],
                     "emulated_pct": 100 * smp["units_emulated"] / smp["units"], "phases": len(smp["phases"]),
                     "wall_s": r["wall_s"]})
        print(f"  seed {s}: {runs[-1]['error_pct']:+.3f} %, interval +/-{runs[-1]['half_width_pct']:.3f} %, "
              f"{'covered' if runs[-1]['covered'] else 'NOT covered'}, {runs[-1]['emulated_pct']:.1f} % emulated, "
              f"{r['wall_s']:.2f} s", file=sys.stderr, flush=True)
    wall = statistics.median(r["wall_s"] for r in runs)
    errors = [abs(r["error_pct"]) for r in runs]
    return {"workload": name, "nw": nw, "np": np_, "options": extra, "units": units,
            "full_makespan_s": exact, "full_wall_s": full["wall_s"],
            "ff_makespan_s": ff["makespan_s"], "ff_error_pct": 100 * (ff["makespan_s"] - exact) / exact,
            "ff_applied": bool(ff["fast_forward"] and ff["fast_forward"]["applied"]), "ff_wall_s": ff["wall_s"],
            "seeds": seeds, "median_abs_error_pct": statistics.median(errors), "max_abs_error_pct": max(errors),
            "covered": sum(r["covered"] for r in runs),
            "median_half_width_pct": statistics.median(r["half_width_pct"] for r in runs),
            "median_emulated_pct": statistics.median(r["emulated_pct"] for r in runs),
            "phases": statistics.median(r["phases"] for r in runs),
            "median_sampled_wall_s": wall, "speedup": full["wall_s"] / wall,
            "sample_vs_ff_pct": 100 * (statistics.median(r["estimate_s"] for r in runs) - ff["makespan_s"]) /
            ff["makespan_s"], "runs": runs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gridcast", default=str(ROOT / "build" / "bin" / "gridcast"))
    ap.add_argument("--seeds", type=int, default=100, help="sample seeds per workload (default 100)")
    ap.add_argument("--workloads", default="stencil-steady,overlap-solver,cg-dot")
    ap.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "gridcast-sampling-bench"))
    ap.add_argument("--json", help="write the figures here (bench/results/sampling.json)")
    a = ap.parse_args(argv)
    if not Path(a.gridcast).exists():
        print(f"sampling: {a.gridcast} not built", file=sys.stderr)
        return 77
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    wanted = a.workloads.split(",")
    rows = []
    try:
        if "stencil-steady" in wanted:
            rows.append(measure(a.gridcast, "stencil-steady", ROOT / "examples/predict-stencil/model.json", 512, 256,
                                cluster(256, work), [], a.seeds))
        if "overlap-solver" in wanted:
            rows.append(measure(a.gridcast, "overlap-solver", ROOT / "examples/overlap-solver/model.json", 256, 64,
                                cluster(64, work), [], a.seeds))
        if "cg-dot" in wanted:
            rows.append(measure(a.gridcast, "cg-dot", cg_dot_model(a.gridcast, work), 1024, 1024, cluster(1024, work),
                                ["--variability", "on", "--seed", "1"], a.seeds))
    except (RuntimeError, subprocess.CalledProcessError) as e:
        print(f"sampling: {e}", file=sys.stderr)
        return 1
    print(f"{'workload':<16} {'ranks':>6} {'units':>6} {'phases':>6} {'|err| med':>9} {'max':>7} {'covered':>9} "
          f"{'+/- med':>8} {'emul.':>6} {'full s':>8} {'sampled s':>9} {'speedup':>7} {'ff err':>7}")
    for r in rows:
        print(f"{r['workload']:<16} {r['np']:>6} {r['units']:>6} {r['phases']:>6g} {r['median_abs_error_pct']:>8.3f}% "
              f"{r['max_abs_error_pct']:>6.3f}% {r['covered']:>4}/{r['seeds']:<4} {r['median_half_width_pct']:>7.3f}% "
              f"{r['median_emulated_pct']:>5.1f}% {r['full_wall_s']:>8.2f} {r['median_sampled_wall_s']:>9.2f} "
              f"{r['speedup']:>6.1f}x {r['ff_error_pct']:>+6.3f}%")
    if a.json:
        summary = {r["workload"]: {k: r[k] for k in ("median_abs_error_pct", "max_abs_error_pct", "covered", "seeds",
                                                     "median_emulated_pct", "speedup", "sample_vs_ff_pct")}
                   for r in rows}
        results_json.write(Path(a.json), "sampling", rows, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
