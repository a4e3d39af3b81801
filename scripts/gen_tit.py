#!/usr/bin/env python3
"""Write synthetic SMPI time-independent traces (TIT) in SimGrid 3.32 syntax.

    scripts/gen_tit.py --pattern ring --np 16 --iters 100 --bytes 8192 --flops 1e6 --out out/ring16
    smpirun -np 16 -platform P.xml -hostfile F -replay out/ring16/trace.txt
    gridcast replay out/ring16/trace.txt --platform P.xml --hostfile F

Layout, as `smpirun -trace-ti` writes it: DIR/trace.txt is the index, one line per rank
("trace.txt_files/<pattern>_rank-<i>.txt", i = rank + 1, relative to the index's folder), and each
per-rank file holds "<rank> <action> <args...>" lines from "<rank> init" to "<rank> finalize".
DIR/gen_tit.json records the parameters and the number of actions (events).

Patterns (one iteration each; --iters repeats it):
  ring           compute F; isend next; irecv prev; waitall 2
  ring-blocking  compute F; even ranks send next then recv prev, odd ranks the other way round
  halo3d         3-D periodic process grid (balanced like MPI_Dims_create): irecv from the 6
                 neighbours, isend to them, waitall, compute F, then allreduce (--no-allreduce
                 drops it). A dimension of extent 1 exchanges nothing.
  p2p-wild       compute F*(1 + (rank % 4)/4); every rank but 0 sends to rank 0 while rank 0 posts
                 np-1 wildcard receives; then isend next, wildcard recv, wait.
  collectives    compute F*(1 + (rank % 4)/4); barrier; bcast, reduce and allreduce of --bytes (the
                 root moves by one rank per iteration); allgather, alltoall, gather, scatter,
                 allgatherv, alltoallv and reducescatter of --bytes/np per rank (at least one element)

Messages are --bytes long, written as a count of --datatype elements with SMPI's datatype id, like
the tracer does ("isend 1 7 100 0" = 100 MPI_DOUBLE to rank 1, tag 7). Compute amounts are flops,
printed with C's %g as the tracer does. A wildcard source is written as -333 by default, which is
what SimGrid 3.32's tracer writes for MPI_ANY_SOURCE (it is MPI_UNDEFINED); note that 3.32's own
`smpirun -replay` then deadlocks, it only accepts -555 (MPI_ANY_SOURCE): use --any-source -555 to
produce traces that smpirun can replay. Output is deterministic (no clock, no randomness).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path

# SMPI datatype ids (simgrid::smpi::Datatype::encode in 3.32, checked against -trace-ti output).
DATATYPES = {"double": (0, 8), "int": (1, 4), "char": (2, 1), "byte": (6, 1)}
PATTERNS = ("ring", "ring-blocking", "halo3d", "p2p-wild", "collectives")
TRACER_ANY_SOURCE = -333  # what SimGrid 3.32's -trace-ti writes for MPI_ANY_SOURCE
SMPI_ANY_SOURCE = -555    # MPI_ANY_SOURCE in SMPI; the only value 3.32's replay matches

RING_TAG = 1
GATHER_TAG = 3


def fmt_flops(flops: float) -> str:
    """Format like the tracer's "%g" (e.g. 1e+06, 2.5e+06, 1234)."""
    return f"{flops:g}"


def prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def dims_create(nnodes: int, ndims: int = 3) -> list[int]:
    """Balanced grid like MPI_Dims_create: largest prime factors first onto the smallest extent,
    result in non-increasing order (256 -> [8, 8, 4], 12 -> [3, 2, 2], 7 -> [7, 1, 1])."""
    dims = [1] * ndims
    for p in sorted(prime_factors(nnodes), reverse=True):
        i = dims.index(min(dims))
        dims[i] *= p
    return sorted(dims, reverse=True)


def cart_coords(rank: int, dims: list[int]) -> list[int]:
    """Row-major coordinates, as MPI_Cart_coords (last dimension varies fastest)."""
    coords = []
    for d in reversed(dims):
        coords.append(rank % d)
        rank //= d
    return coords[::-1]


def cart_rank(coords: list[int], dims: list[int]) -> int:
    r = 0
    for c, d in zip(coords, dims):
        r = r * d + (c % d)
    return r


class Msg:
    """Message shape shared by all point-to-point lines: count and datatype id."""

    def __init__(self, nbytes: int, datatype: str):
        dt_id, dt_size = DATATYPES[datatype]
        if nbytes < 0 or nbytes % dt_size:
            raise ValueError(f"--bytes {nbytes} is not a multiple of sizeof({datatype}) = {dt_size}")
        self.count = nbytes // dt_size
        self.dt = dt_id

    def args(self) -> str:
        return f"{self.count} {self.dt}"


