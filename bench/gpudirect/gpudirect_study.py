#!/usr/bin/env python3
"""GPUDirect vs HostCopy on a Lassen-like machine: a small reproduction of seed 001's study (issue 5).

Builds synthetic JSON-lines traces that follow what seed 001 states about four GPU applications
(AmgX-like, LULESH-like, Minisweep-like, SW4lite-like: message sizes, partners per rank, share of time in
MPI, collectives), replays each with `gridcast replay --gpu-mpi hostcopy|gpudirect` on lassen variants
with 1, 2, 4 and 6 ranks (and GPUs) per node, and prints tables (markdown) of communication time and
makespan. Every MPI buffer is on the device (memory: device); compute is GPU kernels (device_seconds)
followed by a device synchronisation.

Platforms (generated into OUT/platforms with `gridcast platform` from platforms/lassen/spec.json):
  lassen      the committed spec: 4 V100 per node, 1 EDR NIC (100 Gb/s), fat tree    (1, 2, 4 ranks/node)
  lassen6     the same with 6 GPUs per node (3 per socket, NVLink all-to-all inside a socket, like
              Summit's AC922): the 6-GPUs-per-node point of seed 001                     (6 ranks/node)
  lassen6-bw  lassen6 with the NIC and every network link K times faster, K = ranks per node
              (Observation 5: scale the network bandwidth with GPUs per node)

stdlib only. Usage:
  bench/gpudirect/gpudirect_study.py [--gridcast build/bin/gridcast] [--out DIR] [--np 32 64 128 256]
                                     [--rpn 1 2 4 6] [--iterations 3] [--apps amgx lulesh minisweep sw4lite]
"""
from __future__ import annotations

import argparse
import copy
import json
import math
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

KB = 1024
MB = 1024 * 1024


def dims_create(n: int, d: int) -> list[int]:
    """MPI_Dims_create: d factors of n, as balanced as possible, largest first."""
    dims = [1] * d
    rest = n
    primes = []
    p = 2
    while rest > 1:
        while rest % p == 0:
            primes.append(p)
            rest //= p
        p += 1
    for f in sorted(primes, reverse=True):
        i = dims.index(min(dims))
        dims[i] *= f
    return sorted(dims, reverse=True)


def coords(r: int, dims: list[int]) -> list[int]:
    c = []
    for d in reversed(dims):
        c.append(r % d)
        r //= d
    return list(reversed(c))


def rank_of(c: list[int], dims: list[int]) -> int:
    r = 0
    for x, d in zip(c, dims):
        r = r * d + (x % d)
    return r


def line(**kw) -> str:
    return json.dumps(kw, separators=(",", ":")) + "\n"


def kernel(seconds: float) -> str:
    return line(op="gpu_kernel", fn="cudaLaunchKernel", device_seconds=seconds, stream=0) + line(
        op="gpu_sync", fn="cudaDeviceSynchronize")


def stencil_offsets(ndim: int) -> list[tuple[int, ...]]:
    """All non-zero offsets in {-1,0,1}^ndim, in a fixed order."""
    offs = []
    for i in range(3 ** ndim):
        o = []
        for _ in range(ndim):
            o.append(i % 3 - 1)
            i //= 3
        if any(o):
            offs.append(tuple(o))
    return offs


def neighbour_exchange(rank: int, dims: list[int], sizes: dict[int, int], tag0: int) -> str:
    """Periodic stencil exchange: offsets with k non-zero components send sizes[k] bytes (absent: none).
    The message in direction o is received by the neighbour as coming from -o: tags encode the offset."""
    offs = [o for o in stencil_offsets(len(dims)) if sum(1 for x in o if x) in sizes]
    index = {o: i for i, o in enumerate(offs)}
    c = coords(rank, dims)
    out = []
    n = 0
    for o in offs:  # receive from the neighbour at -o what it sent in direction o
        src = rank_of([x - y for x, y in zip(c, o)], dims)
        out.append(line(op="irecv", fn="MPI_Irecv", peer=src, tag=tag0 + index[o], bytes=sizes[sum(1 for x in o if x)],
                        request=n, memory="device"))
        n += 1
    for o in offs:
        dst = rank_of([x + y for x, y in zip(c, o)], dims)
        out.append(line(op="isend", fn="MPI_Isend", peer=dst, tag=tag0 + index[o], bytes=sizes[sum(1 for x in o if x)],
                        request=n, memory="device"))
        n += 1
    out.append(line(op="waitall", fn="MPI_Waitall", requests=list(range(n))))
    return "".join(out)


