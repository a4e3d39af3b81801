#!/usr/bin/env python3
"""Does a platform made from a calibration reproduce what was measured on the machine?

    python3 bench/calibration_validation.py                 # platforms/this-machine
    python3 bench/calibration_validation.py --calibration C.json --spec S.json

The calibration (written by `gridcast calibrate`) holds the MPI ping-pong curve and a few collectives
measured with real Open MPI between two ranks of this machine. This script builds the platform XML from
the spec and the calibration with

    gridcast platform SPEC --calibration CALIBRATION -o platform.xml

then emulates the same programs with `gridcast replay` on it (both ranks on the one host,
--ranks-per-host 2) and prints, for every size, measured median, emulated time and the relative error
(emulated - measured) / measured:

- ping-pong: one round trip of BYTES each way; emulated one-way time = makespan / 2. Target: within 10%
  at every size from 1 B to 64 MiB.
- allreduce / alltoall / bcast at np 2, emulating the loop that measured them (calibrate/mpi/mpi_bench.cpp,
  named by the calibration's network.collectives_measured.method). Target: within 15%.
  - loop-mean-slowest-rank (gridcast-mpi-bench now, IMB's loop): barrier, then K back-to-back calls (a
    bcast's root alternates 0, 1, 0, ...); from the emulated timeline, each rank's (end of its last call
    - end of its barrier) / K, the largest over the ranks. The bench's buffer policy (each call sends
    what the last one produced on that rank) has no emulated cost: the emulator moves bytes, not data.
  - median-call-slowest-rank (gridcast-mpi-bench for a while): K x (barrier, [buffer write], barrier, op); from
    the emulated timeline, each rank's median duration of the op's slices, the largest over the ranks.
    The buffer write is not emulated: both ranks do it between two barriers, outside the timed call.
  - barrier-loop-difference (calibrations without collectives_measured): what one call adds to a loop
    of barriers, (makespan of barrier + K x (barrier, op)) - (makespan of barrier + K x barrier), / K.
  The allreduce's reduction work is written, as SMPI's tracer does, as the whole buffer's elements
  (the emulator executes a reducing collective's `flops` once, after its communication). A sum of
  doubles is memory bound, not a dgemm-class flop: `gridcast calibrate` measures the seconds to sum a
  buffer of each size (compute.reduction: a[i] += b[i], at cache speed while the buffers fit a cache,
  memory speed beyond), interpolated here in log(size); the trace carries work in flops at the
  recording core speed (compute.core_speed_flops, the platform's core speed), so the reduction is
  written as those seconds times that speed. A calibration without compute.reduction falls back to
  24 bytes an element at the STREAM triad rate (out-of-cache speed, said in the output).

Exit status: 0 when every target is met, 1 when one is missed, 2 when a run fails, 77 when gridcast is
not built.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import results_json  # noqa: E402  (the --json shape of bench/results/)
EXIT_SKIPPED = 77
K_CALLS = 10  # collective calls per emulated loop (the emulation is deterministic: any K gives the same)


def human(b: int) -> str:
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= size and b % size == 0:
            return f"{b // size} {unit}"
    return f"{b} B"


def write_profile(directory: Path, ranks: list[list[dict]], speed_flops: float) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    run = {"format": "gridcast-profile", "format_version": 1, "np": len(ranks), "nw": 1,
           "command": "calibration_validation", "host": {"name": "this-machine", "speed_flops": speed_flops},
           "date": "", "encoding": "jsonl", "complete": True, "origin": "bench/calibration_validation.py"}
    (directory / "run.json").write_text(json.dumps(run) + "\n")
    for r, records in enumerate(ranks):
        (directory / f"rank-{r:05d}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in records))


class Emulator:
    def __init__(self, gridcast: Path, platform: Path, work: Path, speed_flops: float, cfg: list[str]):
        self.gridcast, self.platform, self.work, self.speed = gridcast, platform, work, speed_flops
        self.cfg = [x for c in cfg for x in ("--cfg", c)]
        self.count = 0
        self.algorithms: dict = {}  # op -> algorithm of the last run

    def run(self, ranks: list[list[dict]], timeline: bool = False) -> tuple[dict, list[dict]]:
        """prediction.json of a replay of `ranks`, and the timeline's call slices when asked."""
        self.count += 1
        trace = self.work / f"trace-{self.count}"
        out = self.work / f"out-{self.count}"
        write_profile(trace, ranks, self.speed)
        cmd = [str(self.gridcast), "replay", str(trace), "--platform", str(self.platform), "--ranks-per-host", "2",
               "--out", str(out)] + ([] if timeline else ["--no-timeline"]) + self.cfg
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
        pred = json.loads((out / "prediction.json").read_text())
        if not pred["calibration"]["factors_used"]:
            raise RuntimeError(f"{self.platform}: the emulator installed no calibration factors")
        self.algorithms = {op: ",".join(sorted(a)) for op, a in pred["collectives"].items()}
        slices = []
        if timeline:
            events = json.loads((out / "timeline.json").read_text())
            events = events["traceEvents"] if isinstance(events, dict) else events
            slices = [e for e in events if e.get("ph") == "X"]
        shutil.rmtree(trace)
        shutil.rmtree(out)
        return pred, slices

    def makespan(self, ranks: list[list[dict]]) -> float:
        return float(self.run(ranks)[0]["makespan_s"])


