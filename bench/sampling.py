#!/usr/bin/env python3
"""Sampled prediction (`gridcast predict --sample`, docs/reference/sampling.md) against full emulation.

    cmake --build build --target gridcast && python3 bench/sampling.py --json bench/results/sampling.json
    python3 bench/sampling.py --seeds 10 --workloads stencil-steady         # a quick look
    python3 bench/sampling.py --workloads rebuild-grow,rebuild-grow-2pc --keep --json bench/results/sampling.json

For each workload below:
  full      `predict --fast-forward off` (or `replay`): every iteration emulated, the exact answer, and its
            wall time;
  ff        `predict` with fast-forward (the default), for the steady workloads' comparison;
  sampled   `predict --sample auto` (`replay --sample auto`) once per --sample-seed 1..S (the same run, another draw of iterations):
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
                   differ and fast-forward's window is a guess;
  rebuild-grow     bench/sampling/rebuild_grow.c recorded under SMPI at 1,024 ranks (NW 16, 256 steps; cached
                   under $GRIDCAST_CACHE/sampling-bench) and replayed: `replay --sample` of a recorded trace,
                   with phases (a rebuild every 10th step: 4x the bytes, 3x the flops) and messages that grow
                   with the step. A replay has no fast-forward: its ff columns are empty. Run with
                   --margin 0.05: at the default 2 % auto takes a second pass (below);
  rebuild-grow-2pc the same at the default --margin 0.02, 10 seeds at most (each run takes two passes, the
                   second sized from the first's emulated spread);
  varying-solver   bench/sampling/varying_solver.c recorded under SMPI at 1,024 ranks (NW 16, 64 steps): a time
                   stepper whose solver takes 2 to 8 iterations a step (two MPI_Allreduce each on
                   MPI_COMM_WORLD) and checkpoints every 16th step, so no loop repeats: `replay --sample` cuts it
                   into the windows between collectives on MPI_COMM_WORLD. --margin 0.05, as rebuild-grow;
  lammps-check-yes LAMMPS' LJ melt (examples/lammps-smpi, LAMMPS built by scripts/build-lammps-smpi.sh; skipped
                   when it is not) with neighbor lists rebuilt when the atoms have moved far enough, so the
                   dynamics choose the rebuild steps, recorded under SMPI at 64 ranks (131,072 atoms, 200
                   steps; no atom IDs, so no MPI_Scan: see lammps_check_yes) and replayed: windows again;
  lammps-1024      the same at 1,024 ranks (256,000 atoms, 500 steps; the recording takes 55 min here, once):
                   20 seeds at most, as its full replay takes minutes and each sampled run about one.
Each row says when it was measured; --keep keeps the rows of workloads not run from the --json file.
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
CACHE = Path(os.environ.get("GRIDCAST_CACHE", str(Path.home() / ".cache" / "gridcast")))
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
    cache = CACHE / "corpus-bench"
    profiles = [cv.record(steps, "cg-dot", p, w, cache) for p in train_np for w in train_nw]
    model = work / "cg-dot.model.json"
    subprocess.run([gridcast, "fit", *map(str, profiles), "-o", str(model)], check=True, capture_output=True)
    return model


def run(cmd: list[str]) -> dict:
    """One gridcast predict or replay into a scratch folder: its wall time and prediction.json's figures."""
    with tempfile.TemporaryDirectory() as tmp:
        start = time.monotonic()
        p = subprocess.run([*cmd, "--out", tmp, "--no-timeline"], capture_output=True, text=True)
        wall = time.monotonic() - start
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr}")
        doc = json.loads((Path(tmp) / "prediction.json").read_text())
    return {"wall_s": wall, "makespan_s": doc["makespan_s"], "sampling": doc.get("sampling"),
            "fast_forward": doc.get("fast_forward")}


