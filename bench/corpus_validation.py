#!/usr/bin/env python3
"""The trace-scaling model on programs it was not built around: the mini-apps of examples/corpus/.

    cmake --build build --target gridcast && python3 bench/corpus_validation.py      # ~15 min cold
    python3 bench/trace_model_validation.py --corpus                                  # the same
    python3 bench/corpus_validation.py --programs cg-dot,summa --json /tmp/c.json     # a subset

For every corpus program (examples/corpus/<name>, the train/test split of examples/corpus/split.json):
  1. record it under SMPI with gridcast's own profiler linked in (examples/corpus/record.sh, which uses
     scripts/smpi-hook.sh; CORPUS_RECORDER=tit records `smpirun -trace-ti` traces instead) at 3 process
     counts x 3 sizes (PROGRAMS below: 4, 8, 16 or 6, 12, 24 or 8, 16, 32 ranks), and `gridcast fit`
     the profiles into one model;
  2. at the target, 4x or 8x the largest count (at most 128 ranks) and 2x the largest size, record the
     program the same way: its profile, and SMPI's simulated time of that run (record.sh keeps it; the
     hook adds no simulated time: smpi/wtime:0);
  3. `gridcast predict` there on the platform and hostfile the recording ran on, with
     `--cfg gridcast/coll-selector:smpi` (SMPI's collective algorithms, as smpirun), and
     `gridcast synth` there;
  4. compare, with bench/trace_model_validation.py's comparison (`compare`, `read_ranks`):
       predict   ok, or the error line of `gridcast fit` / `predict` (the whole message
                 is in the JSON)
       fn-eq     yes when every rank makes as many calls per function as the recording
       comm-eq   share of communication calls whose (function, peer, source, tag, sizes, root) equal
                 the recorded call at the same position of the rank's communication sequence
       bytes-1%  share of ranks whose communicated bytes (sent and received, every communication
                 call, sizes and per-peer counts) are within 1 % of the recording's
       error     (predicted makespan - smpirun's simulated time) / smpirun's simulated time
       replay    (the recorded target profile replayed by `gridcast replay` - smpirun's time) / smpirun's
                 time: how well the emulator reproduces SMPI from a complete recording, the floor of any
                 model trained on these recordings (with CORPUS_RECORDER=tit, what SMPI's traces lack:
                 communicator creations, the communicators of collectives, MPI_PROC_NULL halves)
       model     (predicted makespan - that replay's) / that replay's: the model's own error
  and the wall time of each `gridcast fit` (median and max printed under each table).
Test-set programs (split.json "test") are printed in a table of their own and never used for tuning.
Recordings are cached under --work (default $GRIDCAST_CACHE/corpus-bench, GRIDCAST_CACHE defaulting to
~/.cache/gridcast), keyed by a digest of the program, corpus.h, record.sh, gen_cluster.py, smpi-hook.sh,
the hook's sources and the recorder, so a rerun
only fits, predicts and compares. --lock FILE runs every smpirun recording and gridcast step under
`flock FILE` (a machine shared with builds).
Exit 0 when every program reaches the issue's targets (predicts, fn-eq, comm-eq 100 %, makespan within
2 %, mean within 1 %), 1 otherwise, 77 when smpicc/smpirun or gridcast are missing.
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "examples" / "corpus"
sys.path.insert(0, str(ROOT / "bench"))
from trace_model_validation import COMM_OPS, compare, pct_of, read_ranks, run  # noqa: E402
import results_json  # noqa: E402

# name -> (training process counts, training sizes): the target is TARGET_FACTOR x the largest count
# and 2x the largest size. Counts follow the program: 6, 12, 24 for the non-power-of-two grids
# (MPI_Dims_create(96, 3) = 6x4x4, (96, 2) = 12x8), 8, 16, 32 where a 3-D grid wants 8 at least.
NP_POW2, NP_3, NP_3D = [4, 8, 16], [6, 12, 24], [8, 16, 32]
PROGRAMS = {
    "heat1d-strong": (NP_3, [8, 16, 24]),
    "jacobi2d-strong": (NP_3, [48, 72, 96]),
    "stencil3d-strong": (NP_3D, [32, 48, 64]),
    "stencil3d-weak": (NP_3, [4, 6, 8]),
    "summa": (NP_POW2, [64, 96, 128]),
    "cart-sub-3d": (NP_3D, [4, 6, 8]),
    "sweep-wavefront": (NP_POW2, [8, 12, 16]),
    "fft-transpose": (NP_3, [24, 36, 48]),
    "multigrid-vcycle": (NP_POW2, [8, 16, 32]),
    "master-worker-dyn": (NP_POW2, [8, 16, 24]),
    "cg-dot": (NP_3, [24, 36, 48]),
    "graph-partition": (NP_POW2, [8, 16, 24]),
    "two-phase": (NP_POW2, [8, 12, 16]),
    "amr-grow": (NP_POW2, [8, 12, 16]),
    "hypercube-exchange": (NP_POW2, [8, 12, 16]),
    "rotating-root": (NP_3, [16, 24, 32]),
    "ring-waitany": (NP_3, [8, 12, 16]),
    "gauss-bcast": (NP_3, [24, 36, 48]),
    "diag-every-k": (NP_3, [16, 24, 32]),
    "allgatherv-blocks": (NP_3, [16, 24, 32]),
    "kba-sweep": (NP_3, [4, 6, 8]),
    "persistent-halo": (NP_3, [8, 12, 16]),
    "particle-migrate": (NP_3, [8, 12, 16]),
    "stencil27-diag": (NP_3D, [4, 6, 8]),
    "stencil9-2d": (NP_3, [8, 12, 16]),
    "lbm-d2q9": (NP_3, [8, 12, 16]),
    "implicit-converge": (NP_3, [16, 24, 32]),
    "pencil-lines": (NP_3D, [16, 24, 32]),
    "lbm-d3q19": (NP_3D, [4, 6, 8]),
}
# Variants: NAME@VARIANT runs the program NAME at other training counts (a row of its own, in the set of
# NAME). Users train at powers of two; grids of 4, 8, 16 ranks (2x2, 4x2, 4x4) leave an axis at extent 2
# and show the interior ranks at one count only.
VARIANTS = {"kba-sweep@pow2": (NP_POW2, [4, 6, 8])}
PROGRAMS.update(VARIANTS)
TARGET_FACTOR = 4  # 64, 96 or 128 ranks: SMPI at more is slow on a shared 2-core machine
MAKESPAN_MAX_PCT, MAKESPAN_MEAN_PCT = 2.0, 1.0  # the targets


def split() -> dict[str, list[str]]:
    s = json.loads((CORPUS / "split.json").read_text())
    unknown = set(s["train"] + s["test"]) - set(PROGRAMS)
    if unknown or set(s["train"]) & set(s["test"]):
        raise SystemExit(f"corpus_validation: split.json names unknown programs {sorted(unknown)} or puts one "
                         "in both sets")
    return s


class Steps:
    """Runs the bench's subprocesses, each under `flock LOCK` when a lock file is given."""

    def __init__(self, gridcast: str, lock: str | None):
        self.gridcast, self.lock = gridcast, lock

    def locked(self, cmd: list[str]) -> list[str]:
        return ["flock", self.lock, *cmd] if self.lock else cmd

    def run(self, cmd: list[str]) -> subprocess.CompletedProcess:
        """A step whose failure is a result (fit, predict, synth): the caller reads its exit and stderr."""
        return subprocess.run(self.locked(cmd), capture_output=True, text=True)

    def must(self, cmd: list[str], env: dict | None = None) -> str:
        """A step whose failure ends the bench (a recording): trace_model_validation's run."""
        return run(self.locked(cmd), env)