def pingpong_ranks(nbytes: int) -> list[list[dict]]:
    def send(peer): return {"op": "send", "fn": "MPI_Send", "peer": peer, "tag": 7, "bytes": nbytes}
    def recv(peer): return {"op": "recv", "fn": "MPI_Recv", "peer": peer, "tag": 7, "bytes": nbytes}
    return [[send(1), recv(1)], [recv(0), send(0)]]


def reduction_s(cal: dict, nbytes: int) -> float:
    """Seconds to sum a buffer of `nbytes` doubles into another, from the calibration."""
    points = cal["compute"].get("reduction") or []
    if not points:
        return 24.0 * (nbytes / 8) / float(cal["compute"]["stream_triad_Bps"]["median"])
    per_byte = [(math.log2(p["bytes"]), p["time_s"]["median"] / p["bytes"]) for p in points]
    x = math.log2(max(nbytes, 1))
    if x <= per_byte[0][0]:
        return nbytes * per_byte[0][1]
    for (x0, y0), (x1, y1) in zip(per_byte, per_byte[1:]):
        if x <= x1:
            return nbytes * (y0 + (y1 - y0) * (x - x0) / (x1 - x0))
    return nbytes * per_byte[-1][1]


def collective_record(op: str, nbytes: int, np: int, reduce_flops: float, root: int = 0) -> dict:
    if op == "allreduce":
        return {"op": "allreduce", "fn": "MPI_Allreduce", "bytes": nbytes, "flops": reduce_flops}
    if op == "alltoall":
        block = nbytes // np  # the calibration's bytes are one rank's whole send buffer
        return {"op": "alltoall", "fn": "MPI_Alltoall", "bytes": block, "recv_bytes": block}
    if op == "bcast":
        return {"op": "bcast", "fn": "MPI_Bcast", "bytes": nbytes, "root": root}
    raise ValueError(f"no emulation for collective '{op}'")


LOOP_DIFFERENCE = "barrier-loop-difference"            # calibrations without network.collectives_measured
MEDIAN_CALL_SLOWEST_RANK = "median-call-slowest-rank"  # gridcast-mpi-bench for a while (none committed)
LOOP_MEAN_SLOWEST_RANK = "loop-mean-slowest-rank"      # gridcast-mpi-bench now (IMB's loop)


