#!/usr/bin/env python3
"""Does `gridcast replay` read every trace layout and honour every setting that `smpirun -replay` does?

    python3 bench/smpirun_replay_compat.py                 # every case (about 20 s)
    python3 bench/smpirun_replay_compat.py --keep DIR      # keep the cases' files in DIR

Each case is a small SMPI time-independent trace written for it (or recorded here with smpicc and
`smpirun -trace-ti`), a layout (per-rank index, one-line index naming a shared file, the shared file
itself, an index whose paths are relative to the working directory, an index listing one shared file
for every rank) and settings. Both replayers run from the case's folder, on the same 4-node cluster:

    smpirun -np N -no-privatize -platform P -hostfile H -replay INDEX --cfg=smpi/display-timing:yes [--cfg=...]
    gridcast replay INDEX --platform P --hostfile H [--cfg ...]

gridcast runs with its defaults: on an SMPI trace the collective selector (auto) is SMPI's, with SMPI's
test costs. Cases with collectives also print what MPICH's algorithms give (`--cfg
gridcast/coll-selector:mpich`) for information. The script prints both
simulated times and their relative difference per case, then the settings gridcast must refuse (exit 1
naming the key) where it would otherwise change nothing while smpirun would change the result.

Exit status: 0 when every case agrees within --tolerance (default 1e-4, relative) and every refusal is
one; 1 otherwise; 77 (CTest's skip code) when gridcast is not built or smpirun/smpicc are missing.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import gen_cluster  # noqa: E402  (scripts/ is not a package)

EXIT_SKIPPED = 77
SMPI_TIME = re.compile(r"Simulated time: ([0-9.eE+-]+) seconds")
SMPI_FAILURE = ("Deadlock detected", "Stalling SMPI instance", "Execution failed", "xbt_die", "Assertion")
MPICH_SELECTOR = ("gridcast/coll-selector:mpich",)  # for information: what another selector gives


def lines(*rows: str) -> str:
    return "\n".join(rows) + "\n"  # smpirun's reader drops a last line without its newline


# ---------------------------------------------------------------------------------------------------
# Traces written for the cases

P2P = {  # two ranks: eager and rendezvous messages, a nonblocking pair, computation between
    "r0.txt": lines("0 init", "0 compute 1e8", "0 send 1 0 1000000", "0 recv 1 1 1000000", "0 isend 1 2 5000",
                    "0 compute 5e7", "0 wait 0 1 2", "0 sleep 0.25", "0 finalize"),
    "r1.txt": lines("1 init", "1 recv 0 0 1000000", "1 compute 2e8", "1 send 0 1 1000000", "1 irecv 0 2 5000",
                    "1 wait 0 1 2", "1 finalize"),
}

SHARED = lines(  # three ranks in one file, interleaved as ti-one-file writes them
    "0 init", "1 init", "2 init",
    "0 compute 3e8", "1 compute 1e8", "2 compute 2e8",
    "0 send 1 7 200000", "1 recv 0 7 200000",
    "1 send 2 7 70000", "2 recv 1 7 70000",
    "2 isend 0 8 3000", "0 irecv 2 8 3000", "0 wait 2 0 8", "2 wait 2 0 8",
    "0 compute 1e8", "1 compute 2e8", "2 compute 3e8",
    "0 finalize", "1 finalize", "2 finalize")

TESTS = {  # MPI_Test that fails, then succeeds; a success ends the request (no wait follows)
    "r0.txt": lines("0 init", "0 compute 1e8", "0 isend 1 0 100000", "0 compute 2e8", "0 test 0 1 0",
                    "0 finalize"),
    "r1.txt": lines("1 init", "1 irecv 0 0 100000", "1 test 0 1 0", "1 test 0 1 0", "1 test 0 1 0",
                    "1 compute 3e8", "1 test 0 1 0", "1 finalize"),
}

LOCATIONS = {  # call locations for smpi/comp-adjustment-file
    "r0.txt": lines("0 location main.c 10", "0 init", "0 location main.c 12", "0 compute 1e9",
                    "0 location src/kernel.c 20", "0 compute 1e9", "0 location main.c 12", "0 sleep 1",
                    "0 send 1 0 1000", "0 finalize"),
    "r1.txt": lines("1 init", "1 recv 0 0 1000", "1 compute 1e8", "1 finalize"),
}
ADJUSTMENT = lines("\"Location\",\"Speedup\"", "main.c:10:main.c:12,2", "main.c:12:kernel.c:20,4",
                   "kernel.c:20:main.c:12,10")

EAGER = {  # 2000-byte messages: detached below smpi/send-is-detached-thresh only
    "r0.txt": lines("0 init", "0 send 1 0 2000", "0 compute 1e8", "0 send 1 1 2000", "0 finalize"),
    "r1.txt": lines("1 init", "1 compute 5e8", "1 recv 0 0 2000", "1 recv 0 1 2000", "1 finalize"),
}


def collective(np_: int, *body: str) -> dict[str, str]:
    """One file per rank: init, compute, the body, compute, the body, finalize. In the body, {r} is the rank,
    {c} 1000 x (rank + 1) and {b} four times that."""
    files = {}
    for r in range(np_):
        rows = [f"{r} init", f"{r} compute {(r + 1) * 1e8:g}"]
        rows += [b.format(r=r, c=1000 * (r + 1), b=4000 * (r + 1)) for b in body]
        rows += [f"{r} compute {(np_ - r) * 5e7:g}"]
        rows += [b.format(r=r, c=1000 * (r + 1), b=4000 * (r + 1)) for b in body]
        rows += [f"{r} finalize"]
        files[f"r{r}.txt"] = lines(*(f"{r} {row.split(' ', 1)[1]}" for row in rows))
    return files


COLLECTIVES = {
    "bcast": collective(4, "{r} bcast 100000 0"),
    "reduce": collective(4, "{r} reduce 100000 1e7 1"),
    "allreduce": collective(4, "{r} allreduce 100000 1e7"),
    "alltoall": collective(4, "{r} alltoall 20000 20000"),
    "alltoallv": collective(4, "{r} alltoallv 10000 1000 2000 3000 4000 {b} {c} {c} {c} {c}"),
    "gather": collective(4, "{r} gather 30000 30000 0"),
    "gatherv": collective(4, "{r} gatherv {c} 1000 2000 3000 4000 2"),
    "allgather": collective(4, "{r} allgather 30000 30000"),
    "allgatherv": collective(4, "{r} allgatherv {c} 1000 2000 3000 4000"),
    "scatter": collective(4, "{r} scatter 30000 30000 3"),
    "barrier": collective(4, "{r} barrier"),
    "reducescatter": collective(4, "{r} reducescatter 1000 2000 3000 4000 1e6"),
}

RECORDED_PROGRAM = r"""
#include <mpi.h>
int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int rank, size, flag = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  static double buf[100000];
  MPI_Request req;
  for (int i = 0; i < 3; ++i) {
    int peer = rank ^ 1;
    if (peer < size) {
      if (rank % 2 == 0)
        MPI_Isend(buf, 20000, MPI_DOUBLE, peer, i, MPI_COMM_WORLD, &req);
      else
        MPI_Irecv(buf, 20000, MPI_DOUBLE, peer, i, MPI_COMM_WORLD, &req);
      MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
      if (!flag)
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    MPI_Allreduce(MPI_IN_PLACE, buf, 1000, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Bcast(buf, 5000, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
"""


# ---------------------------------------------------------------------------------------------------
# Cases


@dataclass
class Case:
    name: str
    files: dict[str, str]          # path in the case folder -> content
    np: int
    index: str = "index.txt"       # what gridcast replays (relative to the case folder)
    smpi_index: str | None = None  # what smpirun replays, when not `index`
    cfg: tuple[str, ...] = ()      # given to both
    smpi_cfg: tuple[str, ...] = ()
    gridcast_cfg: tuple[str, ...] = ()
    expect_paths: str | None = None  # prediction.json's inputs[0].paths_relative_to
    collectives: bool = False
    record: tuple[str, ...] | None = None  # smpirun arguments recording the trace first


def index_of(names: list[str]) -> str:
    return lines(*names)


def per_rank(folder: str, files: dict[str, str]) -> dict[str, str]:
    """Files under `folder`, and an index in the case folder listing them (paths relative to it)."""
    out = {f"{folder}/{n}": t for n, t in files.items()}
    out["index.txt"] = index_of([f"{folder}/{n}" for n in files])
    return out


def cases() -> list[Case]:
    c: list[Case] = []
    c.append(Case("layout: per-rank index", per_rank("tr", P2P), 2))
    split = {f"traces/{n}": t for n, t in P2P.items()}
    split["sub/split_traces"] = index_of([f"traces/{n}" for n in P2P])  # relative to the working directory
    c.append(Case("layout: split traces, paths relative to the working directory", split, 2,
                  index="sub/split_traces", expect_paths="working directory"))
    c.append(Case("layout: one-line index naming a shared file", {"all.txt": SHARED, "index.txt": "all.txt\n"}, 3))
    c.append(Case("layout: the shared file itself", {"all.txt": SHARED, "index.txt": "all.txt\n"}, 3,
                  index="all.txt", smpi_index="index.txt"))
    c.append(Case("layout: every rank's line names the shared file",
                  {"all.txt": SHARED, "index.txt": "all.txt\nall.txt\nall.txt\n"}, 3))
    c.append(Case("layout: recorded by smpirun -trace-ti (per-rank index)", {}, 4, index="rec.txt",
                  record=("--cfg=tracing/filename:rec.txt",), collectives=True))
    c.append(Case("layout: recorded with ti-one-file:yes", {}, 4, index="one.txt", collectives=True,
                  record=("--cfg=tracing/filename:one.txt", "--cfg=tracing/smpi/format/ti-one-file:yes")))
    c.append(Case("setting: smpi/simulate-computation:no", per_rank("tr", P2P), 2,
                  cfg=("smpi/simulate-computation:no",)))
    c.append(Case("setting: smpi/comp-adjustment-file", {**per_rank("tr", LOCATIONS), "adjust.csv": ADJUSTMENT}, 2,
                  cfg=("smpi/comp-adjustment-file:adjust.csv",)))
    c.append(Case("setting: smpi/test (default 1e-4)", per_rank("tr", TESTS), 2))
    c.append(Case("setting: smpi/test:3e-3", per_rank("tr", TESTS), 2, cfg=("smpi/test:3e-3",)))
    c.append(Case("setting: smpi/grow-injected-times:no", per_rank("tr", TESTS), 2,
                  cfg=("smpi/grow-injected-times:no", "smpi/test:3e-3")))
    c.append(Case("setting: smpi/send-is-detached-thresh:1000", per_rank("tr", EAGER), 2,
                  cfg=("smpi/send-is-detached-thresh:1000",)))
    c.append(Case("setting: smpi/send-is-detached-thresh:4000", per_rank("tr", EAGER), 2,
                  cfg=("smpi/send-is-detached-thresh:4000",)))
    c.append(Case("setting: smpi/bw-factor and smpi/lat-factor", per_rank("tr", P2P), 2,
                  cfg=("smpi/bw-factor:65536:0.5;0:0.25", "smpi/lat-factor:65536:3;0:2")))
    c.append(Case("setting: network/model:CM02 with network/bandwidth-factor", per_rank("tr", P2P), 2,
                  cfg=("network/model:CM02", "network/bandwidth-factor:0.5", "network/latency-factor:2")))
    c.append(Case("setting: smpi/host-speed, cpu-threshold, wtime (no effect on a replay)", per_rank("tr", P2P), 2,
                  cfg=("smpi/host-speed:1e6", "smpi/cpu-threshold:1", "smpi/wtime:1")))
    c.append(Case("setting: smpi/coll-selector:default", COLLECTIVES["allgatherv"] | {"index.txt": index_of(
        sorted(COLLECTIVES["allgatherv"]))}, 4, cfg=("smpi/coll-selector:default",), collectives=True))
    for name, files in COLLECTIVES.items():
        c.append(Case(f"collective: {name}", per_rank("tr", files), 4, collectives=True))
    return c


REFUSALS = [  # (--cfg, key the message must name)
    ("smpi/async-small-thresh:100000", "smpi/async-small-thresh"),
    ("smpi/os:0:1e-6:1e-9", "smpi/os"),
    ("smpi/finalization-barrier:yes", "smpi/finalization-barrier"),
    ("smpi/allreduce:rab_rdb", "smpi/allreduce"),
    ("smpi/coll-selector:mpich", "smpi/coll-selector"),
    ("smpi/np:8", "smpi/np"),
    ("smpi/no-such-setting:1", "smpi/no-such-setting"),
    ("network/bandwidth-factor:0.5", "network/bandwidth-factor"),
    ("network/latency-factor:2", "network/latency-factor"),
]


# ---------------------------------------------------------------------------------------------------
# Running


@dataclass
class Result:
    smpirun: float | None = None
    gridcast: float | None = None
    gridcast_default: float | None = None
    error: str = ""
    notes: list[str] = field(default_factory=list)


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)


def smpirun_time(case: Case, folder: Path, cluster: Path) -> tuple[float | None, str]:
    cmd = ["smpirun", "-np", str(case.np), "-no-privatize", "-platform", str(cluster / "platform.xml"),
           "-hostfile", str(cluster / "hostfile"), "-replay", case.smpi_index or case.index,
           "--cfg=smpi/display-timing:yes"] + [f"--cfg={c}" for c in case.cfg + case.smpi_cfg]
    p = run(cmd, folder)
    found = SMPI_TIME.findall(p.stdout)
    failure = next((s for s in SMPI_FAILURE if s in p.stdout), None)
    if p.returncode != 0 or failure or not found:
        return None, f"smpirun: {failure or 'exit ' + str(p.returncode)}: {p.stdout.strip().splitlines()[-1:]}"
    return float(found[-1]), ""


def gridcast_time(gridcast: Path, case: Case, folder: Path, cluster: Path, cfg: tuple[str, ...],
                  out: Path) -> tuple[float | None, str, dict]:
    shutil.rmtree(out, ignore_errors=True)
    cmd = [str(gridcast), "replay", case.index, "--platform", str(cluster / "platform.xml"),
           "--hostfile", str(cluster / "hostfile"), "--out", str(out), "--no-timeline"]
    for c in cfg:
        cmd += ["--cfg", c]
    p = run(cmd, folder)
    if p.returncode != 0:
        return None, f"gridcast: exit {p.returncode}: {p.stdout.strip().splitlines()[-1:]}", {}
    prediction = json.loads((out / "prediction.json").read_text())
    return float(prediction["makespan_s"]), "", prediction


def record(case: Case, folder: Path, cluster: Path, work: Path) -> str:
    program = work / "recorded"
    if not program.exists():
        (work / "recorded.c").write_text(RECORDED_PROGRAM)
        p = run(["smpicc", "-O1", "-o", str(program), str(work / "recorded.c")], work)
        if p.returncode != 0:
            return f"smpicc failed: {p.stdout.strip()[-300:]}"
    cmd = ["smpirun", "-np", str(case.np), "-no-privatize", "-platform", str(cluster / "platform.xml"),
           "-hostfile", str(cluster / "hostfile"), "-trace-ti", *case.record, str(program)]
    p = run(cmd, folder)
    if p.returncode != 0 or not (folder / case.index).exists():
        return f"recording failed: {p.stdout.strip().splitlines()[-1:]}"
    return ""


def relative_difference(a: float, b: float) -> float:
    return abs(a - b) / abs(b) if b else abs(a - b)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gridcast", type=Path, default=REPO / "build" / "bin" / "gridcast")
    ap.add_argument("--tolerance", type=float, default=1e-4, help="relative difference allowed (default 1e-4)")
    ap.add_argument("--keep", type=Path, default=None, help="write the cases here and keep them")
    args = ap.parse_args(argv)
    if not args.gridcast.is_file():
        print(f"smpirun_replay_compat: {args.gridcast} is not built", file=sys.stderr)
        return EXIT_SKIPPED
    if shutil.which("smpirun") is None or shutil.which("smpicc") is None:
        print("smpirun_replay_compat: smpirun/smpicc not found", file=sys.stderr)
        return EXIT_SKIPPED
    gridcast = args.gridcast.resolve()
    work = Path(tempfile.mkdtemp(prefix="gridcast-compat-")) if args.keep is None else args.keep.resolve()
    work.mkdir(parents=True, exist_ok=True)
    cluster = work / "cluster"
    gen_cluster.write_cluster(cluster, hosts=4, speed="1Gf", bw="1GBps", lat="10us")
    failures = 0
    try:
        print(f"{'case':<72} {'smpirun (s)':>14} {'gridcast (s)':>14} {'diff':>10}  mpich selector")
        for i, case in enumerate(cases()):
            folder = work / f"case-{i:02d}"
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            for rel, text in case.files.items():
                (folder / rel).parent.mkdir(parents=True, exist_ok=True)
                (folder / rel).write_text(text)
            error = record(case, folder, cluster, work) if case.record else ""
            s = g = None
            prediction: dict = {}
            if not error:
                s, error = smpirun_time(case, folder, cluster)
            if not error:
                g, error, prediction = gridcast_time(gridcast, case, folder, cluster, case.cfg + case.gridcast_cfg,
                                                     work / "out")
            default = ""
            if not error and case.collectives:
                d, derr, _ = gridcast_time(gridcast, case, folder, cluster,
                                           case.cfg + case.gridcast_cfg + MPICH_SELECTOR, work / "out")
                default = f"{d:.9g} s ({(d - s) / s:+.2%})" if d is not None and s else derr
            if not error and case.expect_paths is not None:
                got = prediction.get("inputs", [{}])[0].get("paths_relative_to")
                if got != case.expect_paths:
                    error = f"prediction.json says paths_relative_to={got!r}, expected {case.expect_paths!r}"
            if error:
                failures += 1
                print(f"{case.name:<72} FAILED: {error}")
                continue
            diff = relative_difference(g, s)
            ok = diff <= args.tolerance
            failures += 0 if ok else 1
            print(f"{case.name:<72} {s:>14.9g} {g:>14.9g} {diff:>10.2e}{'' if ok else ' DIFFERS'}  {default}")

        print("\nsettings gridcast refuses (each would be ignored otherwise):")
        folder = work / "case-00"
        for cfg, key in REFUSALS:
            out = work / "out"
            shutil.rmtree(out, ignore_errors=True)
            p = run([str(gridcast), "replay", "index.txt", "--platform", str(cluster / "platform.xml"), "--hostfile",
                     str(cluster / "hostfile"), "--cfg", cfg], folder)
            ok = p.returncode == 1 and f"'{key}'" in p.stdout
            failures += 0 if ok else 1
            first = p.stdout.strip().splitlines()[:1]
            print(f"  --cfg {cfg:<36} {'refused' if ok else 'NOT REFUSED (exit ' + str(p.returncode) + ')'}: "
                  f"{first[0] if first else ''}")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\n{'all agree' if failures == 0 else str(failures) + ' case(s) failed'}")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