def lulesh(rank: int, np_: int, iterations: int) -> str:
    # Seed 001: 24 B - 7 KB for >44% of messages, 7-512 KB for 44%, ~1 MB for 11%; little time in MPI.
    # 3D 26-neighbour exchange: corners 24 B, edges 6 KB (20 small), faces 256 KB and a second edge field
    # of 64 KB (18 mid), plus a 1 MB face exchange (6 large): 45% / 41% / 14%; one 8-byte allreduce (dt).
    dims = dims_create(np_, 3)
    out = [line(op="init", fn="MPI_Init")]
    for _ in range(iterations):
        out.append(kernel(0.030))
        out.append(neighbour_exchange(rank, dims, {1: 256 * KB, 2: 6 * KB, 3: 24}, 100))
        out.append(neighbour_exchange(rank, dims, {2: 64 * KB}, 200))
        out.append(neighbour_exchange(rank, dims, {1: 1 * MB}, 300))
        out.append(line(op="allreduce", fn="MPI_Allreduce", bytes=8, memory="device"))
    out.append(line(op="finalize", fn="MPI_Finalize"))
    return "".join(out)


def sw4lite(rank: int, np_: int, iterations: int) -> str:
    # Seed 001: about half the messages ~64 KB, half ~12 MB; about 40% of the time in communication.
    # 2D decomposition, 4 face neighbours, one 64 KB and one 12 MB message to each per step.
    dims = dims_create(np_, 2)
    out = [line(op="init", fn="MPI_Init")]
    for _ in range(iterations):
        out.append(kernel(0.010))
        out.append(neighbour_exchange(rank, dims, {1: 64 * KB}, 100))
        out.append(neighbour_exchange(rank, dims, {1: 12 * MB}, 200))
    out.append(line(op="finalize", fn="MPI_Finalize"))
    return "".join(out)


def minisweep(rank: int, np_: int, iterations: int) -> str:
    # Seed 001: predominantly 4 MB or 8 MB messages, most of the time in communication (KBA wavefront).
    # 2D grid, 4 sweep directions per iteration; each: receive from the upstream x and y neighbours,
    # a short kernel, send downstream (x faces 4 MB, y faces 8 MB). Non-periodic: a pipeline.
    px, py = dims_create(np_, 2)
    x, y = rank // py, rank % py
    out = [line(op="init", fn="MPI_Init")]
    for _ in range(iterations):
        for d, (sx, sy) in enumerate(((1, 1), (-1, 1), (1, -1), (-1, -1))):
            ux, uy = x - sx, y - sy  # upstream
            dx, dy = x + sx, y + sy  # downstream
            if 0 <= ux < px:
                out.append(line(op="recv", fn="MPI_Recv", peer=ux * py + y, tag=10 + d, bytes=4 * MB, memory="device"))
            if 0 <= uy < py:
                out.append(line(op="recv", fn="MPI_Recv", peer=x * py + uy, tag=20 + d, bytes=8 * MB, memory="device"))
            out.append(kernel(0.0005))
            if 0 <= dx < px:
                out.append(line(op="send", fn="MPI_Send", peer=dx * py + y, tag=10 + d, bytes=4 * MB, memory="device"))
            if 0 <= dy < py:
                out.append(line(op="send", fn="MPI_Send", peer=x * py + dy, tag=20 + d, bytes=8 * MB, memory="device"))
    out.append(line(op="finalize", fn="MPI_Finalize"))
    return "".join(out)


