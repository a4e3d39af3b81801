#!/usr/bin/env python3
"""What in HPL's call streams the trace-scaling model cannot express yet, measured on SMPI recordings.

    python3 bench/hpl_trace_structure.py PROFILE...        # profiles from examples/hpl-smpi/record.sh
    python3 bench/hpl_trace_structure.py --record [--work DIR]   # records np 4, 8, 16 x N 384, 512, 640

HPL (examples/hpl-smpi) runs a loop over the N/NB panels; the calls a rank makes for panel k depend on
its place on the P x Q process grid relative to the panel's owners: process column k mod Q factors the
panel (with row process k mod P as the current row of the pivot exchanges) and starts the ring
broadcast along each process row; the others receive it at ring distance (col - k) mod Q. This script
cuts every rank's stream into panels (at the panel broadcast, tags 2001 + k) and prints, per profile:

  panels      N/NB
  variants    distinct call sequences of one panel (function, tag relative to the panel's, peer as a
              grid offset), sizes left out
  by-role     whether the variant is a function of the rank's role for that panel, the pair
              ((row - k) mod P, (col - k) mod Q): every (role, panel) agrees -> "yes"
  period      the longest period, in panels, of a rank's variant sequence (the loop body the model's
              tandem-repeat folding would need: it grows with the grid, lcm(P, Q) here)
  loop-comm   share of communication calls inside the panel loop (the rest: HPL_pdinfo's broadcasts
              before it, the back substitution HPL_pdtrsv and the checks after it)
  affine      share of the panel loop's communication calls whose size, at the same role and position,
              is an affine function of the panel index (a trailing matrix that shrinks); the others
              depend on where the pivots are (the row swaps' W messages: llen[] rows per process row)
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMM_OPS = {"send", "isend", "recv", "irecv", "sendrecv", "bcast", "reduce", "allreduce", "allgather",
            "alltoall", "gather", "scatter", "barrier"}
BCAST_TAGS = range(2001, 3001)


TREE_TAG = 9001  # HPL_broadcast / HPL_reduce: the binomial trees of HPL_pdinfo and of the checks


def grid_of(np_: int, layout: str = "dims") -> tuple[int, int]:
    """P x Q of a recording: "dims" as examples/hpl-smpi/record.sh chooses it by default
    (MPI_Dims_create(np, 2): P >= Q, row-major), "row" the 1 x np grid (`record.sh NP N OUT 1 NP`)."""
    if layout == "row":
        return 1, np_
    q = max(d for d in range(1, int(np_ ** 0.5) + 1) if np_ % d == 0 and d * d <= np_)
    return np_ // q, q


def read_ranks(profile: Path, gridcast: str) -> tuple[dict, list[list[dict]]]:
    info = json.loads((profile / "run.json").read_text())
    if info["encoding"] != "jsonl":
        conv = profile.parent / (profile.name + "-jsonl")
        if not conv.exists():
            subprocess.run([gridcast, "convert", "--force", str(profile), "--to", "jsonl", "--out", str(conv)],
                           check=True, capture_output=True)
        profile = conv
    ranks = []
    for r in range(info["np"]):
        with open(profile / f"rank-{r:05d}.jsonl") as f:
            ranks.append([json.loads(line) for line in f if line.strip()])
    return info, ranks


def analyse(info: dict, ranks: list[list[dict]], layout: str = "dims") -> dict:
    np_ = info["np"]
    p, q = grid_of(np_, layout)
    panels = 0
    variants = set()
    period_max = 0
    loop_comm = total_comm = tree_comm = 0
    segments = []  # (rank, panel, role, signature, records)
    for r, recs in enumerate(ranks):
        row, col = divmod(r, q)
        total_comm += sum(1 for x in recs if x["op"] in COMM_OPS)
        tree_comm += sum(1 for x in recs if x["op"] in COMM_OPS and x.get("tag") == TREE_TAG)
        # Panel k starts at this rank's first call with tag 2001 + k (its part of the ring broadcast) and
        # runs to the next panel's: the broadcast of k, the row swaps of k, the factorization of k + 1 in
        # its owner column. The last one ends where the back substitution (tags above 3000) starts.
        starts = []
        for i, x in enumerate(recs):
            if x.get("tag") in BCAST_TAGS and (not starts or recs[starts[-1]]["tag"] != x["tag"]):
                starts.append(i)
        ends = starts[1:] + [next((i for i in range(starts[-1] + 1, len(recs))
                                   if (recs[i].get("tag") or 0) > 3000), len(recs))]
        seq = []
        for k, (a, b) in enumerate(zip(starts, ends)):
            seg = recs[a:b]
            loop_comm += sum(1 for x in seg if x["op"] in COMM_OPS)
            sig = []
            for x in seg:
                peer = x.get("peer")
                off = None if peer is None else (((peer // q - row) % p), ((peer % q - col) % q))
                tag = x.get("tag")
                sig.append((x["fn"], tag - (2001 + k) if tag in BCAST_TAGS else tag, off))
            sig = tuple(sig)
            variants.add(sig)
            seq.append(sig)
            segments.append((r, k, ((row - k) % p, (col - k) % q), sig, seg))
        panels = max(panels, len(seq))
        # Smallest period of the variant sequence, first and last panel left out (they differ).
        inner = seq[1:-1]
        per = next((d for d in range(1, len(inner) + 1)
                    if all(inner[i] == inner[i + d] for i in range(len(inner) - d))), len(inner))
        period_max = max(period_max, per)
    # The variant a role runs most often (first and last panel left out): what a role-selected loop body
    # would be. Segments that differ from it at the same role run calls that depend on the pivots.
    counts: dict[tuple, Counter] = defaultdict(Counter)
    last = panels - 1
    for r, k, role, sig, _ in segments:
        if 0 < k < last:
            counts[role][sig] += 1
    usual = {role: c.most_common(1)[0][0] for role, c in counts.items()}
    off_segments = off_calls = 0
    size_obs: dict[tuple, list[tuple[int, int]]] = defaultdict(list)
    for r, k, role, sig, seg in segments:
        if not 0 < k < last:
            continue
        if sig != usual[role]:
            off_segments += 1
            off_calls += sum(1 for x in seg if x["op"] in COMM_OPS)
            continue
        for pos, x in enumerate(seg):
            if x["op"] in COMM_OPS:
                size_obs[(r, role, pos)].append((k, x.get("bytes", 0)))
    affine = calls = 0
    for obs in size_obs.values():
        calls += len(obs)
        if len(obs) <= 2:
            affine += len(obs)
            continue
        (k0, b0), (k1, b1) = obs[0], obs[1]
        slope = (b1 - b0) / (k1 - k0)
        if all(abs(b0 + slope * (k - k0) - b) < 1e-9 for k, b in obs):
            affine += len(obs)
    inner_segments = sum(1 for s in segments if 0 < s[1] < last)
    return {"np": np_, "nw": info.get("nw"), "grid": f"{p}x{q}", "panels": panels, "variants": len(variants),
            "roles": len(usual), "off_segments": off_segments, "inner_segments": inner_segments,
            "off_calls": off_calls, "period": period_max, "loop_comm": loop_comm, "total_comm": total_comm,
            "affine": affine, "sized_calls": calls, "tree_comm": tree_comm}


def print_table(profiles: list[Path], gridcast: str, layout: str = "dims") -> None:
    hdr = (f"{'np':>4} {'grid':>5} {'N':>5} {'panels':>6} {'variants':>8} {'roles':>5} {'period':>6} "
           f"{'loop-comm':>15} {'off-role panels':>19} {'off-role comm':>20} {'affine sizes':>21} "
           f"{'tree comm':>20}")
    print(hdr)
    print("-" * len(hdr))
    for prof in profiles:
        info, ranks = read_ranks(prof, gridcast)
        a = analyse(info, ranks, layout)
        pct = lambda x, y: 100.0 * x / max(1, y)
        print(f"{a['np']:>4} {a['grid']:>5} {a['nw']:>5.0f} {a['panels']:>6} {a['variants']:>8} {a['roles']:>5} "
              f"{a['period']:>6} {a['loop_comm']:>7}/{a['total_comm']:<7} "
              f"{a['off_segments']:>5}/{a['inner_segments']:<5} {pct(a['off_segments'], a['inner_segments']):6.2f}% "
              f"{a['off_calls']:>6}/{a['loop_comm']:<6} {pct(a['off_calls'], a['loop_comm']):6.2f}% "
              f"{a['affine']:>6}/{a['sized_calls']:<6} {pct(a['affine'], a['sized_calls']):6.2f}% "
              f"{a['tree_comm']:>6}/{a['total_comm']:<6} {pct(a['tree_comm'], a['total_comm']):6.2f}%")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("profiles", nargs="*", type=Path)
    ap.add_argument("--record", action="store_true", help="record np 4, 8, 16 x N 384, 512, 640 first")
    ap.add_argument("--work", type=Path, default=None, help="where --record writes (default: a temporary folder)")
    ap.add_argument("--gridcast", default=str(ROOT / "build" / "bin" / "gridcast"))
    ap.add_argument("--grid", choices=["dims", "row"], default="dims",
                    help="HPL's process grid in the recordings: dims = MPI_Dims_create(np, 2) (P >= Q, record.sh's "
                         "default), row = 1 x np (record.sh NP N OUT 1 NP; --record records that grid)")
    args = ap.parse_args()
    profiles = list(args.profiles)
    if args.record:
        work = args.work or Path(tempfile.mkdtemp(prefix="gridcast-hpl-"))
        for np_ in (4, 8, 16):
            for n in (384, 512, 640):
                out = work / f"hpl-np{np_}-nw{n}"
                if not (out / "run.json").exists():
                    grid = ["1", str(np_)] if args.grid == "row" else []
                    subprocess.run([str(ROOT / "examples/hpl-smpi/record.sh"), str(np_), str(n), str(out), *grid],
                                   check=True, capture_output=True, env={"GRIDCAST": args.gridcast,
                                                                         "PATH": "/usr/bin:/bin"})
                profiles.append(out)
    if not profiles:
        ap.error("give profile directories or --record")
    print_table(profiles, args.gridcast, args.grid)
    return 0


if __name__ == "__main__":
    sys.exit(main())
