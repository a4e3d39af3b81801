#!/usr/bin/env python3
"""The GPUDirect gains of examples/study-gpudirect from its results.csv, as markdown tables.

Communication time is the mean over ranks of comm_s + wait_s (time inside MPI calls, staging copies and
pinning included), as in docs/studies/gpudirect.md; gain = 1 - GPUDirect / HostCopy at the same app, np
and ranks per node. stdlib only. Usage:
  examples/study-gpudirect/gains.py out/study-gpudirect/study/results.csv
"""
import csv
import sys


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    rows = list(csv.DictReader(open(sys.argv[1], newline="")))
    bad = [r for r in rows if r["status"] != "ok"]
    if bad:
        print(f"{len(bad)} points without a result (status {bad[0]['status']}): run the study to the end first",
              file=sys.stderr)
        return 1
    point = {}
    for r in rows:
        key = (r["tag.app"], int(r["np"]), r["variant"], r["gpu_mpi"])
        point[key] = (float(r["comm_s"]) + float(r["wait_s"]), float(r["makespan_s"]))
    apps = list(dict.fromkeys(r["tag.app"] for r in rows))
    nps = sorted({int(r["np"]) for r in rows})
    variants = list(dict.fromkeys(r["variant"] for r in rows))

    def table(title, cell):
        print(f"\n{title}\n")
        print("| app | np | " + " | ".join(variants) + " |")
        print("|---|---|" + "---|" * len(variants))
        for app in apps:
            for n in nps:
                cells = []
                for v in variants:
                    h, g = point.get((app, n, v, "hostcopy")), point.get((app, n, v, "gpudirect"))
                    cells.append(cell(h, g) if h and g else "")
                print(f"| {app} | {n} | " + " | ".join(cells) + " |")

    table("GPUDirect gain in communication time, 1 - GPUDirect / HostCopy (HostCopy -> GPUDirect, ms)",
          lambda h, g: f"{100 * (1 - g[0] / h[0]):.1f}% ({h[0] * 1e3:.2f} -> {g[0] * 1e3:.2f})")
    table("GPUDirect gain in makespan, 1 - GPUDirect / HostCopy (HostCopy share of time in MPI)",
          lambda h, g: f"{100 * (1 - g[1] / h[1]):.1f}% ({100 * h[0] / h[1]:.0f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
