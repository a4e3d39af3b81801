#!/usr/bin/env python3
"""Replay speed of gridcast against smpirun -replay and a bare S4U program, on the same traces.

    cmake --build build && python3 bench/replay_speed.py            # full run (a few minutes)
    python3 bench/replay_speed.py --quick                           # smaller, 1 rep, no 4096 ranks

Cases (traces from scripts/gen_tit.py, 8 KiB messages, 1 Mflop per iteration, one rank per host of
a flat cluster from scripts/gen_cluster.py): ring at 16, 256 and 4096 ranks, halo3d with an
allreduce per iteration at 256 ranks. Each tool replays each case --reps times, interleaved (the
order rotates every repetition); the table shows medians of

  wall      elapsed seconds of the whole command (start-up and trace reading included)
  cpu       user + sys seconds of the child and its descendants (os.wait4)
  RSS       peak resident set of the child or its largest descendant, MiB (ru_maxrss)
  events/s  events / wall and events / cpu, where events = trace actions replayed = the non-blank
            lines of the per-rank files (init and finalize included), the same count for all tools

and the ratios gridcast/smpirun and gridcast/s4u measured in this run, next to the targets:
events/s >= 2x smpirun's, >= 0.8x the bare S4U program's, RSS <= smpirun's. With --baseline GRIDCAST
(an earlier commit's binary), that binary replays each case too, interleaved with the others, and the
ratio gridcast/baseline says whether the replay got slower (target: events/s >= 0.95x, RSS <= 1.05x:
the noise of medians on a shared machine). With --waits, gridcast replays each case with `--analysis
waits` too ("waits"), and the ratio waits/gridcast says what classifying every wait costs (target:
at most 1.5x slower, events/s >= 0.67x), and with `--analysis critical-path` ("path", every call logged).

All tools simulate the same model: smpirun's own --cfg network/model:SMPI and surf/precision:1e-9
are given to gridcast and to the S4U program too. smpirun runs with -no-privatize (its fast mode:
a replay has no application globals; privatization copies the binary once per rank);
--smpi-privatize measures its default mode instead. The S4U program (bench/s4u_ring.cpp) does the
same computations and messages but no MPI semantics: for MPI_Allreduce, the messages of MPICH's
recursive doubling, which gridcast picks for these short buffers under `--cfg gridcast/coll-selector:mpich`
(given here: its default on an SMPI trace is SMPI's selection), so that both simulate the same
transfers (on these traces its makespan equals gridcast's; it is close to, not equal to, SMPI's).
"""
from __future__ import annotations

import argparse
import json
import os
import platform as host_platform
import statistics
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import replay_tools as rt

TOOLS = ("gridcast", "smpirun", "s4u")
BASELINE = "baseline"  # --baseline: another gridcast binary (an earlier commit's), run the same way
WAITS = "waits"  # --waits: gridcast with --analysis waits
PATH = "path"  # --waits: gridcast with --analysis critical-path too
TARGET_WAITS = 1 / 1.5
TARGET_VS_SMPI = 2.0
TARGET_VS_S4U = 0.8


@dataclass(frozen=True)
class Case:
    name: str
    pattern: str
    np: int
    iters: int
    large: bool = False  # skipped by --quick