def amgx(rank: int, np_: int, iterations: int) -> str:
    # Seed 001: 71% of messages 1-100 KB, 17% 100-500 KB, 8% > 500 KB; collectives dominated by
    # MPI_Allreduce. 3D 26-neighbour halo of a coarse-grid hierarchy: faces 300 KB (6, mid), edges
    # 40 KB (12), corners 2 KB (8) on the fine level; a coarse level with faces 8 KB; a 1 MB face
    # exchange every iteration on one axis pair (2 large); allreduces of 8 B (dot products) and 64 KB.
    dims = dims_create(np_, 3)
    out = [line(op="init", fn="MPI_Init")]
    for _ in range(iterations):
        out.append(kernel(0.004))
        out.append(neighbour_exchange(rank, dims, {1: 300 * KB, 2: 40 * KB, 3: 2 * KB}, 100))
        out.append(neighbour_exchange(rank, dims, {1: 8 * KB}, 200))
        for _ in range(4):
            out.append(line(op="allreduce", fn="MPI_Allreduce", bytes=8, memory="device"))
        out.append(line(op="allreduce", fn="MPI_Allreduce", bytes=64 * KB, memory="device"))
        out.append(kernel(0.002))
    out.append(line(op="finalize", fn="MPI_Finalize"))
    return "".join(out)


APPS = {"amgx": amgx, "lulesh": lulesh, "minisweep": minisweep, "sw4lite": sw4lite}


def write_trace(folder: Path, app: str, np_: int, iterations: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.json").write_text(json.dumps(
        {"format": "gridcast-profile", "format_version": 1, "np": np_, "command": f"synthetic {app}-like (seed 001)",
         "host": {"name": "synthetic", "speed_flops": 1.6e10}, "encoding": "jsonl", "origin": "synthesized"}) + "\n")
    for r in range(np_):
        (folder / f"rank-{r:05d}.jsonl").write_text(APPS[app](r, np_, iterations))


def make_platforms(gridcast: str, out: Path, rpns: list[int]) -> dict[str, Path]:
    spec = json.loads((REPO / "platforms" / "lassen" / "spec.json").read_text())
    kind = next(iter(spec["node_kinds"]))
    six = copy.deepcopy(spec)
    six["name"] = "lassen6"
    nk = six["node_kinds"][kind]
    nk["gpus"]["count"] = 6
    nk["nvlink"]["pairs"] = [[0, 1], [0, 2], [1, 2], [3, 4], [3, 5], [4, 5]]
    specs = {"lassen": spec, "lassen6": six}
    for k in rpns:
        if k == 1:
            continue
        bw = copy.deepcopy(six)
        bw["name"] = f"lassen6-bw{k}"
        bw["node_kinds"][kind]["nics"]["link"]["bandwidth"] = f"{100 * k}Gbps"
        bw["network"]["link"]["bandwidth"] = f"{100 * k}Gbps"
        specs[bw["name"]] = bw
    paths = {}
    (out / "platforms").mkdir(parents=True, exist_ok=True)
    for name, s in specs.items():
        sp = out / "platforms" / f"{name}.json"
        xml = out / "platforms" / f"{name}.xml"
        sp.write_text(json.dumps(s, indent=1))
        if not xml.exists():
            subprocess.run([gridcast, "platform", str(sp), "-o", str(xml), "--quiet"], check=True)
        paths[name] = xml
    return paths


