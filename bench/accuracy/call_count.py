#!/usr/bin/env python3
"""Does a profile hold every MPI call the application made? Each function's call count in a profile
against a count taken without the hook: `ltrace` on every rank, counting the calls into Open MPI's C
library (`MPI_*`) and its Fortran bindings (`mpi_*_`, which call `PMPI_*` directly and are what a
C-level hook would miss).

    cmake --build build --target gridcast gridcast_hook
    python3 bench/accuracy/call_count.py                         # cp2k, qe, lammps (those installed)
    python3 bench/accuracy/call_count.py --apps cp2k --json bench/results/call_count.json

Each application runs twice at np 2 at its smallest training size of bench/accuracy/real_size.py (same
inputs, same command): once under `gridcast profile`, once with every rank under `ltrace -c` (package
ltrace; library calls through the PLT, so calls inside Open MPI are not counted twice). A function the
profile records is checked on each rank: its records in the profile against ltrace's count of its C
and Fortran names (`MPI_Allreduce`, `mpi_allreduce_`, `mpi_allreduce__`, `MPI_ALLREDUCE`). The
applications here make the same calls in every run of an input (no completion loop whose count
depends on timing). The functions ltrace saw that the profile has no record of are listed: local calls
the hook does not record (`MPI_Comm_compare`, `MPI_Type_*`, `MPI_Wtime`, and from Fortran the group calls:
docs/guides/profiling.md), whose time is in the compute around them.

Prints one row per (application, function, rank) and whether the counts agree. Exit 0 when every count
agreed, 1 when one did not or a step failed, 77 when gridcast, the hook, mpirun or ltrace is missing or
no application is installed.
"""
from __future__ import annotations

import argparse
import collections
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import real_size  # noqa: E402  (the applications, their inputs and commands)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import results_json  # noqa: E402  (the --json shape of bench/results/)

PROGRAMS = {"cp2k": "cp2k.psmp", "qe": "pw.x", "lammps": "lmp"}
# ltrace: the calls into Open MPI's libraries, C and Fortran names; one summary file per rank.
LTRACE = ("sh", "-c", 'exec ltrace -c -o "lt.$OMPI_COMM_WORLD_RANK" -e "MPI_*@*" -e "mpi_*@*" "$@"', "ltrace-rank")


def ltrace_counts(path: Path) -> dict[str, int]:
    """ltrace -c's summary: function -> calls."""
    out: dict[str, int] = {}
    for line in path.read_text().splitlines():
        m = re.match(r"\s*[0-9.]+\s+[0-9.]+\s+\d+\s+(\d+)\s+(\S+)\s*$", line)
        if m:
            out[m.group(2)] = out.get(m.group(2), 0) + int(m.group(1))
    return out


def profile_counts(gridcast: str, profile: Path, work: Path) -> list[collections.Counter]:
    """Per rank: function -> records, from the profile converted to JSON lines."""
    jsonl = work / (profile.name + ".jsonl")
    subprocess.run([gridcast, "convert", str(profile), "--to", "jsonl", "-o", str(jsonl), "--force"],
                   check=True, capture_output=True)
    ranks = []
    for f in sorted(jsonl.glob("rank-*.jsonl")):
        ranks.append(collections.Counter(json.loads(line)["fn"] for line in f.open()))
    return ranks


def names_of(fn: str) -> list[str]:
    """The C name and the Fortran names (gfortran, f2c-style, upper case) of an MPI function."""
    low = fn.lower()
    return [fn, low + "_", low + "__", fn.upper()]


def check(gridcast: str, name: str, work: Path) -> tuple[list[dict], list[str]]:
    app = real_size.APPS[name]
    size = app.train[0]
    hooked_dir, traced_dir = work / f"{name}-hook", work / f"{name}-ltrace"
    hooked_dir.mkdir(parents=True)
    traced_dir.mkdir(parents=True)
    prof = work / f"{name}-profile"
    cmd = [gridcast, "profile", "--nw", str(size), "--out", str(prof), "--",
           *real_size.app_command(app, size, hooked_dir)]
    r = subprocess.run(cmd, cwd=hooked_dir, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"call_count: {' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
    traced = real_size.app_command(app, size, traced_dir, LTRACE)
    r = subprocess.run(traced, cwd=traced_dir, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"call_count: {' '.join(traced)} failed:\n{r.stdout}{r.stderr}")
    recorded = profile_counts(gridcast, prof, work)
    rows, unrecorded = [], set()
    for rank, counts in enumerate(recorded):
        lt = ltrace_counts(traced_dir / f"lt.{rank}")
        seen = set()
        for fn, n in sorted(counts.items()):
            if not fn.startswith("MPI_"):
                continue  # compute bursts, library calls: not MPI
            names = names_of(fn)
            seen.update(names)
            want = sum(lt.get(x, 0) for x in names)
            rows.append({"app": name, "size": size, "rank": rank, "function": fn, "profile": n, "ltrace": want,
                         "agree": n == want})
        unrecorded.update(k for k in lt if k not in seen and (k.startswith("MPI_") or k.startswith("mpi_")))
    return rows, sorted(unrecorded)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gridcast", default=str(real_size.TOOLS / "gridcast"), help="the gridcast binary")
    ap.add_argument("--apps", default=",".join(PROGRAMS), help=f"comma-separated: {', '.join(PROGRAMS)}")
    ap.add_argument("--json", type=Path, help="also write the figures here (bench/results/ shape)")
    args = ap.parse_args()
    names = [a for a in args.apps.split(",") if a]
    unknown = [a for a in names if a not in PROGRAMS]
    if unknown or not names:
        ap.error(f"--apps: unknown application(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(PROGRAMS)}")
    hook = Path(args.gridcast).resolve().parent.parent / "lib" / "libgridcast-hook.so"
    if not Path(args.gridcast).exists() or not hook.exists() or not shutil.which("mpirun") or not shutil.which("ltrace"):
        print("call_count: needs gridcast, build/lib/libgridcast-hook.so, mpirun and ltrace", file=sys.stderr)
        return 77
    real_size.TOOLS = Path(args.gridcast).resolve().parent
    apps = [n for n in names if shutil.which(PROGRAMS[n])]
    for n in sorted(set(names) - set(apps)):
        print(f"call_count: skipping {n}: {PROGRAMS[n]} not found", file=sys.stderr)
    if not apps:
        return 77
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="gridcast-call-count-") as tmp:
        for name in apps:
            these, unrecorded = check(args.gridcast, name, Path(tmp))
            rows += these
            agree = sum(r["agree"] for r in these)
            print(f"\n{name} ({PROGRAMS[name]}, {real_size.APPS[name].unit} {real_size.APPS[name].train[0]}, np 2): "
                  f"{agree} of {len(these)} (function, rank) counts agree")
            print(f"{'function':<22} {'rank':>4} {'profile':>8} {'ltrace':>8}")
            for r in these:
                print(f"{r['function']:<22} {r['rank']:>4} {r['profile']:>8} {r['ltrace']:>8}"
                      f"{'' if r['agree'] else '  DIFFERENT'}")
            print(f"not recorded (local calls, docs/guides/profiling.md says which): {', '.join(unrecorded) or 'none'}")
    bad = [r for r in rows if not r["agree"]]
    print(f"\n{len(rows) - len(bad)} of {len(rows)} counts agree over {len(apps)} application(s)")
    if args.json:
        results_json.write(args.json, "call_count", rows,
                           {"apps": apps, "counts": len(rows), "agree": len(rows) - len(bad), "np": 2})
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