def smpi_record(gridcast: str, name: str, np_: int, nw: int, prepare, argv: list[str], log: str) -> tuple[Path, Path]:
    """A program recorded under SMPI at np_ ranks, one rank per host of a cluster of np_ hosts (record.sh's: 1.25 GB/s
    links, 5 us, a 100 GB/s backbone), with its declared flops as its compute, imported as a binary profile; cached
    under $GRIDCAST_CACHE/sampling-bench/NAME. `prepare(folder)` writes what the run needs into its scratch folder;
    `argv` is the program and its arguments. Returns the profile directory and the platform it ran on."""
    cache = CACHE / "sampling-bench"
    profile = cache / name
    platform = profile.with_name(profile.name + ".platform.xml")
    if (profile / "run.json").exists() and platform.exists():
        return profile, platform
    cache.mkdir(parents=True, exist_ok=True)
    gridcast = str(Path(gridcast).resolve())  # run from the scratch folder below
    print(f"{name}: recording at {np_} ranks under SMPI ...", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        prepare(t)
        subprocess.run([sys.executable, str(ROOT / "scripts/gen_cluster.py"), "--hosts", str(np_), "--bw", "1.25GBps",
                        "--lat", "5us", "--backbone-bw", "100GBps", "--out-dir", tmp], check=True, capture_output=True)
        subprocess.run(["smpirun", "-np", str(np_), "-platform", "platform.xml", "-hostfile", "hostfile", "-trace-ti",
                        "--cfg=tracing/filename:trace.txt", "--cfg=smpi/simulate-computation:no",
                        f"--log=root.thres:{log}", *argv], cwd=tmp, check=True, capture_output=True)
        subprocess.run([gridcast, "import", "tit", "trace.txt", "--nw", str(nw), "--out", str(profile), "--force",
                        "--encoding", "binary"], cwd=tmp, check=True, capture_output=True)
        platform.write_bytes((t / "platform.xml").read_bytes())
    return profile, platform


def recording(gridcast: str, program: str, np_: int, nw: int, steps: int) -> tuple[Path, Path]:
    """bench/sampling/PROGRAM.c (rebuild_grow, varying_solver) recorded under SMPI at np_ ranks (smpi_record)."""
    def build(folder: Path) -> None:
        subprocess.run(["smpicc", "-O2", "-o", str(folder / "rg"), str(ROOT / f"bench/sampling/{program}.c")],
                       check=True, capture_output=True)
    return smpi_record(gridcast, f"{program.replace('_', '-')}-np{np_}-nw{nw}-s{steps}", np_, nw, build,
                       ["./rg", str(nw), str(steps)], "warning")


LAMMPS_LMP = CACHE / "lammps-smpi-build" / "lmp"


def lammps_check_yes(gridcast: str, np_: int, n: int, steps: int) -> tuple[Path, Path] | None:
    """LAMMPS' LJ melt (examples/lammps-smpi/in.lj, 4 n^3 atoms) with neighbor lists rebuilt when the atoms
    have moved far enough (`neigh_modify delay 0 every 1 check yes`: the dynamics choose the rebuild steps)
    and no atom IDs (`atom_modify id no`: the LJ melt needs none, and without them create_atoms makes no
    MPI_Scan, whose SMPI 3.32 algorithm takes minutes at 256 ranks and grows faster than the rank count),
    recorded under SMPI at np_ ranks (smpi_record), LAMMPS built by scripts/build-lammps-smpi.sh; cached. None
    when that LAMMPS is not built."""
    if not LAMMPS_LMP.exists():
        return None
    dims = max(((a, b, np_ // (a * b)) for a in range(1, np_ + 1) for b in range(1, a + 1)
                if np_ % (a * b) == 0 and np_ // (a * b) <= b), key=lambda d: (-(max(d) - min(d)), d))

    def write_input(folder: Path) -> None:
        text = (ROOT / "examples/lammps-smpi/in.lj").read_text()
        text = re.sub(r"(?m)^neigh_modify.*$", "neigh_modify\tdelay 0 every 1 check yes", text)
        text = re.sub(r"(?m)^(atom_style.*)$", "\\1\natom_modify\tid no", text)
        (folder / "in.lj").write_text(text)
    return smpi_record(gridcast, f"lammps-check-yes-noid-np{np_}-n{n}-s{steps}", np_, n, write_input,
                       [str(LAMMPS_LMP), "-in", "in.lj", "-log", "none", "-echo", "none", "-nocite", "-var", "n", str(n),
                        "-var", "px", str(dims[0]), "-var", "py", str(dims[1]), "-var", "pz", str(dims[2]),
                        "-var", "steps", str(steps)], "critical")


def measure(gridcast: str, name: str, model: Path, nw: int, np_: int, platform: Path, extra: list[str],
            seeds: int, recorded: bool = False, sample_extra: list[str] | None = None) -> dict:
    """`model` is a model.json predicted at (nw, np_), or with `recorded` a profile directory replayed;
    `sample_extra` goes to the sampled runs only (--margin)."""
    if recorded:
        base = [gridcast, "replay", str(model), "--platform", str(platform), *extra]
        full_extra = []
    else:
        base = [gridcast, "predict", str(model), "--nw", str(nw), "--np", str(np_), "--platform", str(platform), *extra]
        full_extra = ["--fast-forward", "off"]
    print(f"{name}: full emulation ...", file=sys.stderr, flush=True)
    full = run([*base, *full_extra])
    ff = None if recorded else run(base)  # a replay has no fast-forward
    exact = full["makespan_s"]
    runs = []
    for s in range(1, seeds + 1):
        r = run([*base, "--sample", "auto", "--sample-seed", str(s), *(sample_extra or [])])
        smp = r["sampling"]
        if not smp["applied"]:
            raise RuntimeError(f"{name}: sampling not applied: {smp['reason']}")
        lo, hi = smp["interval_s"]
        units, loop = smp["units"], smp["loop"]
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
    return {"workload": name, "nw": nw, "np": np_, "options": extra + (sample_extra or []), "units": units, "loop": loop,
            "full_makespan_s": exact, "full_wall_s": full["wall_s"],
            "command": "replay" if recorded else "predict",
            "ff_makespan_s": ff and ff["makespan_s"], "ff_error_pct": ff and 100 * (ff["makespan_s"] - exact) / exact,
            "ff_applied": bool(ff and ff["fast_forward"] and ff["fast_forward"]["applied"]),
            "ff_wall_s": ff and ff["wall_s"],
            "seeds": seeds, "median_abs_error_pct": statistics.median(errors), "max_abs_error_pct": max(errors),
            "covered": sum(r["covered"] for r in runs),
            "median_half_width_pct": statistics.median(r["half_width_pct"] for r in runs),
            "median_emulated_pct": statistics.median(r["emulated_pct"] for r in runs),
            "phases": statistics.median(r["phases"] for r in runs),
            "median_sampled_wall_s": wall, "speedup": full["wall_s"] / wall,
            "sample_vs_ff_pct": ff and 100 * (statistics.median(r["estimate_s"] for r in runs) - ff["makespan_s"]) /
            ff["makespan_s"], "runs": runs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gridcast", default=str(ROOT / "build" / "bin" / "gridcast"))
    ap.add_argument("--seeds", type=int, default=100, help="sample seeds per workload (default 100)")
    ap.add_argument("--workloads",
                    default="stencil-steady,overlap-solver,cg-dot,rebuild-grow,rebuild-grow-2pc,varying-solver,"
                    "lammps-check-yes,lammps-1024")
    ap.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "gridcast-sampling-bench"))
    ap.add_argument("--json", help="write the figures here (bench/results/sampling.json)")
    ap.add_argument("--keep", action="store_true",
                    help="with --json: keep the rows of the workloads not run this time from that file")
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
        if "rebuild-grow" in wanted or "rebuild-grow-2pc" in wanted:
            profile, platform = recording(a.gridcast, "rebuild_grow", 1024, 16, 256)
            if "rebuild-grow" in wanted:
                rows.append(measure(a.gridcast, "rebuild-grow", profile, 16, 1024, platform, [], a.seeds,
                                    recorded=True, sample_extra=["--margin", "0.05"]))
            if "rebuild-grow-2pc" in wanted:
                rows.append(measure(a.gridcast, "rebuild-grow-2pc", profile, 16, 1024, platform, [],
                                    min(a.seeds, 10), recorded=True))
        if "varying-solver" in wanted:
            profile, platform = recording(a.gridcast, "varying_solver", 1024, 16, 64)
            rows.append(measure(a.gridcast, "varying-solver", profile, 16, 1024, platform, [], a.seeds,
                                recorded=True, sample_extra=["--margin", "0.05"]))
        for name, np_, n, steps in (("lammps-check-yes", 64, 32, 200), ("lammps-1024", 1024, 40, 500)):
            if name not in wanted:
                continue
            rec = lammps_check_yes(a.gridcast, np_, n, steps)
            if rec is None:
                print(f"sampling: {name} skipped: {LAMMPS_LMP} not built (scripts/build-lammps-smpi.sh)", file=sys.stderr)
            else:
                seeds = a.seeds if np_ < 1024 else min(a.seeds, 20)
                rows.append(measure(a.gridcast, name, rec[0], n, np_, rec[1], [], seeds, recorded=True))
    except (RuntimeError, subprocess.CalledProcessError) as e:
        print(f"sampling: {e}", file=sys.stderr)
        return 1
    print(f"{'workload':<16} {'ranks':>6} {'units':>6} {'phases':>6} {'|err| med':>9} {'max':>7} {'covered':>9} "
          f"{'+/- med':>8} {'emul.':>6} {'full s':>8} {'sampled s':>9} {'speedup':>7} {'ff err':>7}")
    for r in rows:
        print(f"{r['workload']:<16} {r['np']:>6} {r['units']:>6} {r['phases']:>6g} {r['median_abs_error_pct']:>8.3f}% "
              f"{r['max_abs_error_pct']:>6.3f}% {r['covered']:>4}/{r['seeds']:<4} {r['median_half_width_pct']:>7.3f}% "
              f"{r['median_emulated_pct']:>5.1f}% {r['full_wall_s']:>8.2f} {r['median_sampled_wall_s']:>9.2f} "
              f"{r['speedup']:>6.1f}x " + (f"{r['ff_error_pct']:>+6.3f}%" if r["ff_error_pct"] is not None else "      -"))
    if a.json:
        for r in rows:
            r["measured"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        if a.keep and Path(a.json).exists():
            # Workloads not run this time keep their rows from the file, with the date they were measured.
            ran = {r["workload"] for r in rows}
            old = json.loads(Path(a.json).read_text())
            kept = [r for r in old["rows"] if r["workload"] not in ran]
            for r in kept:
                r.setdefault("measured", old["date"])
            rows = kept + rows
            order = ["stencil-steady", "overlap-solver", "cg-dot", "rebuild-grow", "rebuild-grow-2pc", "varying-solver",
                     "lammps-check-yes", "lammps-1024"]
            rows.sort(key=lambda r: order.index(r["workload"]) if r["workload"] in order else len(order))
        summary = {r["workload"]: {k: r[k] for k in ("median_abs_error_pct", "max_abs_error_pct", "covered", "seeds",
                                                     "median_emulated_pct", "speedup", "sample_vs_ff_pct")}
                   for r in rows}
        results_json.write(Path(a.json), "sampling", rows, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