def replay(gridcast: str, trace: Path, platform: Path, rpn: int, mode: str, out: Path) -> dict:
    cached = out / "summary.json"
    if cached.exists():  # a replay is deterministic: an interrupted study resumes where it stopped
        return json.loads(cached.read_text())
    t0 = time.monotonic()
    subprocess.run([gridcast, "replay", str(trace), "--platform", str(platform), "--ranks-per-node", str(rpn),
                    "--gpu-mpi", mode, "--out", str(out), "--no-timeline"], check=True, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    p = json.loads((out / "prediction.json").read_text())
    ranks = p["ranks"]
    comm = sum(r["comm_s"] + r["wait_s"] for r in ranks) / len(ranks)
    summary = {"makespan_s": p["makespan_s"], "comm_s": comm, "wall_s": wall}
    cached.write_text(json.dumps(summary) + "\n")
    return summary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gridcast", default=str(REPO / "build" / "bin" / "gridcast"))
    ap.add_argument("--out", default=str(REPO / "build" / "gpudirect-study"))
    ap.add_argument("--np", type=int, nargs="+", default=[32, 64, 128, 256])
    ap.add_argument("--rpn", type=int, nargs="+", default=[1, 2, 4, 6])
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--apps", nargs="+", default=list(APPS), choices=list(APPS))
    ap.add_argument("--no-bw", action="store_true", help="skip the Observation 5 runs (scaled network)")
    a = ap.parse_args()
    out = Path(a.out)
    platforms = make_platforms(a.gridcast, out, a.rpn)
    results = []
    for app in a.apps:
        for np_ in a.np:
            trace = out / "traces" / f"{app}-{np_}"
            if not (trace / "run.json").exists():
                write_trace(trace, app, np_, a.iterations)
            for rpn in a.rpn:
                runs = [("lassen6" if rpn == 6 else "lassen", m) for m in ("hostcopy", "gpudirect")]
                if rpn > 1 and not a.no_bw:
                    runs.append((f"lassen6-bw{rpn}", "gpudirect"))
                for plat, mode in runs:
                    d = out / "runs" / f"{app}-{np_}-{rpn}-{plat}-{mode}"
                    r = replay(a.gridcast, trace, platforms[plat], rpn, mode, d)
                    r.update(app=app, np=np_, rpn=rpn, platform=plat, mode=mode)
                    results.append(r)
                    print(json.dumps(r), flush=True)
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")

    def get(app, np_, rpn, plat, mode, key):
        for r in results:
            if (r["app"], r["np"], r["rpn"], r["platform"], r["mode"]) == (app, np_, rpn, plat, mode):
                return r[key]
        return math.nan

    base = lambda rpn: "lassen6" if rpn == 6 else "lassen"  # noqa: E731
    print("\n## Observation 1/3: GPUDirect gain in communication time (1 - GPUDirect/HostCopy), 1 rank per node\n")
    print("| app | " + " | ".join(f"np {n}" for n in a.np) + " |")
    print("|---|" + "---|" * len(a.np))
    for app in a.apps:
        cells = []
        for n in a.np:
            h = get(app, n, a.rpn[0], base(a.rpn[0]), "hostcopy", "comm_s")
            g = get(app, n, a.rpn[0], base(a.rpn[0]), "gpudirect", "comm_s")
            cells.append(f"{100 * (1 - g / h):.1f}% ({h * 1e3:.2f} -> {g * 1e3:.2f} ms)")
        print(f"| {app} | " + " | ".join(cells) + " |")
    print("\n## Observation 4: communication time (ms, GPUDirect) by ranks (GPUs) per node, and its ratio to 1/node\n")
    for app in a.apps:
        print(f"\n{app}:\n")
        print("| np | " + " | ".join(f"{k}/node" for k in a.rpn) + " |")
        print("|---|" + "---|" * len(a.rpn))
        for n in a.np:
            one = get(app, n, a.rpn[0], base(a.rpn[0]), "gpudirect", "comm_s")
            cells = [f"{get(app, n, k, base(k), 'gpudirect', 'comm_s') * 1e3:.2f} (x{get(app, n, k, base(k), 'gpudirect', 'comm_s') / one:.2f})"
                     for k in a.rpn]
            print(f"| {n} | " + " | ".join(cells) + " |")
    if not a.no_bw:
        print("\n## Observation 5: network bandwidth scaled with GPUs per node (GPUDirect comm ms, x vs 1/node)\n")
        for app in a.apps:
            print(f"\n{app}:\n")
            print("| np | " + " | ".join(f"{k}/node" for k in a.rpn) + " |")
            print("|---|" + "---|" * len(a.rpn))
            for n in a.np:
                one = get(app, n, a.rpn[0], base(a.rpn[0]), "gpudirect", "comm_s")
                cells = []
                for k in a.rpn:
                    plat = base(k) if k == 1 else f"lassen6-bw{k}"
                    v = get(app, n, k, plat, "gpudirect", "comm_s")
                    cells.append(f"{v * 1e3:.2f} (x{v / one:.2f})")
                print(f"| {n} | " + " | ".join(cells) + " |")
    walls = sorted(r["wall_s"] for r in results)
    print(f"\n{len(results)} replays, wall time per replay: median {walls[len(walls) // 2]:.2f} s, max {walls[-1]:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