def ring(rank: int, np_: int, iters: int, msg: Msg, flops: float, allreduce: str | None) -> Iterator[str]:
    nxt, prv = (rank + 1) % np_, (rank - 1) % np_
    for _ in range(iters):
        yield f"compute {fmt_flops(flops)}"
        yield f"isend {nxt} {RING_TAG} {msg.args()}"
        yield f"irecv {prv} {RING_TAG} {msg.args()}"
        yield "waitall 2"
        if allreduce:
            yield allreduce


def ring_blocking(rank: int, np_: int, iters: int, msg: Msg, flops: float,
                  allreduce: str | None) -> Iterator[str]:
    nxt, prv = (rank + 1) % np_, (rank - 1) % np_
    for _ in range(iters):
        yield f"compute {fmt_flops(flops)}"
        send = f"send {nxt} {RING_TAG} {msg.args()}"
        recv = f"recv {prv} {RING_TAG} {msg.args()}"
        yield from ((send, recv) if rank % 2 == 0 else (recv, send))
        if allreduce:
            yield allreduce


def halo_neighbours(rank: int, dims: list[int]) -> list[tuple[int, int, int]]:
    """(neighbour, send tag, recv tag) per direction. Tags differ per direction so that a dimension of
    extent 2 (same neighbour on both sides) still gives distinct (src, dst, tag) request keys, which
    SMPI's replay needs. The message received from the - side is the one sent towards +."""
    coords = cart_coords(rank, dims)
    out = []
    for d, extent in enumerate(dims):
        if extent == 1:
            continue
        for sign, send_tag, recv_tag in ((+1, 2 * d, 2 * d + 1), (-1, 2 * d + 1, 2 * d)):
            c = list(coords)
            c[d] += sign
            # We send tag send_tag towards `sign`; the neighbour on that side receives it with its
            # recv tag for the opposite side, which is the same number.
            out.append((cart_rank(c, dims), send_tag, recv_tag))
    return out


def halo3d(rank: int, np_: int, iters: int, msg: Msg, flops: float, allreduce: str | None) -> Iterator[str]:
    dims = dims_create(np_, 3)
    nbrs = halo_neighbours(rank, dims)
    for _ in range(iters):
        for nbr, _, recv_tag in nbrs:
            yield f"irecv {nbr} {recv_tag} {msg.args()}"
        for nbr, send_tag, _ in nbrs:
            yield f"isend {nbr} {send_tag} {msg.args()}"
        if nbrs:
            yield f"waitall {2 * len(nbrs)}"
        yield f"compute {fmt_flops(flops)}"
        if allreduce:
            yield allreduce


def p2p_wild(rank: int, np_: int, iters: int, msg: Msg, flops: float, allreduce: str | None,
             any_source: int = TRACER_ANY_SOURCE) -> Iterator[str]:
    nxt = (rank + 1) % np_
    my_flops = flops * (1.0 + (rank % 4) / 4.0)
    for _ in range(iters):
        yield f"compute {fmt_flops(my_flops)}"
        if rank == 0:
            for _ in range(np_ - 1):
                yield f"recv {any_source} {GATHER_TAG} {msg.args()}"
        else:
            yield f"send 0 {GATHER_TAG} {msg.args()}"
        yield f"isend {nxt} {RING_TAG} {msg.args()}"
        yield f"recv {any_source} {RING_TAG} {msg.args()}"
        yield f"wait {rank} {nxt} {RING_TAG}"
        if allreduce:
            yield allreduce