CASES = (
    Case("ring-16", "ring", 16, 10000),
    Case("ring-256", "ring", 256, 500),
    Case("ring-4096", "ring", 4096, 50, large=True),
    Case("halo3d-256", "halo3d", 256, 100),
)
MSG_BYTES = 8192
FLOPS = 1e6


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def host_description() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        sg = subprocess.run([rt.SMPIRUN, "-version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        sg = "smpirun not found"
    return f"{host_platform.node()}: {cpu}, {os.cpu_count()} CPUs; {sg}"


def summarize(outcomes: list[rt.Outcome], events: int) -> dict:
    ok = [o for o in outcomes if o.ok and o.measure]
    if not ok:
        errors = sorted({o.error for o in outcomes})
        return {"ok": False, "error": "; ".join(errors) or "no run"}
    wall = median([o.measure.wall_s for o in ok])
    cpu = median([o.measure.cpu_s for o in ok])
    return {
        "ok": True,
        "runs": len(ok),
        "failed_runs": len(outcomes) - len(ok),
        "wall_s": wall,
        "cpu_s": cpu,
        "rss_mib": median([o.measure.maxrss_mib for o in ok]),
        "events_per_s_wall": events / wall if wall else None,
        "events_per_s_cpu": events / cpu if cpu else None,
        "makespan_s": median([o.makespan_s for o in ok if o.makespan_s is not None]),
    }


def verdict(ratio: float | None, target: float, higher_is_better: bool = True) -> str:
    if ratio is None:
        return "n/a"
    good = ratio >= target if higher_is_better else ratio <= target
    return "ok" if good else "MISSED"


def print_case(case_name: str, sc: rt.Scenario, summary: dict[str, dict], tools: tuple[str, ...]) -> None:
    print(f"\n{case_name}: {sc.note}, {sc.events} events")
    print(f"  {'tool':<9} {'wall s':>8} {'cpu s':>8} {'RSS MiB':>8} {'kev/s wall':>11} {'kev/s cpu':>10} "
          f"{'makespan s':>12}")
    for tool in tools:
        s = summary[tool]
        if not s["ok"]:
            print(f"  {tool:<9} {s['error']}")
            continue
        print(f"  {tool:<9} {s['wall_s']:8.3f} {s['cpu_s']:8.3f} {s['rss_mib']:8.1f} "
              f"{s['events_per_s_wall'] / 1e3:11.1f} {s['events_per_s_cpu'] / 1e3:10.1f} "
              f"{fmt(s['makespan_s'], '12.6g')}")
    g = summary.get("gridcast", {"ok": False})
    bl = summary.get(BASELINE)
    if bl is not None and g["ok"] and bl["ok"]:
        wall = g["events_per_s_wall"] / bl["events_per_s_wall"]
        cpu = g["events_per_s_cpu"] / bl["events_per_s_cpu"]
        rss = g["rss_mib"] / bl["rss_mib"]
        print(f"  gridcast/baseline events/s wall x{wall:.2f}, cpu x{cpu:.2f} (target >= 0.95: "
              f"{verdict(min(wall, cpu), 0.95)}); RSS x{rss:.2f} (target <= 1.05: "
              f"{verdict(rss, 1.05, higher_is_better=False)}); makespan "
              f"{'equal' if g['makespan_s'] == bl['makespan_s'] else 'DIFFERS'}")
    for tool in (WAITS, PATH):
        w = summary.get(tool)
        if w is None or not g["ok"] or not w["ok"]:
            continue
        wall = w["events_per_s_wall"] / g["events_per_s_wall"]
        cpu = w["events_per_s_cpu"] / g["events_per_s_cpu"]
        print(f"  {tool + '/gridcast':<17} events/s wall x{wall:.2f}, cpu x{cpu:.2f} (target >= {TARGET_WAITS:.2f}: "
              f"{verdict(min(wall, cpu), TARGET_WAITS)}); RSS x{w['rss_mib'] / g['rss_mib']:.2f}; makespan "
              f"{'equal' if w['makespan_s'] == g['makespan_s'] else 'DIFFERS'}")
    for ref, target in (("smpirun", TARGET_VS_SMPI), ("s4u", TARGET_VS_S4U)):
        r = summary.get(ref, {"ok": False})
        if not g["ok"] or not r["ok"]:
            why = "gridcast: not built" if g.get("error") == "not built" else "missing runs"
            print(f"  gridcast/{ref:<7} {why}")
            continue
        wall = g["events_per_s_wall"] / r["events_per_s_wall"]
        cpu = g["events_per_s_cpu"] / r["events_per_s_cpu"]
        line = (f"  gridcast/{ref:<7} events/s wall x{wall:.2f}, cpu x{cpu:.2f} "
                f"(target >= {target:g}: {verdict(min(wall, cpu), target)})")
        if ref == "smpirun":
            rss = g["rss_mib"] / r["rss_mib"]
            line += f"; RSS x{rss:.2f} (target <= 1: {verdict(rss, 1.0, higher_is_better=False)})"
        print(line)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gridcast", type=Path, default=rt.DEFAULT_GRIDCAST, help="gridcast binary")
    p.add_argument("--s4u", type=Path, default=rt.DEFAULT_S4U, help="gridcast_bench_s4u_ring binary")
    p.add_argument("--baseline", type=Path, default=None,
                   help="another gridcast binary (an earlier commit's) to replay every case too, for gridcast/baseline")
    p.add_argument("--waits", action="store_true",
                   help="also replay every case with --analysis waits and with --analysis critical-path")
    p.add_argument("--reps", type=int, default=None, help="repetitions per tool and case (default 3, --quick 1)")
    p.add_argument("--quick", action="store_true", help="1 rep, iterations / 5, no 4096-rank case")
    p.add_argument("--scale", type=float, default=None, help="multiply every case's iterations (default 1)")
    p.add_argument("--cases", default=None, help="comma-separated case names (default all)")
    p.add_argument("--tools", default=",".join(TOOLS), help="comma-separated subset of gridcast,smpirun,s4u")
    p.add_argument("--smpi-privatize", action="store_true", help="run smpirun in its default privatized mode")
    p.add_argument("--gridcast-arg", action="append", default=[],
                   help="extra argument for gridcast replay (repeatable)")
    p.add_argument("--timeout", type=float, default=600.0, help="per-run limit in seconds (default 600)")
    p.add_argument("--work", type=Path, default=rt.REPO / "build" / "bench-work",
                   help="traces, platforms and outputs (default build/bench-work)")
    p.add_argument("--json", type=Path, default=None, help="write all measurements here (default WORK/replay_speed.json)")
    p.add_argument("--check", action="store_true", help="exit 1 when gridcast misses a target")
    a = p.parse_args(argv)

    reps = a.reps if a.reps is not None else (1 if a.quick else 3)
    scale = a.scale if a.scale is not None else (0.2 if a.quick else 1.0)
    tools = tuple(t for t in a.tools.split(",") if t)
    if not set(tools) <= set(TOOLS):
        p.error(f"--tools: choose among {', '.join(TOOLS)}")
    if a.baseline is not None:
        if not rt.is_executable(a.baseline):
            p.error(f"--baseline: not an executable: {a.baseline}")
        tools += (BASELINE,)
    if a.waits:
        tools += (WAITS, PATH)
    wanted = set(a.cases.split(",")) if a.cases else None
    cases = [c for c in CASES if (wanted is None or c.name in wanted) and not (a.quick and c.large and wanted is None)]
    if wanted and wanted - {c.name for c in CASES}:
        p.error(f"unknown case(s) {', '.join(sorted(wanted - {c.name for c in CASES}))}")
    a.work.mkdir(parents=True, exist_ok=True)

    print(f"replay_speed: {reps} rep(s), interleaved, medians; host {host_description()}")
    print(f"smpirun {'default (privatized)' if a.smpi_privatize else '-no-privatize'}; all tools with "
          f"{' '.join('--cfg ' + c for c in rt.SMPIRUN_IMPLICIT_CFG)}")
    if "gridcast" in tools and not rt.is_executable(a.gridcast):
        print(f"gridcast: not built ({a.gridcast})")
    if "s4u" in tools and not rt.is_executable(a.s4u):
        print(f"s4u: not built ({a.s4u}); build target gridcast_bench_s4u_ring")

    results = {"reps": reps, "scale": scale, "host": host_description(), "cases": {},
               "baseline": str(a.baseline) if a.baseline else None}
    missed = False
    for case in cases:
        iters = max(1, round(case.iters * scale))
        sc = rt.generated_scenario(a.work, case.name, case.pattern, case.np, iters, MSG_BYTES, FLOPS)
        outcomes: dict[str, list[rt.Outcome]] = {t: [] for t in tools}
        for rep in range(reps):
            order = tools[rep % len(tools):] + tools[:rep % len(tools)]
            for tool in order:
                if tool in ("gridcast", BASELINE, WAITS, PATH):
                    # MPICH's selector: the S4U program sends recursive doubling's messages (see above); the
                    # default (auto) would take SMPI's selection on these SMPI traces.
                    binary = a.baseline if tool == BASELINE else a.gridcast
                    analysis = {WAITS: ("--analysis", "waits"), PATH: ("--analysis", "critical-path")}
                    extra = tuple(a.gridcast_arg) + analysis.get(tool, ())
                    o = rt.run_gridcast(binary, sc, a.work / "out" / (case.name + ("" if tool == "gridcast" else "-" + tool)),
                                        cfg=rt.SMPIRUN_IMPLICIT_CFG + ("gridcast/coll-selector:mpich",),
                                        extra_args=extra, timeout=a.timeout)
                elif tool == "smpirun":
                    o = rt.run_smpirun(sc, a.work / "scratch", privatize=a.smpi_privatize, timeout=a.timeout)
                else:
                    o = rt.run_s4u(a.s4u, sc, timeout=a.timeout)
                outcomes[tool].append(o)
                if o.error == "not built":
                    continue
                status = f"{o.measure.wall_s:.2f} s" if o.ok else f"FAILED: {o.error}"
                print(f"  [{case.name} rep {rep + 1}/{reps}] {tool}: {status}", file=sys.stderr, flush=True)
        summary = {t: summarize(outcomes[t], sc.events) for t in tools}
        print_case(case.name, sc, summary, tools)
        g, s, b = summary.get("gridcast"), summary.get("smpirun"), summary.get("s4u")
        if g and g["ok"]:
            if s and s["ok"] and (g["events_per_s_wall"] < TARGET_VS_SMPI * s["events_per_s_wall"]
                                  or g["rss_mib"] > s["rss_mib"]):
                missed = True
            if b and b["ok"] and g["events_per_s_wall"] < TARGET_VS_S4U * b["events_per_s_wall"]:
                missed = True
        results["cases"][case.name] = {
            "scenario": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(sc).items()},
            "summary": summary,
            "runs": {t: [{"ok": o.ok, "error": o.error, "makespan_s": o.makespan_s,
                          **({"wall_s": o.measure.wall_s, "cpu_s": o.measure.cpu_s,
                              "rss_mib": o.measure.maxrss_mib} if o.measure else {})}
                         for o in outcomes[t]] for t in tools},
        }
    json_path = a.json or a.work / "replay_speed.json"
    json_path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nmeasurements written to {json_path}")
    return 1 if (a.check and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
