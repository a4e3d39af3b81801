#!/usr/bin/env python3
"""Validation of the trace-scaling model (`gridcast fit` / `gridcast synth`) against real runs.

    cmake --build build --target gridcast && python3 bench/trace_model_validation.py     # ~1 min
    python3 bench/trace_model_validation.py --quick       # np 64 only, the 2x size only
    python3 bench/trace_model_validation.py --apps hpl    # HPL (examples/hpl-smpi), not in the default set

For each example program (examples/stencil3d, periodic 3-D and non-periodic 2-D, examples/master-worker,
examples/pipeline, examples/overlap-solver with nonblocking collectives):
  1. record training runs with `smpirun -trace-ti` (each example's record.sh) at np 4, 8, 16 and three
     sizes, imported as gridcast profiles;
  2. `gridcast fit` them into one model.json;
  3. at np 64 and 256 and at sizes 2x and 4x the largest training size, record the real run the same
     way and `gridcast synth` the model there;
  4. compare rank by rank:
       calls     number of calls, recorded and synthesized (all ranks)
       fn-eq     ranks whose per-function call counts are all equal
       comm-eq   communication calls whose (function, peer, source, tag, size, root) equal the recorded
                 call at the same position of the rank's communication sequence, over all of them
                 (a missing or extra call counts as a mismatch)
       same      ranks whose whole synthesized stream equals the recorded one, every field of every call
                 (compute flops and request ids included; flops within 1e-5 relative, since SMPI writes
                 them with 6 significant digits: 8*64^3 = 2097152 is recorded as 2097150)
HPL (examples/hpl-smpi: HPCC's HPL from Debian's source, N = 384, 512, 640 with NB = 16, targets N = 1280
and 2560) is run only when named in --apps, on two process grids:
  hpl      1 x Q (Q = np): pivoting and row swaps stay inside each process, so every message follows from
           (N, np, rank, panel): the numbered loops (panel broadcast, back substitution) and the binomial
           trees (HPL_broadcast / HPL_reduce) of docs/reference/trace-model.md express all of it;
  hpl-2d   P x Q = MPI_Dims_create(np, 2): the row swaps and the pivot exchanges between process rows
           send what the pivots make them send (data-dependent sizes and skipped messages), which no
           expression of (N, np, rank, panel) gives; fit's message is its row.
An HPL grid fit could not express gets the panel-structure table of bench/hpl_trace_structure.py after
the main table (off-role and non-affine shares: what a model without the pivots cannot match).
LAMMPS (examples/lammps-smpi: Debian's source built with smpicxx by scripts/build-lammps-smpi.sh, which
must have run: exit 77 otherwise) is run only when named in --apps (`--apps lammps`): the LJ melt of
in.lj on N x N x N fcc cells (Nw = N: 8, 12, 16 in training, 32 and 64 as targets), 40 steps, process
grid MPI_Dims_create(np, 3). Its calls follow the grid's shape (an axis of extent 1 makes no MPI calls,
one of more than 2 ranks makes more), which the model expresses with axis sweeps (docs/reference/trace-model.md). After the
main table: every point recorded a second time with another velocity seed and compared with the first
(the share of communication calls whose sizes follow the atoms' motion), and rank 0's calls by function
on each process grid. LAMMPS rows (and the seed table) print two more columns: route-eq, the share of
communication calls whose (function, peer, source, tag, root) equal the recorded call's at the same
position, and size-eq, the share whose (function, sizes, counts) do: a model of (Nw, Np, rank) can reach
100 % routes, and sizes only where the atoms' motion does not decide them (the seed table's size-eq).
--corpus runs bench/corpus_validation.py instead (the mini-apps of examples/corpus/, trained at 3 counts x
3 sizes and predicted at 4x the count and 2x the size; its options follow --corpus).
Prints the table; exit 0 when every point reaches the issue's targets (all ranks fn-eq, comm-eq >= 99 %),
1 otherwise, 77 when smpicc/smpirun or gridcast are missing.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# name -> (record.sh folder, training sizes, target sizes, extra program arguments)
APPS = {
    "stencil3d": ("examples/stencil3d", [8, 12, 16], [32, 64], []),
    # The same program on a non-periodic 2-D grid: nine kinds of rank (corners, sides, interior).
    "stencil2d-open": ("examples/stencil3d", [8, 12, 16], [32, 64], ["2", "0"]),
    "master-worker": ("examples/master-worker", [2, 3, 4], [8, 16], []),
    "pipeline": ("examples/pipeline", [1024, 2048, 4096], [8192, 16384], []),
    # Nonblocking collectives (MPI_Iallreduce overlapping the halo exchange, MPI_Ibcast, MPI_Ireduce,
    # MPI_Iallgather, MPI_Ibarrier) and their waits among the isend/irecv requests.
    "overlap-solver": ("examples/overlap-solver", [8, 12, 16], [32, 64], []),
    # HPL's matrix order N with NB = 16 (24 to 40 panels in training: at least 8 panel-broadcast tags, so
    # the panel loop is found as a numbered loop); the grid per app in HPL_GRID.
    "hpl": ("examples/hpl-smpi", [384, 512, 640], [1280, 2560], []),
    "hpl-2d": ("examples/hpl-smpi", [384, 512, 640], [1280, 2560], []),
    # LAMMPS (examples/lammps-smpi: Debian's source built with smpicxx by scripts/build-lammps-smpi.sh),
    # the LJ melt of in.lj on an n x n x n fcc lattice (Nw = n, 4 n^3 atoms), 40 steps, on the
    # MPI_Dims_create(np, 3) process grid: 128 to 1024 atoms per rank in training.
    "lammps": ("examples/lammps-smpi", [8, 12, 16], [32, 64], []),
}
# HPL's process grid per app: "row" = 1 x np (record.sh NP N OUT 1 NP), "dims" = record.sh's default
# MPI_Dims_create(np, 2).
HPL_GRID = {"hpl": "row", "hpl-2d": "dims"}
DEFAULT_APPS = ["stencil3d", "stencil2d-open", "master-worker", "pipeline", "overlap-solver"]
TRAIN_NP = [4, 8, 16]
# Where scripts/build-lammps-smpi.sh builds LAMMPS (the lammps app needs it; the bench does not build it).
LAMMPS_LMP = Path(os.environ.get("GRIDCAST_CACHE", str(Path.home() / ".cache" / "gridcast"))) / \
    "lammps-smpi-build" / "lmp"
# The second velocity seed of the lammps app's data-dependence table (in.lj's default is 87287).
LAMMPS_SEED2 = 4928459
TARGET_NP = [64, 256]

COMM_OPS = {
    "send", "ssend", "isend", "issend", "recv", "irecv", "sendrecv", "bcast", "reduce", "allreduce",
    "alltoall", "alltoallv", "gather", "gatherv", "allgather", "allgatherv", "scatter", "scatterv",
    "reducescatter", "scan", "exscan", "barrier",
}


def run(cmd: list[str], env: dict | None = None) -> str:
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if res.returncode != 0:
        sys.stderr.write(f"command failed ({res.returncode}): {' '.join(cmd)}\n{res.stdout}{res.stderr}")
        raise SystemExit(1)
    return res.stdout


def source_digest(app: str) -> str:
    """Recordings are reused from --work only while the program and its record script are unchanged."""
    h = hashlib.sha1()
    folder = ROOT / APPS[app][0]
    # record.sh delegates to the shared scripts/record-smpi.sh: a change there re-records too.
    for f in sorted(folder.glob("*.c")) + [folder / n for n in ("record.sh", "platform.xml", "build.sh",
                                                                  "hpccinf.template", "in.lj")] + [
            ROOT / "scripts" / "record-smpi.sh"]:
        if f.exists():
            h.update(f.read_bytes())
    h.update(repr(APPS[app][3]).encode())
    h.update(HPL_GRID.get(app, "").encode())
    return h.hexdigest()[:10]


def record(app: str, np_: int, nw: int, out: Path, gridcast: str, extra: tuple = ()) -> Path:
    """extra: more arguments of record.sh after the app's own (the lammps app's velocity seed)."""
    out = out.parent / source_digest(app) / out.name
    if not (out / "run.json").exists():
        env = dict(os.environ, GRIDCAST=gridcast)
        grid = ["1", str(np_)] if HPL_GRID.get(app) == "row" else []
        run([str(ROOT / APPS[app][0] / "record.sh"), str(np_), str(nw), str(out), *APPS[app][3], *grid,
             *extra], env)
    return out


def read_ranks(profile: Path, gridcast: str, scratch: Path) -> list[list[dict]]:
    """Every rank's records, through `gridcast convert` to JSON lines."""
    info = json.loads((profile / "run.json").read_text())
    if info["encoding"] != "jsonl":
        conv = profile.parent / (profile.name + "-jsonl")  # next to its recording: never stale
        if not conv.exists():
            run([gridcast, "convert", "--force", str(profile), "--to", "jsonl", "--out", str(conv)])
        profile = conv
    ranks = []
    for r in range(info["np"]):
        with open(profile / f"rank-{r:05d}.jsonl") as f:
            ranks.append([json.loads(line) for line in f if line.strip()])
    return ranks