def program_of(name: str) -> str:
    """The corpus program a row runs: NAME of NAME@VARIANT."""
    return name.split("@")[0]


def digest(name: str) -> str:
    """Recordings are reused only while what made them is unchanged."""
    name = program_of(name)
    h = hashlib.sha1()
    hook = sorted((ROOT / "profiler" / "hook").glob("*.[ch]pp")) + [ROOT / "profiler" / "include" / "gridcast" /
                                                                     "profiler" / "raw_format.hpp"]
    for f in (CORPUS / name / f"{name}.c", CORPUS / "corpus.h", CORPUS / "record.sh",
              ROOT / "scripts" / "gen_cluster.py", ROOT / "scripts" / "smpi-hook.sh", *hook):
        h.update(f.read_bytes())
    h.update(os.environ.get("CORPUS_RECORDER", "hook").encode())
    return h.hexdigest()[:10]


def record(steps: Steps, name: str, np_: int, nw: int, work: Path) -> Path:
    name = program_of(name)
    out = work / digest(name) / f"{name}-np{np_}-nw{nw}"
    if not (out / "run.json").exists() or not (out.parent / (out.name + ".smpi") / "smpirun.txt").exists():
        print(f"  recording {name} np {np_} Nw {nw}", file=sys.stderr, flush=True)
        steps.must([str(CORPUS / "record.sh"), name, str(np_), str(nw), str(out)],
                   dict(os.environ, GRIDCAST=steps.gridcast))
    return out


