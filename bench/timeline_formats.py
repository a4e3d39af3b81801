#!/usr/bin/env python3
"""The two timeline formats side by side: timeline.json (Chrome trace events) against timeline.pftrace
(Perfetto's protobuf packets, --timeline-format perfetto), on the same full timelines.

    cmake --build build && python3 bench/timeline_formats.py --json bench/results/timeline_formats.json

Case: the bundled stencil model, `gridcast predict examples/predict-stencil/model.json --nw 256 --np P
--timeline-ranks all` on a <cluster> of P hosts from scripts/gen_cluster.py, fast-forward on (its
default). For each P and format, --reps runs, interleaved (json, perfetto, json, ...) so that the
machine's drift falls on both; the table gives medians of

  wall      elapsed seconds of the command
  bytes     the timeline file's size (the same at every repetition: the run is deterministic)

and, per P, the perfetto/json ratios of both, measured in the same run. prediction.json must be the same
bytes in both formats (the drawing never changes what is predicted): a difference fails the bench.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import results_json  # noqa: E402

FILES = {"json": "timeline.json", "perfetto": "timeline.pftrace"}


def run_once(gridcast: Path, np: int, platform: Path, out: Path, fmt: str) -> tuple[float, int, bytes]:
    cmd = [str(gridcast), "predict", str(ROOT / "examples/predict-stencil/model.json"), "--nw", "256", "--np",
           str(np), "--platform", str(platform), "--timeline-ranks", "all", "--timeline-format", fmt,
           "--out", str(out)]
    start = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.monotonic() - start
    return wall, (out / FILES[fmt]).stat().st_size, (out / "prediction.json").read_bytes()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gridcast", default=str(ROOT / "build/bin/gridcast"))
    ap.add_argument("--ranks", default="64,256,1024")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", help="write the results here (bench/results shape)")
    args = ap.parse_args()
    gridcast = Path(args.gridcast)
    rows = []
    with tempfile.TemporaryDirectory(prefix="gridcast-timeline-") as tmp:
        for np in [int(x) for x in args.ranks.split(",")]:
            cluster = Path(tmp) / f"c{np}"
            subprocess.run([sys.executable, str(ROOT / "scripts/gen_cluster.py"), "--hosts", str(np), "--out-dir",
                            str(cluster)], check=True, stdout=subprocess.DEVNULL)
            walls = {f: [] for f in FILES}
            size, prediction = {}, {}
            for rep in range(args.reps):
                for fmt in FILES:
                    out = Path(tmp) / f"o{np}-{fmt}-{rep}"
                    wall, size[fmt], prediction[fmt] = run_once(gridcast, np, cluster / "platform.xml", out, fmt)
                    walls[fmt].append(wall)
                    subprocess.run(["rm", "-rf", str(out)], check=True)
            if prediction["json"] != prediction["perfetto"]:
                print(f"timeline_formats: np {np}: prediction.json differs between the formats", file=sys.stderr)
                return 1
            row = {"np": np, "reps": args.reps}
            for fmt in FILES:
                row[f"{fmt}_wall_s"] = round(statistics.median(walls[fmt]), 2)
                row[f"{fmt}_bytes"] = size[fmt]
            row["bytes_ratio"] = round(size["perfetto"] / size["json"], 3)
            row["wall_ratio"] = round(row["perfetto_wall_s"] / row["json_wall_s"], 3)
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(f"\n{'np':>6} {'json wall s':>11} {'perfetto wall s':>15} {'wall ratio':>10} {'json MB':>9} "
          f"{'perfetto MB':>11} {'bytes ratio':>11}")
    for r in rows:
        print(f"{r['np']:>6} {r['json_wall_s']:>11.2f} {r['perfetto_wall_s']:>15.2f} {r['wall_ratio']:>10.3f} "
              f"{r['json_bytes'] / 1e6:>9.2f} {r['perfetto_bytes'] / 1e6:>11.2f} {r['bytes_ratio']:>11.3f}")
    summary = {"median_bytes_ratio": statistics.median(r["bytes_ratio"] for r in rows),
               "median_wall_ratio": statistics.median(r["wall_ratio"] for r in rows)}
    print(f"medians over P: bytes ratio {summary['median_bytes_ratio']:.3f}, wall ratio "
          f"{summary['median_wall_ratio']:.3f} (perfetto / json)")
    if args.json:
        results_json.write(Path(args.json), "timeline_formats", rows, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