def collective_time(emu: Emulator, op: str, nbytes: int, np: int, reduce_flops: float,
                    method: str) -> tuple[float, str]:
    """The figure `method` measured on the machine, from an emulation of the same loop."""
    barrier = {"op": "barrier", "fn": "MPI_Barrier"}
    call = collective_record(op, nbytes, np, reduce_flops)
    if method == LOOP_MEAN_SLOWEST_RANK:
        # barrier, then K back-to-back calls (a bcast's root alternates, as in the bench); each rank's
        # (end of its last call - end of its barrier) / K from the emulated timeline, the slowest rank's
        calls = [collective_record(op, nbytes, np, reduce_flops, root=i % np) for i in range(K_CALLS)]
        _, slices = emu.run([[barrier] + calls for _ in range(np)], timeline=True)
        spans = {}
        for e in slices:
            if e["name"] in (barrier["fn"], call["fn"]):
                spans.setdefault(e["tid"], []).append((e["name"], float(e["ts"]) + float(e["dur"])))
        if sorted(spans) != list(range(np)) or any(
                [n for n, _ in v] != [barrier["fn"]] + [call["fn"]] * K_CALLS for v in spans.values()):
            raise RuntimeError(f"timeline of the emulated {op} loop: expected a barrier and {K_CALLS} "
                               f"{call['fn']} slices on each of {np} ranks")
        per_rank = [(v[-1][1] - v[0][1]) * 1e-6 / K_CALLS for v in spans.values()]
        return max(per_rank), emu.algorithms.get(op, "?")
    if method == MEDIAN_CALL_SLOWEST_RANK:
        # fence, (buffer write: no emulated cost, both ranks alike, fenced off), barrier, timed call;
        # each rank's median call duration from the timeline, the slowest rank's
        loop = [[barrier, barrier, call] * K_CALLS for _ in range(np)]
        _, slices = emu.run(loop, timeline=True)
        per_rank = {}
        for e in slices:
            if e["name"] == call["fn"]:
                per_rank.setdefault(e["tid"], []).append(float(e["dur"]) * 1e-6)
        if sorted(per_rank) != list(range(np)) or any(len(v) != K_CALLS for v in per_rank.values()):
            raise RuntimeError(f"timeline of the emulated {op} loop: expected {K_CALLS} {call['fn']} slices "
                               f"on each of {np} ranks")
        return max(statistics.median(v) for v in per_rank.values()), emu.algorithms.get(op, "?")
    if method != LOOP_DIFFERENCE:
        raise RuntimeError(f"network.collectives_measured.method '{method}': no emulation for it")
    with_op = [[barrier] + [barrier, call] * K_CALLS for _ in range(np)]
    barriers = [[barrier] + [barrier] * K_CALLS for _ in range(np)]
    t_op = emu.makespan(with_op)
    algorithm = emu.algorithms.get(op, "?")
    return (t_op - emu.makespan(barriers)) / K_CALLS, algorithm