def collectives(rank: int, np_: int, iters: int, msg: Msg, flops: float) -> Iterator[str]:
    """Every collective action SMPI 3.32's replayer and gridcast both read, with the tracer's syntax."""
    my_flops = flops * (1.0 + (rank % 4) / 4.0)
    block = max(1, msg.count // np_)  # per-rank share of the buffer, in elements
    dt = msg.dt
    counts = " ".join([str(block)] * np_)
    for it in range(iters):
        root = it % np_
        yield f"compute {fmt_flops(my_flops)}"
        yield "barrier"
        yield f"bcast {msg.count} {root} {dt}"
        yield f"reduce {msg.count} 0 {root} {dt}"
        yield f"allreduce {msg.count} 0 {dt}"
        yield f"allgather {block} {block} {dt} {dt}"
        yield f"alltoall {block} {block} {dt} {dt}"
        yield f"gather {block} {block} {root} {dt} {dt}"
        yield f"scatter {block} {block} {root} {dt} {dt}"
        yield f"allgatherv {block} {counts} {dt} {dt}"
        yield f"alltoallv {block * np_} {counts} {block * np_} {counts} {dt} {dt}"
        yield f"reducescatter {counts} 0 {dt}"


def rank_lines(pattern: str, rank: int, np_: int, iters: int, msg: Msg, flops: float,
               allreduce: str | None, any_source: int) -> Iterator[str]:
    yield "init"
    if pattern == "ring":
        yield from ring(rank, np_, iters, msg, flops, allreduce)
    elif pattern == "ring-blocking":
        yield from ring_blocking(rank, np_, iters, msg, flops, allreduce)
    elif pattern == "halo3d":
        yield from halo3d(rank, np_, iters, msg, flops, allreduce)
    elif pattern == "p2p-wild":
        yield from p2p_wild(rank, np_, iters, msg, flops, allreduce, any_source)
    elif pattern == "collectives":
        yield from collectives(rank, np_, iters, msg, flops)
    else:
        raise ValueError(f"unknown pattern {pattern!r}")
    yield "finalize"


def generate(out: Path, pattern: str, np_: int, iters: int, nbytes: int, flops: float,
             datatype: str = "double", allreduce: bool | None = None, allreduce_bytes: int = 8,
             any_source: int = TRACER_ANY_SOURCE, index_name: str = "trace.txt") -> dict:
    """Write the trace under `out` and return its description (also saved as out/gen_tit.json)."""
    if pattern not in PATTERNS:
        raise ValueError(f"unknown pattern {pattern!r} (choose from {', '.join(PATTERNS)})")
    if np_ < 2:
        raise ValueError("--np must be >= 2")
    if iters < 0 or flops < 0:
        raise ValueError("--iters and --flops must be >= 0")
    msg = Msg(nbytes, datatype)
    if allreduce is None:
        allreduce = pattern == "halo3d"
    ar_line = None
    if allreduce:
        # "allreduce <count> <comp flops> <datatype>" with the tracer's trailing blank; doubles.
        if allreduce_bytes % 8:
            raise ValueError("--allreduce-bytes must be a multiple of 8 (MPI_DOUBLE)")
        ar_line = f"allreduce {allreduce_bytes // 8} 0 0 "

    out.mkdir(parents=True, exist_ok=True)
    files_dir_name = f"{index_name}_files"
    files_dir = out / files_dir_name
    files_dir.mkdir(exist_ok=True)
    for stale in files_dir.glob("*_rank-*.txt"):
        stale.unlink()
    stem = pattern.replace("-", "_")
    index_lines, events = [], 0
    for rank in range(np_):
        name = f"{stem}_rank-{rank + 1}.txt"
        index_lines.append(f"{files_dir_name}/{name}\n")
        lines = [f"{rank} {line}\n" for line in
                 rank_lines(pattern, rank, np_, iters, msg, flops, ar_line, any_source)]
        events += len(lines)
        (files_dir / name).write_text("".join(lines))
    (out / index_name).write_text("".join(index_lines))

    meta = {
        "generator": "scripts/gen_tit.py",
        "pattern": pattern,
        "np": np_,
        "iters": iters,
        "bytes": nbytes,
        "datatype": datatype,
        "flops": flops,
        "allreduce": bool(allreduce),
        "allreduce_bytes": allreduce_bytes if allreduce else 0,
        "any_source": any_source,
        "point_to_point_only": not allreduce and pattern != "collectives",
        "index": index_name,
        "events": events,
    }
    if pattern == "halo3d":
        meta["dims"] = dims_create(np_, 3)
    (out / "gen_tit.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pattern", required=True, choices=PATTERNS)
    p.add_argument("--np", type=int, required=True, help="number of ranks (>= 2)")
    p.add_argument("--iters", type=int, default=10, help="iterations (default 10)")
    p.add_argument("--bytes", type=int, default=8192,
                   help="point-to-point message size in bytes (default 8192)")
    p.add_argument("--flops", type=float, default=1e6,
                   help="compute per iteration in flops (default 1e6)")
    p.add_argument("--datatype", choices=sorted(DATATYPES), default="double",
                   help="element type the message is written as (default double, SMPI id 0)")
    p.add_argument("--allreduce", action=argparse.BooleanOptionalAction, default=None,
                   help="end every iteration with an allreduce (default: on for halo3d only)")
    p.add_argument("--allreduce-bytes", type=int, default=8,
                   help="allreduce payload in bytes, as doubles (default 8)")
    p.add_argument("--any-source", type=int, default=TRACER_ANY_SOURCE,
                   choices=(TRACER_ANY_SOURCE, SMPI_ANY_SOURCE),
                   help="wildcard source value (default -333 as the 3.32 tracer writes; "
                        "-555 for smpirun -replay)")
    p.add_argument("--index-name", default="trace.txt", help="index file name (default trace.txt)")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    a = p.parse_args(argv)
    try:
        meta = generate(a.out, a.pattern, a.np, a.iters, a.bytes, a.flops, a.datatype, a.allreduce,
                        a.allreduce_bytes, a.any_source, a.index_name)
    except ValueError as e:
        print(f"gen_tit.py: {e}", file=sys.stderr)
        return 2
    print(f"wrote {a.out / a.index_name}: {meta['np']} ranks, {meta['events']} events")
    return 0


if __name__ == "__main__":
    sys.exit(main())
