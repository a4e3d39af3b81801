#!/usr/bin/env python3
"""Does gridcast, told to use SMPI's network model, predict what `smpirun -replay` predicts?

    python3 bench/smpi_agreement.py            # all 14 cases (a few seconds)
    python3 bench/smpi_agreement.py --quick    # a subset (9 cases, about two seconds)

For every case, the same trace, platform and hostfile go to
    gridcast replay TRACE --platform P --hostfile F --cfg network/model:SMPI --cfg surf/precision:1e-9
                          --cfg gridcast/coll-selector:smpi
    smpirun -np N -platform P -hostfile F -replay TRACE --cfg=smpi/display-timing:yes
(smpirun sets those two --cfg itself; gridcast/coll-selector:smpi makes gridcast choose the collective
algorithms of SMPI's default selector, --coll-selector mpich keeps gridcast's own) and the script prints
both makespans and their relative difference (gridcast - smpirun) / smpirun. A case fails when the
difference exceeds --tolerance (1%), except a case with collective actions under --coll-selector mpich,
which is only reported (two libraries' algorithms differ by design).

Cases: synthetic traces from scripts/gen_tit.py (ring with eager and rendezvous messages, ring with
blocking even/odd send/recv, 3-D halos with extents of 2 and without allreduce, wildcard receives,
two ranks per host, every collective action) on scripts/gen_cluster.py clusters, plus the recorded traces of examples/.
Wildcard receives are fed to gridcast as SMPI's tracer writes them (-333) and to smpirun as -555,
which is all its replay can match (see bench/replay_tools.py).

Exit status: 0 when every point-to-point case agrees, 1 when one differs or any case fails to run
(collective cases included: a crash is a failure whatever the trace), 77 (the
CTest SKIP_RETURN_CODE convention) when gridcast is not built: smpirun's figures are still printed.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import replay_tools as rt
import results_json

EXIT_SKIPPED = 77
KIB, MIB = 1024, 1024 * 1024


@dataclass(frozen=True)
class GenCase:
    name: str
    pattern: str
    np: int
    iters: int
    bytes: int
    flops: float = 1e6
    allreduce: bool | None = None
    ranks_per_host: int = 1
    quick: bool = True  # part of --quick


GENERATED = (
    GenCase("ring-16-eager", "ring", 16, 20, 8 * KIB),
    GenCase("ring-16-rendezvous", "ring", 16, 10, 1 * MIB),
    GenCase("ring-blocking-8", "ring-blocking", 8, 20, 256 * KIB),
    GenCase("ring-16-2perhost", "ring", 16, 10, 64 * KIB, ranks_per_host=2),
    GenCase("halo3d-12-p2p", "halo3d", 12, 10, 32 * KIB, allreduce=False),
    GenCase("halo3d-64-p2p", "halo3d", 64, 10, 32 * KIB, allreduce=False, quick=False),
    GenCase("p2p-wild-16", "p2p-wild", 16, 10, 8 * KIB),
    GenCase("p2p-wild-8-rendezvous", "p2p-wild", 8, 5, 256 * KIB, quick=False),
    GenCase("ring-256", "ring", 256, 10, 16 * KIB, quick=False),
    GenCase("halo3d-64", "halo3d", 64, 10, 32 * KIB, quick=False),  # with allreduce
    GenCase("collectives-16", "collectives", 16, 4, 8 * KIB),
    GenCase("collectives-64", "collectives", 64, 2, 64 * KIB, quick=False),
)
EXAMPLES = ("pingpong", "ring-halo")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gridcast", type=Path, default=rt.DEFAULT_GRIDCAST, help="gridcast binary")
    p.add_argument("--quick", action="store_true", help="the quick subset (for CTest)")
    p.add_argument("--tolerance", type=float, default=0.01,
                   help="allowed |relative difference| for point-to-point cases (default 0.01)")
    p.add_argument("--coll-selector", choices=("smpi", "mpich"), default="smpi",
                   help="gridcast's collective selection (default smpi: the algorithms smpirun runs)")
    p.add_argument("--cases", default=None, help="comma-separated case names (default all)")
    p.add_argument("--timeout", type=float, default=120.0, help="per-run limit in seconds (default 120)")
    p.add_argument("--work", type=Path, default=rt.REPO / "build" / "bench-work" / "agreement",
                   help="traces, platforms and outputs (default build/bench-work/agreement)")
    p.add_argument("--json", type=Path, default=None, help="also write the figures here (bench/results/ shape)")
    a = p.parse_args(argv)
    started = time.perf_counter()
    a.work.mkdir(parents=True, exist_ok=True)

    scenarios: list[rt.Scenario] = []
    wanted = set(a.cases.split(",")) if a.cases else None
    for c in GENERATED:
        if (wanted is None and (c.quick or not a.quick)) or (wanted and c.name in wanted):
            cluster = {"ranks_per_host": c.ranks_per_host} if c.ranks_per_host > 1 else None
            scenarios.append(rt.generated_scenario(a.work, c.name, c.pattern, c.np, c.iters, c.bytes, c.flops,
                                                   c.allreduce, cluster))
    for ex in EXAMPLES:
        if wanted is None or f"examples/{ex}" in wanted:
            scenarios.append(rt.example_scenario(rt.REPO / "examples" / ex))
    if not scenarios:
        p.error("no case selected")

    have_gridcast = rt.is_executable(a.gridcast)
    if not have_gridcast:
        print(f"gridcast: not built ({a.gridcast}); showing smpirun only")
    print(f"{'case':<24} {'ranks':>5} {'p2p':>4} {'smpirun s':>13} {'gridcast s':>13} {'rel diff':>10}  verdict")
    failures = 0
    rows = []
    for sc in scenarios:
        smpi = rt.run_smpirun(sc, a.work / "scratch", timeout=a.timeout)
        cfg = rt.SMPIRUN_IMPLICIT_CFG + (f"gridcast/coll-selector:{a.coll_selector}",)
        grid = (rt.run_gridcast(a.gridcast, sc, a.work / "out" / sc.name.replace("/", "_"), cfg=cfg, timeout=a.timeout)
                if have_gridcast else rt.Outcome("gridcast", False, error="not built"))
        smpi_txt = f"{smpi.makespan_s:13.7g}" if smpi.ok else f"{'FAILED':>13}"
        grid_txt = f"{grid.makespan_s:13.7g}" if grid.ok else f"{'not built' if grid.error == 'not built' else 'FAILED':>13}"
        diff = (grid.makespan_s - smpi.makespan_s) / smpi.makespan_s if smpi.ok and grid.ok else None
        diff_txt = f"{diff:+10.3%}" if diff is not None else f"{'-':>10}"
        if not smpi.ok:
            verdict = f"FAIL: smpirun {smpi.error}"
            failures += 1
        elif grid.error == "not built":
            verdict = "skipped"
        elif not grid.ok:
            verdict = f"FAIL: gridcast {grid.error}"
            failures += 1
        elif not sc.point_to_point_only and a.coll_selector != "smpi":
            verdict = "collectives: reported only"
        elif abs(diff) <= a.tolerance:
            verdict = f"ok (<= {a.tolerance:.0%})"
        else:
            verdict = f"FAIL (> {a.tolerance:.0%})"
            failures += 1
        if smpi.extra.get("rewritten_wildcards"):
            verdict += f" [smpirun: {smpi.extra['rewritten_wildcards']} wildcard recv -333 -> -555]"
        print(f"{sc.name:<24} {sc.np:>5} {'yes' if sc.point_to_point_only else 'no':>4} {smpi_txt} {grid_txt} "
              f"{diff_txt}  {verdict}", flush=True)
        rows.append({"case": sc.name, "ranks": sc.np, "point_to_point_only": sc.point_to_point_only,
                     "smpirun_s": smpi.makespan_s if smpi.ok else None, "gridcast_s": grid.makespan_s if grid.ok else None,
                     "rel_diff": diff, "verdict": verdict})

    elapsed = time.perf_counter() - started
    print(f"{len(scenarios)} cases in {elapsed:.1f} s; {failures} failed")
    if a.json:
        def worst(p2p: bool) -> float | None:
            diffs = [abs(r["rel_diff"]) for r in rows if r["rel_diff"] is not None and r["point_to_point_only"] == p2p]
            return max(diffs) if diffs else None
        results_json.write(a.json, "smpi_agreement", rows, {
            "cases": len(rows), "failed": failures, "coll_selector": a.coll_selector,
            "max_abs_rel_diff_point_to_point": worst(True), "max_abs_rel_diff_collectives": worst(False),
            "elapsed_s": round(elapsed, 1)})
    if failures:
        return 1
    return 0 if have_gridcast else EXIT_SKIPPED


if __name__ == "__main__":
    sys.exit(main())