def row(name: str, measured: float, emulated: float) -> tuple[str, float]:
    err = (emulated - measured) / measured
    print(f"  {name:>10}  {measured * 1e6:14.3f}  {emulated * 1e6:14.3f}  {err * 100:+8.2f}%")
    return name, err


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gridcast", type=Path, default=ROOT / "build" / "bin" / "gridcast")
    ap.add_argument("--spec", type=Path, default=ROOT / "platforms" / "this-machine" / "spec.json")
    ap.add_argument("--calibration", type=Path, default=ROOT / "platforms" / "this-machine" / "calibration.json")
    ap.add_argument("--work", type=Path, default=None, help="keep the generated files here")
    ap.add_argument("--platform-xml", type=Path, default=None,
                    help="use this platform instead of generating one (it must carry the calibration's factors)")
    ap.add_argument("--cfg", action="append", default=[], metavar="NAME:VALUE",
                    help="passed to every gridcast replay (e.g. gridcast/coll/allreduce:recursive_doubling)")
    ap.add_argument("--selection", default="openmpi-4.1", choices=["openmpi-4.1", "mpich"],
                    help="gridcast/coll-selector of the replays: the collectives were measured with Open MPI, "
                         "so by default the emulator picks Open MPI 4.1's algorithms (docs/reference/collectives.md)")
    ap.add_argument("--p2p-target", type=float, default=0.10)
    ap.add_argument("--coll-target", type=float, default=0.15)
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here (bench/results/ shape)")
    args = ap.parse_args()

    if not args.gridcast.exists():
        print(f"calibration_validation: {args.gridcast} not built", file=sys.stderr)
        return EXIT_SKIPPED
    cal = json.loads(args.calibration.read_text())
    if "network" not in cal:
        print(f"calibration_validation: {args.calibration} has no MPI measurements", file=sys.stderr)
        return 2
    net = cal["network"]
    work = args.work or Path(tempfile.mkdtemp(prefix="gridcast-calval-"))
    work.mkdir(parents=True, exist_ok=True)
    platform = work / "platform.xml"

    if args.platform_xml is not None:
        shutil.copyfile(args.platform_xml, platform)
        print(f"platform: {args.platform_xml} (given)")
    else:
        cmd = [str(args.gridcast), "platform", str(args.spec), "--calibration", str(args.calibration), "-o",
               str(platform)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            print(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}{p.stderr}", file=sys.stderr)
            return 2
        print(f"platform: {' '.join(cmd[1:])}")

    host = cal["host"]
    print(f"calibration: {args.calibration} ({host['name']}, {host['date']}, load {host['load_average']:.2f}); "
          f"launcher: {net['launcher']}")
    print(f"model: latency {net['latency_s'] * 1e6:.3f} us, bandwidth {net['bandwidth_Bps'] / 1e9:.2f} GB/s, "
          f"eager below {net['eager_threshold_bytes']} B, {len(net['lat_factor'])} factor segments\n")

    speed = float(cal["compute"]["core_speed_flops"])
    if cal["compute"].get("reduction"):
        print("reduction: the measured sum times of compute.reduction ("
              + ", ".join(f"{human(p['bytes'])} {p['bytes'] / p['time_s']['median'] / 1e9:.1f} GB/s"
                          for p in cal["compute"]["reduction"]) + ")")
    else:
        print(f"reduction: no compute.reduction in the calibration: 24 B an element at the triad rate "
              f"{cal['compute']['stream_triad_Bps']['median'] / 1e9:.2f} GB/s")
    if net.get("copy_overhead"):
        co = net["copy_overhead"]
        paid = [p["time_s"] for p in co if p["time_s"] > 0]
        tail = f", 0 from {co[-1]['bytes']} B" if co[-1]["time_s"] == 0 else ""
        print(f"copy overhead of shared-memory messages (each rank, per message; version 2): {len(co)} points, "
              f"{min(paid) * 1e6:.3f} to {max(paid) * 1e6:.3f} us{tail}")
    else:
        print("no copy overhead in the calibration (version 1): messages cost their network time only")
    comp = cal["compute"]
    if comp.get("memcpy"):
        print("local copies in collectives: the measured memcpy curve (compute.memcpy, one core: "
              + ", ".join(f"{human(p['bytes'])} {p['bytes'] / p['time_s']['median'] / 1e9:.0f} GB/s"
                          for p in comp["memcpy"] if p["bytes"] in (1 << 15, 1 << 20, 8 << 20, 64 << 20)) + ")")
    elif comp.get("reduction"):
        print("local copies in collectives: 2/3 of the reduction curve (no compute.memcpy in the calibration)")
    # The cold-copy rule (docs/reference/collectives.md, "Cold copies"): the node's last-level cache on the CPU host.
    llc = re.search(r'<prop id="gridcast:llc-bytes" value="([^"]+)"/>', platform.read_text())
    if llc:
        print(f"cold copies: gridcast:llc-bytes {float(llc.group(1)) / 2**20:.2f} MiB; a collective whose "
              "buffers on the node exceed it copies at the largest memcpy's per-byte rate")
    else:
        print("cold copies: no gridcast:llc-bytes on the platform: every copy at its curve point")
    if net.get("shared_bandwidth_Bps"):
        print(f"shared-memory capacity of concurrent transfers: {net['shared_bandwidth_Bps'] / 1e9:.2f} GB/s "
              f"(fitted from the transfer-dominated sizes of {len(net.get('exchange', []))} exchange sizes)")
    else:
        print("no shared-memory capacity in the calibration: the loopback is one FATPIPE link")
    emu = Emulator(args.gridcast, platform, work, speed, [f"gridcast/coll-selector:{args.selection}"] + args.cfg)
    print(f"replay settings: gridcast/coll-selector:{args.selection} {' '.join(args.cfg)}\n")
    ok = True
    try:
        print("ping-pong, one-way time (us)")
        print(f"  {'size':>10}  {'measured':>14}  {'emulated':>14}  {'error':>9}")
        p2p_errors = []
        json_rows: list[dict] = []
        for point in net["pingpong"]:
            measured = point["one_way_s"]["median"]
            emulated = emu.makespan(pingpong_ranks(point["bytes"])) / 2
            p2p_errors.append(row(human(point["bytes"]), measured, emulated))
            json_rows.append({"kind": "pingpong", "bytes": point["bytes"], "measured_s": measured, "emulated_s": emulated,
                              "rel_error": p2p_errors[-1][1]})
        worst = max(p2p_errors, key=lambda e: abs(e[1]))
        p2p_ok = abs(worst[1]) <= args.p2p_target
        print(f"  worst: {worst[0]} at {worst[1] * 100:+.2f}% (target {args.p2p_target * 100:.0f}%): "
              f"{'PASS' if p2p_ok else 'FAIL'}\n")

        measured_how = net.get("collectives_measured") or {"method": LOOP_DIFFERENCE, "date": host["date"]}
        method = measured_how["method"]
        what = {LOOP_MEAN_SLOWEST_RANK: "each rank's mean call over a loop of back-to-back calls, the slowest rank's",
                MEDIAN_CALL_SLOWEST_RANK: "each rank's median call between barriers, the slowest rank's"}.get(
                    method, "time a call adds to a loop of barriers")
        print(f"collectives at np 2, {what} (method {method}, measured {measured_how['date']}; the emulation "
              "runs the same loop) (us)")
        print(f"  {'op':>10} {'size':>9}  {'measured':>14}  {'emulated':>14}  {'error':>9}  gridcast algorithm")
        coll_errors = []
        for c in net["collectives"]:
            # the measured time to sum the buffer, as flops at the core speed (see the docstring)
            reduce_flops = reduction_s(cal, c["bytes"]) * speed if c["op"] == "allreduce" else 0.0
            measured = c["time_s"]["median"]
            emulated, algorithm = collective_time(emu, c["op"], c["bytes"], c["np"], reduce_flops, method)
            err = (emulated - measured) / measured if measured > 0 else float("inf")
            print(f"  {c['op']:>10} {human(c['bytes']):>9}  {measured * 1e6:14.3f}  {emulated * 1e6:14.3f}  "
                  f"{err * 100:+8.2f}%  {algorithm}")
            coll_errors.append((f"{c['op']} {human(c['bytes'])}", err))
            json_rows.append({"kind": "collective", "op": c["op"], "np": c["np"], "bytes": c["bytes"], "measured_s": measured,
                              "emulated_s": emulated, "rel_error": err, "algorithm": algorithm})
        if coll_errors:
            worst = max(coll_errors, key=lambda e: abs(e[1]))
            coll_ok = abs(worst[1]) <= args.coll_target
            print(f"  worst: {worst[0]} at {worst[1] * 100:+.2f}% (target {args.coll_target * 100:.0f}%): "
                  f"{'PASS' if coll_ok else 'FAIL'}")
            within = sum(1 for _, e in coll_errors if abs(e) <= args.coll_target)
            print(f"  {within}/{len(coll_errors)} collective timings within target")
        else:
            coll_ok = True
        ok = p2p_ok and coll_ok
        if args.json:
            results_json.write(args.json, "calibration_validation", json_rows, {
                "calibration": str(args.calibration.resolve().relative_to(ROOT)) if args.calibration.resolve().is_relative_to(ROOT) else str(args.calibration),
                "pingpong_points": len(p2p_errors), "pingpong_max_abs_rel_error": max(abs(e) for _, e in p2p_errors),
                "pingpong_target": args.p2p_target,
                "collectives": len(coll_errors),
                "collectives_within_target": sum(1 for _, e in coll_errors if abs(e) <= args.coll_target),
                "collectives_target": args.coll_target, "selection": args.selection})
    except RuntimeError as e:
        print(f"calibration_validation: {e}", file=sys.stderr)
        return 2
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