def smpi_seconds(profile: Path) -> float:
    text = (profile.parent / (profile.name + ".smpi") / "smpirun.txt").read_text()
    m = re.search(r"Simulated time: ([0-9.eE+-]+) seconds", text)
    if not m:
        raise SystemExit(f"corpus_validation: no simulated time in {profile}.smpi/smpirun.txt")
    return float(m.group(1))


def rank_bytes(records: list[dict]) -> int:
    """Bytes a rank's communication calls carry, sent and received, per-peer counts included."""
    return sum(r.get("bytes", 0) + r.get("recv_bytes", 0) + sum(r.get("counts", [])) + sum(r.get("recv_counts", []))
               for r in records if r["op"] in COMM_OPS)


def error_line(text: str) -> str:
    """The error of a failed step: its `gridcast: error:` line (warnings and notes of approximations, which
    may mention a training error, come before it), else its first line that says error, else its last."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return next((line for line in lines if line.startswith(("gridcast: error:", "gridcast: internal error:"))),
                next((line for line in lines if "error:" in line), lines[-1] if lines else "(no message)"))


def evaluate(steps: Steps, name: str, work: Path) -> dict:
    train_np, train_nw = PROGRAMS[name]
    target_np, target_nw = TARGET_FACTOR * train_np[-1], 2 * train_nw[-1]
    row = {"program": name, "train_np": train_np, "train_nw": train_nw, "target_np": target_np,
           "target_nw": target_nw}
    profiles = [record(steps, name, p, w, work) for p in train_np for w in train_nw]
    target = record(steps, name, target_np, target_nw, work)
    row["smpirun_s"] = smpi_seconds(target)
    model = work / f"{name}.model.json"
    model.unlink(missing_ok=True)
    started = time.monotonic()
    fit = steps.run([steps.gridcast, "fit", *map(str, profiles), "-o", str(model)])
    row["fit_wall_s"] = round(time.monotonic() - started, 2)  # 9 profiles; the acceptance wants fits in seconds
    if fit.returncode != 0:
        row.update(predict_ok=False, stage="fit", exit=fit.returncode, error=fit.stderr.strip())
        return row
    smpi = target.parent / (target.name + ".smpi")
    pred = steps.run([steps.gridcast, "predict", str(model), "--nw", str(target_nw), "--np", str(target_np),
                      "--platform", str(smpi / "platform.xml"), "--hostfile", str(smpi / "hostfile"),
                      "--cfg", "gridcast/coll-selector:smpi"])
    m = re.search(r"makespan: ([0-9.eE+-]+) s", pred.stdout)
    if pred.returncode != 0 or not m:
        row.update(predict_ok=False, stage="predict", exit=pred.returncode, error=(pred.stderr or pred.stdout).strip())
    else:
        row.update(predict_ok=True, predicted_s=float(m.group(1)))
        row["makespan_error_pct"] = 100.0 * (row["predicted_s"] - row["smpirun_s"]) / row["smpirun_s"]
    # The recorded target trace itself, replayed there: what any model trained on SMPI's time-independent
    # traces can reach at best (gridcast replays them as `smpirun -replay` does: bench/smpi_agreement.py).
    # Live smpirun also spends time the trace does not show (MPI_Cart_create and MPI_Comm_split exchange
    # messages in SMPI; the trace has no line for the first and a free one for the second).
    rep = steps.run([steps.gridcast, "replay", str(target), "--platform", str(smpi / "platform.xml"),
                     "--hostfile", str(smpi / "hostfile"), "--cfg", "gridcast/coll-selector:smpi", "--no-timeline",
                     "--out", str(work / f"{name}-replay")])
    m = re.search(r"makespan: ([0-9.eE+-]+) s", rep.stdout)
    if rep.returncode == 0 and m:
        row["replay_s"] = float(m.group(1))
        row["replay_error_pct"] = 100.0 * (row["replay_s"] - row["smpirun_s"]) / row["smpirun_s"]
        if "predicted_s" in row:
            row["model_error_pct"] = 100.0 * (row["predicted_s"] - row["replay_s"]) / row["replay_s"]
    syn = work / f"{name}-synth"
    shutil.rmtree(syn, ignore_errors=True)
    res = steps.run([steps.gridcast, "synth", "--force", str(model), "--nw", str(target_nw), "--np", str(target_np),
                     "--out", str(syn), "--encoding", "jsonl"])
    if res.returncode != 0:
        row.update(synth_ok=False, synth_error=res.stderr.strip())
        return row
    recorded = read_ranks(target, steps.gridcast, work)
    synthesized = read_ranks(syn, steps.gridcast, work)
    c = compare(recorded, synthesized)
    close = sum(1 for a, b in zip(recorded, synthesized)
                if abs(rank_bytes(a) - rank_bytes(b)) <= 0.01 * rank_bytes(a))
    row.update(synth_ok=True, ranks=c["ranks"], ranks_synth=c["ranks_synth"], fn_eq_ranks=c["fn_eq"],
               calls_per_function_equal=c["ranks"] == c["ranks_synth"] and c["fn_eq"] == c["ranks"],
               comm_total=c["comm_total"], comm_match=c["comm_match"],
               comm_eq_pct=pct_of(c["comm_match"], c["comm_total"]),
               bytes_within_1pct_pct=pct_of(close, c["ranks"]))
    return row


def meets_targets(row: dict) -> bool:
    return (row.get("predict_ok", False) and row.get("calls_per_function_equal", False)
            and row.get("comm_eq_pct", 0.0) == 100.0
            and abs(row.get("makespan_error_pct", 1e9)) <= MAKESPAN_MAX_PCT)


def print_table(title: str, rows: list[dict]) -> None:
    print(f"\n{title}")
    hdr = (f"{'program':<18} {'train np':<9} {'train Nw':<10} {'target':<11} {'predict':<8} {'fn-eq':<5} "
           f"{'comm-eq':>8} {'bytes-1%':>8} {'smpirun s':>11} {'predicted s':>11} {'error':>8} {'replay':>8} "
           f"{'model':>8}")
    print(hdr)
    print("-" * len(hdr))
    notes = []
    for r in rows:
        pct = lambda k: f"{r[k]:7.2f}%" if k in r else f"{'-':>8}"
        signed = lambda k: f"{r[k]:+7.2f}%" if k in r else f"{'-':>8}"
        err = signed("makespan_error_pct")
        pred = f"{r['predicted_s']:11.6g}" if "predicted_s" in r else f"{'-':>11}"
        fn_eq = ("yes" if r["calls_per_function_equal"] else "no") if r.get("synth_ok") else "-"
        status = "ok" if r["predict_ok"] else f"[{len(notes) + 1}]"
        if not r["predict_ok"]:
            notes.append(f"[{len(notes) + 1}] {r['program']}: {r['stage']} exit {r['exit']}: {error_line(r['error'])}")
        print(f"{r['program']:<18} {','.join(map(str, r['train_np'])):<9} {','.join(map(str, r['train_nw'])):<10} "
              f"{'np' + str(r['target_np']) + ' Nw' + str(r['target_nw']):<11} {status:<8} {fn_eq:<5} "
              f"{pct('comm_eq_pct')} {pct('bytes_within_1pct_pct')} {r['smpirun_s']:11.6g} {pred} {err} "
              f"{signed('replay_error_pct')} {signed('model_error_pct')}")
    predicted = [abs(r["makespan_error_pct"]) for r in rows if "makespan_error_pct" in r]
    print(f"{sum(r['predict_ok'] for r in rows)}/{len(rows)} predict, "
          f"{sum(bool(r.get('calls_per_function_equal')) for r in rows)}/{len(rows)} fn-eq, "
          f"{sum(r.get('comm_eq_pct') == 100.0 for r in rows)}/{len(rows)} comm-eq 100 %"
          + (f", makespan |error| mean {statistics.mean(predicted):.2f}% max {max(predicted):.2f}% over "
             f"{len(predicted)} predicted" if predicted else ""))
    model = [abs(r["model_error_pct"]) for r in rows if "model_error_pct" in r]
    floor = [abs(r["replay_error_pct"]) for r in rows if "replay_error_pct" in r]
    if model:
        print(f"against the recorded target trace replayed (model): |error| mean {statistics.mean(model):.2f}% max "
              f"{max(model):.2f}%; that replay against smpirun (replay): |error| mean {statistics.mean(floor):.2f}% "
              f"max {max(floor):.2f}%")
    fits = [r["fit_wall_s"] for r in rows if "fit_wall_s" in r]
    if fits:
        print(f"gridcast fit wall time (9 profiles each): median {statistics.median(fits):.2f} s, max {max(fits):.2f} s")
    for n in notes:
        print("  " + n)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--gridcast", default=str(ROOT / "build" / "bin" / "gridcast"))
    ap.add_argument("--work", default=str(Path(os.environ.get("GRIDCAST_CACHE", str(Path.home() / ".cache" / "gridcast")))
                                          / "corpus-bench"), help="recordings cache (default %(default)s)")
    ap.add_argument("--programs", default=None, help="comma-separated subset of the corpus (default: all)")
    ap.add_argument("--json", type=Path, default=None, help="write the figures as JSON to this file")
    ap.add_argument("--lock", default=None, help="run every recording and gridcast step under `flock LOCK`")
    args = ap.parse_args(argv)
    if not Path(args.gridcast).exists() or not shutil.which("smpicc") or not shutil.which("smpirun"):
        print("corpus_validation: needs gridcast (build it) and smpicc/smpirun", file=sys.stderr)
        return 77
    sets = split()
    names = args.programs.split(",") if args.programs else sets["train"] + sets["test"]
    unknown = [n for n in names if n not in PROGRAMS]
    if unknown:
        print(f"corpus_validation: unknown programs {unknown} (known: {', '.join(PROGRAMS)})", file=sys.stderr)
        return 1
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    steps = Steps(str(Path(args.gridcast).resolve()), args.lock)
    rows = []
    for name in names:
        print(f"{name} ...", file=sys.stderr, flush=True)
        row = evaluate(steps, name, work)
        row["set"] = "test" if name in sets["test"] else "train"
        rows.append(row)
    train = [r for r in rows if r["set"] == "train"]
    test = [r for r in rows if r["set"] == "test"]
    if train:
        print_table("training set (examples/corpus/split.json \"train\")", train)
    if test:
        print_table("test set (examples/corpus/split.json \"test\": never used for tuning)", test)
    errors = [abs(r["makespan_error_pct"]) for r in rows if "makespan_error_pct" in r]
    ok = all(meets_targets(r) for r in rows) and errors and statistics.mean(errors) <= MAKESPAN_MEAN_PCT
    print(f"\ntraining: 3 process counts x 3 sizes per program, target {TARGET_FACTOR}x the largest count and 2x "
          f"the largest size; smpirun with smpi/simulate-computation:no; recorded with "
          f"{'smpirun -trace-ti' if os.environ.get('CORPUS_RECORDER') == 'tit' else 'the hook (scripts/smpi-hook.sh)'}; "
          f"recordings in {work}")
    if args.json:
        results_json.write(args.json, "corpus_validation", rows, {
            "programs": len(rows), "predicted": sum(1 for r in rows if r.get("predict_ok")),
            "test_programs": len(test), "test_predicted": sum(1 for r in test if r.get("predict_ok")),
            "target_factor": TARGET_FACTOR, "recorder": os.environ.get("CORPUS_RECORDER", "hook"),
            "targets": {"makespan_max_pct": MAKESPAN_MAX_PCT, "makespan_mean_pct": MAKESPAN_MEAN_PCT}})
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
