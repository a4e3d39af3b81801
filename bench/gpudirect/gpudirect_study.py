#!/usr/bin/env python3
"""GPUDirect vs HostCopy on a Lassen-like machine: a small reproduction of the study of Khetawat et al., "Predicting GPUDirect Benefits for HPC Workloads".

Builds synthetic JSON-lines traces that follow what Khetawat et al., states about four GPU applications
(AmgX-like, LULESH-like, Minisweep-like, SW4lite-like: message sizes, partners per rank, share of time in
MPI, collectives), replays each with `gridcast replay --gpu-mpi hostcopy|gpudirect` on lassen variants
with 1, 2, 4 and 6 ranks (and GPUs) per node, and prints tables (markdown) of communication time and
makespan. Every MPI buffer is on the device (memory: device); compute is GPU kernels (device_seconds)
followed by a device synchronisation.

Platforms (generated into OUT/platforms with `gridcast platform` from platforms/lassen/spec.json):
  lassen      the committed spec: 4 V100 per node, 1 EDR NIC (100 Gb/s), fat tree    (1, 2, 4 ranks/node)
  lassen6     the same with 6 GPUs per node (3 per socket, NVLink all-to-all inside a socket, like
              Summit's AC922): the 6-GPUs-per-node point of Khetawat et al.,                     (6 ranks/node)
  lassen6-bw  lassen6 with the NIC and every network link K times faster, K = ranks per node
              (Observation 5: scale the network bandwidth with GPUs per node)

stdlib only. Usage:
  bench/gpudirect/gpudirect_study.py [--gridcast build/bin/gridcast] [--out DIR] [--np 32 64 128 256]
                                     [--rpn 1 2 4 6] [--iterations 2] [--apps amgx lulesh minisweep sw4lite]
                                     [--traces-only]
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


def face_partners(rank: int, dims: list[int], periodic: bool) -> list[tuple[int, int]]:
    """Face neighbours on a 2D grid as (direction index 0..3, rank): 4 when periodic, 2-4 otherwise
    (corner ranks 2, edge ranks 3, interior ranks 4: Khetawat et al.'s "2-4 other ranks")."""
    c = coords(rank, dims)
    out = []
    for k, (ax, step) in enumerate(((0, 1), (0, -1), (1, 1), (1, -1))):
        n = list(c)
        n[ax] += step
        if not periodic and not 0 <= n[ax] < dims[ax]:
            continue
        out.append((k, rank_of(n, dims)))
    return out


def face_exchange(rank: int, dims: list[int], periodic: bool, sizes: list[int], tag0: int) -> str:
    """One halo exchange with the face neighbours: every message size of `sizes` to and from each
    partner (the same number of messages to each partner, as Khetawat et al., states for all four apps)."""
    out = []
    n = 0
    partners = face_partners(rank, dims, periodic)
    for k, p in partners:  # the neighbour in direction k sends us its message in the opposite direction
        for i, b in enumerate(sizes):
            out.append(line(op="irecv", fn="MPI_Irecv", peer=p, tag=tag0 + 16 * (k ^ 1) + i, bytes=b, request=n,
                            memory="device"))
            n += 1
    for k, p in partners:
        for i, b in enumerate(sizes):
            out.append(line(op="isend", fn="MPI_Isend", peer=p, tag=tag0 + 16 * k + i, bytes=b, request=n,
                            memory="device"))
            n += 1
    out.append(line(op="waitall", fn="MPI_Waitall", requests=list(range(n))))
    return "".join(out)


def lulesh_imbalance(rank: int) -> float:
    """LULESH 2.0's regions: elements are split into regions whose cost differs (the -c/-b options, by
    default up to 20x between the cheapest and the dearest region) and each rank draws its own mix, so the
    compute per rank varies; the ranks that finish early wait in MPI (the per-cycle dt allreduce). A
    deterministic draw per rank, uniform in [1, 2.5]: with it the share of time in MPI lands at Khetawat et al.'s
    28-32% (expected wait (max - mean) / max = 0.75 / 2.5 = 30%)."""
    h = (rank * 2654435761 + 12345) % 2**32  # Knuth's multiplicative hash: deterministic, no RNG state
    return 1.0 + 1.5 * (h / 2**32)


def lulesh(rank: int, np_: int, iterations: int) -> str:
    # Seed 001: each rank exchanges with 2-4 others, the same number of messages with each; 24 B - 7 KB
    # for 44% of the messages, 7-512 KB for 44%, about 1 MB for 11%; messages under 32 KB carry 0.6% of
    # the payload; 28-32% of the time in MPI. Per partner and iteration: 4 small (24 B, 1, 3, 7 KB), 4 mid
    # (128, 256, 384, 512 KB) and one 1 MB message (44/44/11%; under 32 KB: 0.5% of the bytes); the
    # per-cycle dt allreduce (8 B). Compute varies by rank (lulesh_imbalance).
    dims = dims_create(np_, 2)
    sizes = [24, 1 * KB, 3 * KB, 7 * KB, 128 * KB, 256 * KB, 384 * KB, 512 * KB, 1 * MB]
    out = [line(op="init", fn="MPI_Init")]
    for _ in range(iterations):
        out.append(kernel(LULESH_KERNEL_S * lulesh_imbalance(rank)))
        out.append(face_exchange(rank, dims, False, sizes, 100))
        out.append(line(op="allreduce", fn="MPI_Allreduce", bytes=8, memory="device"))
    out.append(line(op="finalize", fn="MPI_Finalize"))
    return "".join(out)


def sw4lite(rank: int, np_: int, iterations: int) -> str:
    # Seed 001: 2-4 partners with the same number of messages; about half the messages ~64 KB, half
    # ~12 MB; 34-43% of the time in MPI. 2D decomposition (as SW4 does), non-periodic: one 64 KB and one
    # 12 MB message to each face neighbour per step.
    dims = dims_create(np_, 2)
    out = [line(op="init", fn="MPI_Init")]
    for _ in range(iterations):
        out.append(kernel(SW4LITE_KERNEL_S))
        out.append(face_exchange(rank, dims, False, [64 * KB, 12 * MB], 100))
    out.append(line(op="finalize", fn="MPI_Finalize"))
    return "".join(out)


def minisweep(rank: int, np_: int, iterations: int) -> str:
    # Seed 001: predominantly 4 MB or 8 MB messages; 76-82% of the time in MPI (KBA wavefront). KBA on a
    # 2D grid of ranks: for each of the 4 sweep directions in x-y (each carrying two z-octants), the z
    # range is cut into MINISWEEP_BLOCKS blocks that flow through the grid as a pipeline: per block a rank
    # receives from its upstream x (4 MB) and y (8 MB) neighbours, computes, sends downstream. Once the
    # pipeline is full all ranks communicate at once, which is what loads the NICs.
    px, py = dims_create(np_, 2)
    x, y = rank // py, rank % py
    out = [line(op="init", fn="MPI_Init")]
    for _ in range(iterations):
        for d, (sx, sy) in enumerate(((1, 1), (-1, 1), (1, -1), (-1, -1))):
            ux, uy = x - sx, y - sy  # upstream
            dx, dy = x + sx, y + sy  # downstream
            for b in range(MINISWEEP_BLOCKS):
                tag = 100 * d + b
                if 0 <= ux < px:
                    out.append(line(op="recv", fn="MPI_Recv", peer=ux * py + y, tag=tag, bytes=4 * MB, memory="device"))
                if 0 <= uy < py:
                    out.append(line(op="recv", fn="MPI_Recv", peer=x * py + uy, tag=tag + 50, bytes=8 * MB,
                                    memory="device"))
                out.append(kernel(MINISWEEP_KERNEL_S))
                if 0 <= dx < px:
                    out.append(line(op="send", fn="MPI_Send", peer=dx * py + y, tag=tag, bytes=4 * MB, memory="device"))
                if 0 <= dy < py:
                    out.append(line(op="send", fn="MPI_Send", peer=x * py + dy, tag=tag + 50, bytes=8 * MB,
                                    memory="device"))
    out.append(line(op="finalize", fn="MPI_Finalize"))
    return "".join(out)


def amgx(rank: int, np_: int, iterations: int) -> str:
    # Seed 001: each rank communicates with 4 others, the same number of messages with each; 71% of the
    # messages 1-100 KB, 17% 100-500 KB, 8% > 500 KB, messages under 32 KB 4% of the payload; collectives
    # dominated by MPI_Allreduce; 5.3-7.2% of the time in MPI. Per partner and iteration, the halos of the
    # multigrid levels: 9 messages of 1-64 KB, 2 of 128-256 KB, one of 1 MB (75/17/8%; under 32 KB: 3.4%
    # of the bytes); 4 dot-product allreduces of 8 B. Periodic 2D grid: exactly 4 partners.
    dims = dims_create(np_, 2)
    sizes = [1 * KB, 2 * KB, 4 * KB, 8 * KB, 16 * KB, 24 * KB, 32 * KB, 48 * KB, 64 * KB, 128 * KB, 256 * KB, 1 * MB]
    out = [line(op="init", fn="MPI_Init")]
    for _ in range(iterations):
        out.append(kernel(AMGX_KERNEL_S))
        out.append(face_exchange(rank, dims, True, sizes, 100))
        for _ in range(4):
            out.append(line(op="allreduce", fn="MPI_Allreduce", bytes=8, memory="device"))
    out.append(line(op="finalize", fn="MPI_Finalize"))
    return "".join(out)


# Compute per iteration (or per KBA block), set from Khetawat et al.'s share of time in MPI (Section IV-c,
# measured on Lassen at 4 ranks per node): the kernel time is the one that gives that share in a
# HostCopy replay at 4 ranks per node, np 64 (the study prints the share it gets, next to the paper's).
LULESH_KERNEL_S = 0.030
SW4LITE_KERNEL_S = 0.023
AMGX_KERNEL_S = 0.034
MINISWEEP_KERNEL_S = 0.0015
MINISWEEP_BLOCKS = 32


APPS = {"amgx": amgx, "lulesh": lulesh, "minisweep": minisweep, "sw4lite": sw4lite}


def write_trace(folder: Path, app: str, np_: int, iterations: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.json").write_text(json.dumps(
        {"format": "gridcast-profile", "format_version": 1, "np": np_, "command": f"synthetic {app}-like (Khetawat et al.)",
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
    ap.add_argument("--iterations", type=int, default=2)
    ap.add_argument("--apps", nargs="+", default=list(APPS), choices=list(APPS))
    ap.add_argument("--no-bw", action="store_true", help="skip the Observation 5 runs (scaled network)")
    ap.add_argument("--traces-only", action="store_true",
                    help="write the traces (OUT/traces/<app>-<np>/, for --apps, --np and --iterations) and exit: "
                         "no platform, no replay (examples/study-gpudirect replays them with `gridcast study`)")
    a = ap.parse_args()
    out = Path(a.out)
    if a.traces_only:
        for app in a.apps:
            for np_ in a.np:
                trace = out / "traces" / f"{app}-{np_}"
                if not (trace / "run.json").exists():
                    write_trace(trace, app, np_, a.iterations)
                print(trace, flush=True)
        return 0
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
    if 4 in a.rpn:
        print("\n## Share of time in MPI, HostCopy, 4 ranks per node (Khetawat et al., Section IV-c: AmgX 5.3-7.2%, "
              "LULESH 28.1-31.9%, Minisweep 76.0-81.7%, SW4lite 34.3-42.5%)\n")
        print("| app | " + " | ".join(f"np {n}" for n in a.np) + " |")
        print("|---|" + "---|" * len(a.np))
        for app in a.apps:
            cells = [f"{100 * get(app, n, 4, 'lassen', 'hostcopy', 'comm_s') / get(app, n, 4, 'lassen', 'hostcopy', 'makespan_s'):.1f}%"
                     for n in a.np]
            print(f"| {app} | " + " | ".join(cells) + " |")
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
    def per_node_tables(title, platform_of):
        """GPUDirect communication time by ranks (GPUs) per node, each with its ratio to the first."""
        print(title)
        for app in a.apps:
            print(f"\n{app}:\n")
            print("| np | " + " | ".join(f"{k}/node" for k in a.rpn) + " |")
            print("|---|" + "---|" * len(a.rpn))
            for n in a.np:
                one = get(app, n, a.rpn[0], base(a.rpn[0]), "gpudirect", "comm_s")
                values = [get(app, n, k, platform_of(k), "gpudirect", "comm_s") for k in a.rpn]
                print(f"| {n} | " + " | ".join(f"{v * 1e3:.2f} (x{v / one:.2f})" for v in values) + " |")

    per_node_tables("\n## Observation 4: communication time (ms, GPUDirect) by ranks (GPUs) per node, and its ratio "
                    "to 1/node\n", base)
    if not a.no_bw:
        per_node_tables("\n## Observation 5: network bandwidth scaled with GPUs per node (GPUDirect comm ms, x vs "
                        "1/node)\n", lambda k: base(k) if k == 1 else f"lassen6-bw{k}")
    walls = sorted(r["wall_s"] for r in results)
    print(f"\n{len(results)} replays, wall time per replay: median {walls[len(walls) // 2]:.2f} s, max {walls[-1]:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