def comm_key(rec: dict) -> tuple:
    return (rec.get("fn"), rec.get("peer"), rec.get("src"), rec.get("tag"), rec.get("bytes", 0),
            rec.get("recv_bytes", 0), rec.get("root", 0), tuple(rec.get("counts", [])))


def route_key(rec: dict) -> tuple:
    """Where a communication call goes: function, peer, source, tag, root (its sizes left out)."""
    return (rec.get("fn"), rec.get("peer"), rec.get("src"), rec.get("tag"), rec.get("root", 0))


def size_key(rec: dict) -> tuple:
    """How much a communication call carries: function, sizes, per-rank counts (its peers left out)."""
    return (rec.get("fn"), rec.get("bytes", 0), rec.get("recv_bytes", 0), tuple(rec.get("counts", [])),
            tuple(rec.get("recv_counts", [])))


def same_record(a: dict, b: dict) -> bool:
    if a.keys() != b.keys():
        return False
    for k, v in a.items():
        if k in ("flops", "seconds"):
            if abs(v - b[k]) > 1e-5 * max(abs(v), abs(b[k])):
                return False
        elif v != b[k]:
            return False
    return True


def dims_create3(np_: int) -> tuple[int, int, int]:
    """MPI_Dims_create(np, 3): the most balanced factorisation, non-increasing (examples/lammps-smpi)."""
    best = None
    for a in range(1, np_ + 1):
        for b in range(1, a + 1):
            if np_ % (a * b) == 0 and np_ // (a * b) <= b:
                d = (a, b, np_ // (a * b))
                if best is None or max(d) - min(d) < max(best) - min(best):
                    best = d
    return best


def compare(recorded: list[list[dict]], synth: list[list[dict]]) -> dict:
    calls_rec = sum(len(r) for r in recorded)
    calls_syn = sum(len(r) for r in synth)
    fn_eq = same = 0
    comm_total = comm_match = route_match = size_match = 0
    for rr, sr in zip(recorded, synth):
        same += len(rr) == len(sr) and all(same_record(a, b) for a, b in zip(rr, sr))
        if Counter(x.get("fn") for x in rr) == Counter(x.get("fn") for x in sr):
            fn_eq += 1
        rx = [x for x in rr if x["op"] in COMM_OPS]
        sx = [x for x in sr if x["op"] in COMM_OPS]
        comm_total += max(len(rx), len(sx))
        comm_match += sum(1 for a, b in zip(rx, sx) if comm_key(a) == comm_key(b))
        route_match += sum(1 for a, b in zip(rx, sx) if route_key(a) == route_key(b))
        size_match += sum(1 for a, b in zip(rx, sx) if size_key(a) == size_key(b))
    return {
        "ranks": len(recorded), "ranks_synth": len(synth), "calls_rec": calls_rec, "calls_syn": calls_syn,
        "fn_eq": fn_eq, "same": same, "comm_total": comm_total, "comm_match": comm_match,
        "route_match": route_match, "size_match": size_match,
    }


def pct_of(n: int, total: int) -> float:
    return 100.0 * n / total if total else 100.0


def main() -> int:
    if "--corpus" in sys.argv[1:]:
        # The unseen mini-apps of examples/corpus (bench/corpus_validation.py, which reuses this file's
        # comparison); the other options are corpus_validation.py's.
        import corpus_validation
        return corpus_validation.main([a for a in sys.argv[1:] if a != "--corpus"])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gridcast", default=str(ROOT / "build" / "bin" / "gridcast"))
    ap.add_argument("--work", default=None, help="keep recordings here (reused when present)")
    ap.add_argument("--quick", action="store_true", help="np 64 only, the 2x size only")
    ap.add_argument("--apps", default=",".join(DEFAULT_APPS),
                    help="comma-separated subset of " + ", ".join(APPS) + " (default: all but the HPL ones)")
    args = ap.parse_args()
    if not Path(args.gridcast).exists() or not shutil.which("smpicc") or not shutil.which("smpirun"):
        print("trace_model_validation: needs gridcast (build it) and smpicc/smpirun", file=sys.stderr)
        return 77
    if "lammps" in args.apps.split(",") and not LAMMPS_LMP.exists():
        print(f"trace_model_validation: --apps lammps needs {LAMMPS_LMP}: run scripts/build-lammps-smpi.sh "
              "first (~6 min; GRIDCAST_CACHE names its cache folder)", file=sys.stderr)
        return 77
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="gridcast-tm-"))
    work.mkdir(parents=True, exist_ok=True)
    target_np = TARGET_NP[:1] if args.quick else TARGET_NP

    rows = []
    structure = []  # (app, profiles) whose panel structure is printed (HPL when it was not fitted)
    ok = True
    for app in args.apps.split(","):
        folder, train_nw, target_nw, _ = APPS[app]
        if args.quick:
            target_nw = target_nw[:1]
        profiles = [record(app, p, w, work / f"{app}-np{p}-nw{w}", args.gridcast) for p in TRAIN_NP for w in train_nw]
        model = work / f"{app}.model.json"
        fit = subprocess.run([args.gridcast, "fit", *map(str, profiles), "-o", str(model)],
                             capture_output=True, text=True)
        if fit.returncode != 0:
            # A program the model cannot express (exit 1, the reason on stderr) is a row of the table,
            # not the end of the benchmark; an internal error (exit 2) still ends it.
            if fit.returncode != 1:
                run([args.gridcast, "fit", *map(str, profiles), "-o", str(model)])
            rows.append({"app": app, "error": fit.stderr.strip(), "ok": False})
            ok = False
            if app in HPL_GRID:
                # Record the targets anyway: what in them a model would have to reproduce, measured.
                targets = [record(app, p, w, work / f"{app}-np{p}-nw{w}", args.gridcast)
                           for p in target_np for w in target_nw]
                structure.append((app, profiles + targets, HPL_GRID[app]))
            continue
        m = json.loads(model.read_text())
        for p in target_np:
            for w in target_nw:
                rec = record(app, p, w, work / f"{app}-np{p}-nw{w}", args.gridcast)
                syn = work / f"{app}-np{p}-nw{w}-synth"
                shutil.rmtree(syn, ignore_errors=True)
                run([args.gridcast, "synth", "--force", str(model), "--nw", str(w), "--np", str(p), "--out", str(syn),
                     "--encoding", "jsonl"])
                c = compare(read_ranks(rec, args.gridcast, work), read_ranks(syn, args.gridcast, work))
                c.update(app=app, np=p, nw=w, groups=len(m["groups"]), rule=m["rule"]["classifier"])
                good = (c["ranks"] == c["ranks_synth"] and c["fn_eq"] == c["ranks"]
                        and c["comm_match"] >= 0.99 * c["comm_total"])
                ok = ok and good
                c["ok"] = good
                rows.append(c)

    hdr = f"{'app':<14} {'np':>4} {'Nw':>6} {'groups':>6} {'rule':<18} {'calls rec':>10} {'calls syn':>10} " \
          f"{'fn-eq ranks':>12} {'comm-eq':>18} {'':>7} {'same':>9} {'':>4}"
    print(hdr)
    print("-" * len(hdr))
    for c in rows:
        if "error" in c:
            print(f"{c['app']:<14} not fitted: {c['error']}")
            continue
        pct = 100.0 * c["comm_match"] / c["comm_total"] if c["comm_total"] else 100.0
        print(f"{c['app']:<14} {c['np']:>4} {c['nw']:>6} {c['groups']:>6} {c['rule']:<18} {c['calls_rec']:>10} "
              f"{c['calls_syn']:>10} {c['fn_eq']:>5}/{c['ranks']:<6} "
              f"{c['comm_match']:>8}/{c['comm_total']:<8} {pct:6.2f}% {c['same']:>4}/{c['ranks']:<4} "
              f"{'ok' if c['ok'] else 'FAIL'}"
              # LAMMPS: ~40 % of its sizes follow the atoms' motion, so routes and sizes apart.
              + (f"  route-eq {pct_of(c['route_match'], c['comm_total']):6.2f}%"
                 f"  size-eq {pct_of(c['size_match'], c['comm_total']):6.2f}%" if c["app"] == "lammps" else ""))
    if "lammps" in args.apps.split(","):
        # What in LAMMPS' calls follows the atoms' motion, not (Nw, Np, rank): the same point recorded
        # with a second velocity seed, compared with the first like a synthesized stream. A position
        # that differs between the two is one no model of (Nw, Np, rank) can match in both.
        print(f"\nlammps: recorded (seed 87287) vs recorded (seed {LAMMPS_SEED2}), same comparison")
        print(f"{'np':>4} {'Nw':>4} {'calls a':>9} {'calls b':>9} {'fn-eq ranks':>12} {'comm-eq':>18} {'':>7} "
              f"{'route-eq':>9} {'size-eq':>8}")
        for p in TRAIN_NP + target_np:
            for w in APPS["lammps"][1] + (APPS["lammps"][2][:1] if args.quick else APPS["lammps"][2]):
                if (p in TRAIN_NP) != (w in APPS["lammps"][1]):
                    continue  # the training grid and the target grid, not their mix
                a = record("lammps", p, w, work / f"lammps-np{p}-nw{w}", args.gridcast)
                b = record("lammps", p, w, work / f"lammps-np{p}-nw{w}-seed{LAMMPS_SEED2}", args.gridcast,
                           (str(LAMMPS_SEED2),))
                c = compare(read_ranks(a, args.gridcast, work), read_ranks(b, args.gridcast, work))
                pct = 100.0 * c["comm_match"] / c["comm_total"] if c["comm_total"] else 100.0
                print(f"{p:>4} {w:>4} {c['calls_rec']:>9} {c['calls_syn']:>9} {c['fn_eq']:>5}/{c['ranks']:<6} "
                      f"{c['comm_match']:>8}/{c['comm_total']:<8} {pct:6.2f}% "
                      f"{pct_of(c['route_match'], c['comm_total']):8.2f}% {pct_of(c['size_match'], c['comm_total']):7.2f}%")
        # What the process grid changes (what the axis sweeps of the model express): rank 0's calls by
        # function at the smallest size of each rank count. LAMMPS skips MPI on an axis of extent 1 (the
        # halo is a local copy) and sends atoms leaving across a second boundary only when an axis has
        # more than 2 ranks (CommBrick::exchange), so the calls per step follow the grid's shape.
        print("\nlammps: rank 0's calls by function, by process grid (MPI_Dims_create(np, 3))")
        fns = ["sendRecv", "irecv", "send", "wait", "allreduce", "bcast"]
        print(f"{'np':>4} {'Nw':>4} {'grid':<8} " + " ".join(f"{f:>9}" for f in fns) + f" {'all':>6}")
        for p in TRAIN_NP + target_np:
            w = APPS["lammps"][1][0] if p in TRAIN_NP else APPS["lammps"][2][0]
            r0 = read_ranks(record("lammps", p, w, work / f"lammps-np{p}-nw{w}", args.gridcast), args.gridcast,
                            work)[0]
            n = Counter(x.get("fn") for x in r0)
            grid = "x".join(map(str, dims_create3(p)))
            print(f"{p:>4} {w:>4} {grid:<8} " + " ".join(f"{n[f]:>9}" for f in fns) + f" {len(r0):>6}")
    for app, profs, layout in structure:
        # bench/hpl_trace_structure.py: why fit could not express the program, per recording.
        sys.path.insert(0, str(ROOT / "bench"))
        import hpl_trace_structure
        print(f"\n{app}: the structure fit would have to express (bench/hpl_trace_structure.py)")
        hpl_trace_structure.print_table(profs, args.gridcast, layout)
    print(f"\ntraining: np {TRAIN_NP} x three sizes per app; recordings in {work}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
