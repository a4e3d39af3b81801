#!/usr/bin/env python3
"""Writes profile/: a 4-rank ring halo exchange with a planted load imbalance, as JSON lines.

Each of 20 steps: compute (1.0 ms; rank 2: 1.5 ms, the planted imbalance), MPI_Irecv from the left
neighbour and MPI_Isend of 100 kB to the right one (above the 64 KiB eager threshold: rendezvous),
MPI_Waitall, then an 8-byte MPI_Allreduce. Recorded on a 1 Gflop/s host, so each compute record takes its
seconds on the 1 Gflop/s hosts of platform.xml. Deterministic: rerunning it rewrites the same bytes.
With --balanced: profile-balanced/, the same steps with 1.0 ms of compute on every rank.
"""
import json
import sys
from pathlib import Path

RANKS, STEPS, BYTES = 4, 20, 100_000
# --balanced writes profile-balanced/: every rank computes 1.0 ms a step (the slow-link half of
# docs/guides/wait-states.md, where what is planted is in the platform, slow-link.xml).
balanced = "--balanced" in sys.argv[1:]
here = Path(__file__).resolve().parent
out = here / ("profile-balanced" if balanced else "profile")
out.mkdir(exist_ok=True)
run = {"format": "gridcast-profile", "format_version": 1, "np": RANKS, "nw": 1,
       "command": "examples/wait-states/make-profile.py",
       "host": {"name": "example", "speed_flops": 1e9}, "date": "2026-11-28", "encoding": "jsonl",
       "complete": True, "origin": "examples/wait-states/make-profile.py",
       "units": {"time": "s", "work": "flop", "size": "B"}}
(out / "run.json").write_text(json.dumps(run) + "\n")
for r in range(RANKS):
    lines = [{"op": "init", "fn": "MPI_Init"}]
    for _ in range(STEPS):
        lines.append({"op": "compute", "fn": "compute", "seconds": 0.0015 if r == 2 and not balanced else 0.001})
        lines.append({"op": "irecv", "fn": "MPI_Irecv", "peer": (r - 1) % RANKS, "tag": 0, "bytes": BYTES,
                      "request": 1})
        lines.append({"op": "isend", "fn": "MPI_Isend", "peer": (r + 1) % RANKS, "tag": 0, "bytes": BYTES,
                      "request": 2})
        lines.append({"op": "waitall", "fn": "MPI_Waitall", "requests": [1, 2]})
        lines.append({"op": "allreduce", "fn": "MPI_Allreduce", "bytes": 8})
    lines.append({"op": "finalize", "fn": "MPI_Finalize"})
    (out / f"rank-{r:05d}.jsonl").write_text("".join(json.dumps(l) + "\n" for l in lines))
