#!/usr/bin/env python3
"""Speed and memory of the GPU memory-system model.

    cmake --build build --target gridcast_bench_gpu_cache_speed && python3 bench/gpu-cache/speed.py [--json FILE]

Runs build/bin/gridcast_bench_gpu_cache_speed with the H100 data sheet: generated warp accesses (CTAs of
256 threads, a mix of coalesced loads and stores, 8-byte loads, L1 re-reads and 32-line column walks) at
--accesses and at 4x that, --runs times each, grouped by CTA as the native traces are. Prints the median
warp accesses per CPU second and the peak resident set after each length. The issue's targets: at least
50 million warp accesses per second on one core, and the resident set flat (within 10 %) when the trace
grows 4x. Exit 0 when both hold, 1 otherwise, 77 when the bench program is missing.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import results_json  # noqa: E402

TARGET_RATE = 50e6
TARGET_RSS_GROWTH = 0.10


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", type=Path, default=ROOT / "build")
    ap.add_argument("--sheet", type=Path, default=ROOT / "platforms" / "gpus" / "h100.json")
    ap.add_argument("--accesses", type=int, default=5_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", type=Path, help="write the figures (bench/results/gpu_cache_speed.json)")
    a = ap.parse_args()
    bench = a.build / "bin" / "gridcast_bench_gpu_cache_speed"
    if not bench.exists():
        print(f"speed: needs {bench}", file=sys.stderr)
        return 77
    out = subprocess.run([str(bench), str(a.sheet), "--accesses", str(a.accesses), "--runs", str(a.runs)],
                         capture_output=True, text=True, check=True).stdout
    rows = json.loads(out)
    print(f"{'warp accesses':>14} {'accesses/CPU s (median)':>24} {'accesses/wall s':>16} {'peak RSS MiB':>13}")
    for r in rows:
        print(f"{r['warp_accesses']:>14} {r['accesses_per_s_median']:>24,.0f} {r['wall_accesses_per_s_median']:>16,.0f} "
              f"{r['peak_rss_kib'] / 1024:>13.1f}")
    rate = min(r["accesses_per_s_median"] for r in rows)
    growth = rows[1]["peak_rss_kib"] / rows[0]["peak_rss_kib"] - 1
    ok_rate, ok_rss = rate >= TARGET_RATE, growth <= TARGET_RSS_GROWTH
    print(f"rate {rate / 1e6:.2f} M warp accesses/s (target >= {TARGET_RATE / 1e6:.0f} M): {'met' if ok_rate else 'NOT met'}; "
          f"peak RSS {100 * growth:+.1f} % for 4x the accesses (target <= {100 * TARGET_RSS_GROWTH:.0f} %): "
          f"{'met' if ok_rss else 'NOT met'}")
    if a.json:
        summary = {"sheet": a.sheet.name, "accesses_per_s_median": rate, "target_accesses_per_s": TARGET_RATE,
                   "rate_target_met": ok_rate, "rss_growth_4x": growth, "rss_target_met": ok_rss,
                   "peak_rss_mib": rows[1]["peak_rss_kib"] / 1024, "runs": a.runs}
        results_json.write(a.json, "gpu_cache_speed", rows, summary)
    return 0 if ok_rate and ok_rss else 1


if __name__ == "__main__":
    sys.exit(main())
