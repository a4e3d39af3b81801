#!/usr/bin/env python3
"""How the cost of a prediction grows with the rank count (issue 18's table).

    cmake --build build && python3 bench/scale.py --json bench/results/scale.json
    python3 bench/scale.py --ranks 1024,4096 --reps 1          # quicker

Case: the bundled stencil model, `gridcast predict examples/predict-stencil/model.json --nw 256 --np P`
on a <cluster> of P hosts from scripts/gen_cluster.py (10 GB/s links, a 40 GB/s backbone), fast-forward
on (its default), no timeline. For each P, --reps runs where a run takes under a minute, one above; the
table gives medians of

  wall       elapsed seconds of the command
  cpu        user + sys seconds (os.wait4)
  RSS        peak resident set, MiB, and KiB per rank
  events/s   calls emulated (prediction.json's events less fast-forward's extrapolated calls) / wall
  makespan   the prediction (the same at every repetition: the run is deterministic)

and the slope of log(wall) and log(RSS) against log(P) between consecutive rows and over the whole
range (1.0: linear). A run longer than --timeout seconds is stopped and shown as such; a run that exits
non-zero shows its exit code and the first line of its error, so a crash is a row, not a lost figure.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import results_json  # noqa: E402


def run_once(gridcast: Path, np: int, platform: Path, out: Path, timeout_s: float, extra: list[str]) -> dict:
    cmd = [str(gridcast), "predict", str(ROOT / "examples/predict-stencil/model.json"), "--nw", "256", "--np",
           str(np), "--platform", str(platform), "--no-timeline", "--out", str(out), *extra]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = start + timeout_s
    status, usage = 0, None
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid != 0:
            break
        if time.monotonic() > deadline:
            proc.kill()
            _, status, usage = os.wait4(proc.pid, 0)
            return {"status": f"stopped after {timeout_s:.0f} s", "wall_s": time.monotonic() - start,
                    "rss_kib": usage.ru_maxrss}
        time.sleep(0.05)
    wall = time.monotonic() - start
    stderr = proc.stderr.read()
    proc.stdout.read()
    row = {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "rss_kib": usage.ru_maxrss}
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        lines = [l for l in stderr.splitlines() if "error" in l] or stderr.splitlines()[-1:]
        row["status"] = f"exit {code}: {lines[0] if lines else ''}"[:300]
        return row
    pred = json.loads((out / "prediction.json").read_text())
    ff = pred.get("fast_forward") or {}
    row["status"] = "ok"
    row["makespan_s"] = pred["makespan_s"]
    row["emulated_calls"] = pred["events"] - ff.get("extrapolated_calls", 0)
    row["notes"] = [l for l in stderr.splitlines() if ": note: " in l]
    return row


def slope(a: dict, b: dict, key: str) -> float | None:
    if a.get(key) is None or b.get(key) is None or a["np"] == b["np"]:
        return None
    return math.log(b[key] / a[key]) / math.log(b["np"] / a["np"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gridcast", default=str(ROOT / "build/bin/gridcast"))
    ap.add_argument("--ranks", default="1024,2048,4096,8192,16384")
    ap.add_argument("--reps", type=int, default=3, help="repetitions of runs under a minute (median)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds before a run is stopped")
    ap.add_argument("--cfg", action="append", default=[], help="--cfg passed to gridcast (repeatable)")
    ap.add_argument("--json", help="write the results here (bench/results shape)")
    args = ap.parse_args()
    gridcast = Path(args.gridcast)
    extra = [x for c in args.cfg for x in ("--cfg", c)]
    rows = []
    with tempfile.TemporaryDirectory(prefix="gridcast-scale-") as tmp:
        for np in [int(x) for x in args.ranks.split(",")]:
            cluster = Path(tmp) / f"c{np}"
            subprocess.run([sys.executable, str(ROOT / "scripts/gen_cluster.py"), "--hosts", str(np), "--out-dir",
                            str(cluster)], check=True, stdout=subprocess.DEVNULL)
            runs = []
            for rep in range(args.reps):
                r = run_once(gridcast, np, cluster / "platform.xml", Path(tmp) / f"o{np}-{rep}", args.timeout, extra)
                runs.append(r)
                if r["status"] != "ok" or r["wall_s"] >= 60:
                    break
            ok = [r for r in runs if r["status"] == "ok"]
            row = {"np": np, "runs": len(runs), "status": runs[-1]["status"] if not ok else "ok"}
            if ok:
                med = lambda k: statistics.median(r[k] for r in ok)  # noqa: E731
                row.update(wall_s=round(med("wall_s"), 2), cpu_s=round(med("cpu_s"), 2),
                           rss_mib=round(med("rss_kib") / 1024, 1), rss_kib_per_rank=round(med("rss_kib") / np, 1),
                           events_per_s=round(ok[0]["emulated_calls"] / med("wall_s")),
                           emulated_calls=ok[0]["emulated_calls"], makespan_s=ok[0]["makespan_s"],
                           deterministic=len({r["makespan_s"] for r in ok}) == 1, notes=ok[0]["notes"])
            else:
                row.update(wall_s=round(runs[-1]["wall_s"], 1), rss_mib=round(runs[-1]["rss_kib"] / 1024, 1))
            rows.append(row)
            print(json.dumps(row), flush=True)
    done = [r for r in rows if r["status"] == "ok"]
    for a, b in zip(done, done[1:]):
        b["wall_slope"] = round(slope(a, b, "wall_s"), 3)
        b["rss_slope"] = round(slope(a, b, "rss_mib"), 3)
    summary = {}
    if len(done) >= 2:
        summary = {"ranks": f"{done[0]['np']}-{done[-1]['np']}",
                   "wall_slope": round(slope(done[0], done[-1], "wall_s"), 3),
                   "rss_slope": round(slope(done[0], done[-1], "rss_mib"), 3),
                   "largest_completed": done[-1]["np"], "largest_wall_s": done[-1]["wall_s"],
                   "rss_kib_per_rank_at_largest": done[-1]["rss_kib_per_rank"]}
    print()
    print(f"{'ranks':>7} {'wall s':>8} {'cpu s':>8} {'RSS MiB':>8} {'KiB/rank':>8} {'events/s':>9} {'slope t':>8} "
          f"{'slope m':>8}  status")
    for r in rows:
        f = lambda k, fmt: format(r[k], fmt) if r.get(k) is not None else format("-", ">" + fmt.split(".")[0])  # noqa: E731
        print(f"{r['np']:>7} {f('wall_s', '8.2f')} {f('cpu_s', '8.2f')} {f('rss_mib', '8.1f')} "
              f"{f('rss_kib_per_rank', '8.1f')} {f('events_per_s', '9.0f')} {f('wall_slope', '8.3f')} "
              f"{f('rss_slope', '8.3f')}  {r['status']}")
    if summary:
        print(f"log-log slope over {summary['ranks']} ranks: wall {summary['wall_slope']}, RSS {summary['rss_slope']}")
    if args.json:
        results_json.write(Path(args.json), "scale", rows, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
