#!/usr/bin/env python3
"""The GPU memory-system model against Nsight Compute on the device: reads what
bench/gpu-cache/run-on-device.sh left in its OUT folder (ncu.csv, bases.txt), writes the suite's traces at
device size with the device's buffer bases (gen_traces --size device --bases), runs `gridcast gpu-cache`
on each with the GPU data sheet, and prints and writes the per-kernel table: L1 and L2 sector hit rates,
L2 and DRAM sectors, kernel time, measured and modelled, with the mean absolute errors.

One kernel's trace at a time (written, modelled, deleted: the device-size traces are ~1 GB together).
Exit 1 when an input is missing or unreadable, 2 when a step fails."""
from __future__ import annotations

import argparse
import csv
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import results_json  # noqa: E402

CASES = ["gemm", "2mm", "atax", "bicg", "gesummv", "mvt", "syrk", "conv2d", "jacobi2d", "reduction", "transpose", "bfs"]

# Nsight Compute metric -> (our key, what it is)
METRICS = {
    "l1tex__t_sector_hit_rate.pct": "l1_hit",
    "l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate.pct": "l1_global_load_hit",
    "lts__t_sector_hit_rate.pct": "l2_hit",
    "lts__t_sector_op_read_hit_rate.pct": "l2_read_hit",
    "lts__t_sectors_op_read.sum": "l2_read_sectors",
    "lts__t_sectors_op_write.sum": "l2_write_sectors",
    "dram__sectors_read.sum": "dram_read_sectors",
    "dram__sectors_write.sum": "dram_write_sectors",
    "gpu__time_duration.sum": "time_s",
    "sm__cycles_elapsed.avg.per_second": "sm_clock_hz",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "l1_load_sectors",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "l1_store_sectors",
    "lts__t_sectors_op_atom.sum": "l2_atom_sectors",
    "lts__t_sectors_op_red.sum": "l2_red_sectors",
    "lts__t_sectors_srcunit_tex.sum": "l2_tex_sectors",
    "lts__t_sectors_srcunit_tex_lookup_hit.sum": "l2_tex_hits",
}

SCALE = {  # unit -> factor to the base unit (seconds, hertz, plain counts, percent)
    "nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0, "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0,
    "hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9, "cycle/second": 1.0, "cycle/usecond": 1e6,
    "cycle/nsecond": 1e9, "cycle/msecond": 1e3, "%": 1.0, "": 1.0,
}


def unit_factor(unit: str) -> float:
    u = unit.strip().lower()
    if u in SCALE:
        return SCALE[u]
    for prefix, f in (("k", 1e3), ("m", 1e6), ("g", 1e9), ("t", 1e12)):  # Ksector, Msector, Gbyte...
        if u.startswith(prefix) and u[1:] in ("sector", "byte", "request", "cycle", "inst"):
            return f
    return 1.0  # sector, byte, cycle...


def number(text: str) -> float | None:
    t = text.strip().replace(",", "")
    if t in ("", "n/a", "N/A", "nan"):
        return None
    try:
        return float(t)
    except ValueError:
        return None


def kernel_key(name: str) -> str:
    """'k_gemm', 'void k_gemm(LaunchArgs)' or 'k_gemm(gcbench::LaunchArgs)' -> 'k_gemm'."""
    n = name.strip()
    if n.startswith("void "):
        n = n[5:]
    return n.split("(")[0].split("<")[0].strip()


def read_ncu(path: Path) -> dict[str, dict[str, float]]:
    """ncu --csv output, --page raw (a column per metric, a units row) or details (a row per metric);
    lines that are not CSV (==PROF== messages, the program's output) are skipped."""
    lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.startswith('"')]
    if not lines:
        raise SystemExit(f"compare: {path}: no CSV rows (did ncu profile anything? see ncu-stderr.txt)")
    rows = list(csv.reader(lines))
    header = rows[0]
    if "Kernel Name" not in header:
        raise SystemExit(f"compare: {path}:1: no 'Kernel Name' column in {header[:6]}")
    name_col = header.index("Kernel Name")
    out: dict[str, dict[str, float]] = {}
    if "Metric Name" in header and "Metric Value" in header:  # the details page
        mn, mu, mv = header.index("Metric Name"), header.index("Metric Unit"), header.index("Metric Value")
        for r in rows[1:]:
            if len(r) <= max(mn, mv) or r[mn] not in METRICS:
                continue
            v = number(r[mv])
            if v is not None:
                out.setdefault(kernel_key(r[name_col]), {})[METRICS[r[mn]]] = v * unit_factor(r[mu] if len(r) > mu else "")
        return out
    units = ["" for _ in header]
    data = rows[1:]
    if data and (data[0][0] == "" or number(data[0][0]) is None):  # the units row
        units = data[0] + [""] * (len(header) - len(data[0]))
        data = data[1:]
    for r in data:
        if len(r) < len(header):
            continue
        k = kernel_key(r[name_col])
        if k in out:
            print(f"compare: {path}: {k} profiled more than once: the first is kept", file=sys.stderr)
            continue
        m = {}
        for col, metric in enumerate(header):
            if metric in METRICS:
                v = number(r[col])
                if v is not None:
                    m[METRICS[metric]] = v * unit_factor(units[col])
        out[k] = m
    return out


def run(cmd: list[str], what: str) -> None:
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        print(f"compare: {what} failed (exit {p.returncode}): {' '.join(cmd)}\n{p.stdout[-2000:]}{p.stderr[-2000:]}",
              file=sys.stderr)
        raise SystemExit(2)


def model_case(case: str, a, work: Path, measured: Path | None = None, gpu: Path | None = None) -> list[dict]:
    """The model's metrics of a case's launches on `gpu`, from its trace with the buffer bases of the run
    in `measured` (default: --measured and --gpu)."""
    measured, gpu = measured or a.measured, gpu or a.gpu
    trace = work / f"{case}.trace"
    metrics = work / f"{case}.json"
    run([str(a.gen_traces), "--size", a.size, "--bases", str(measured / "bases.txt"), "--out", str(work),
         "--kernel", case], f"gen_traces {case}")
    run([str(a.gridcast), "gpu-cache", str(trace), "--gpu", str(gpu), "-o", str(metrics)], f"gridcast gpu-cache {case}")
    if not a.keep_traces:
        trace.unlink(missing_ok=True)
    return json.loads(metrics.read_text())["kernels"]


def rate(x) -> float | None:
    return None if x is None else 100.0 * float(x)


def build_row(case: str, k: dict, m: dict | None) -> dict:
    l1, l2, dram, t = k.get("l1", {}), k.get("l2", {}), k.get("dram", {}), k.get("time", {})
    row = {
        "case": case, "kernel": k["name"], "warp_accesses": k.get("warp_accesses"), "profiled": m is not None,
        "model": {
            "l1_hit_pct": rate(l1.get("hit_rate", {}).get("overall")),
            "l1_global_load_hit_pct": rate(l1.get("hit_rate", {}).get("global_load")),
            "l2_hit_pct": rate(l2.get("hit_rate", {}).get("overall")),
            "l2_read_hit_pct": rate(l2.get("hit_rate", {}).get("read")),
            "l2_read_sectors": l2.get("read_sectors"), "l2_write_sectors": l2.get("write_sectors"),
            "dram_read_sectors": dram.get("read_sectors"), "dram_write_sectors": dram.get("write_sectors"),
            "time_s": t.get("predicted_s"), "bound": t.get("bound"),
        },
        "measured": None,
    }
    if m is not None:
        row["measured"] = {
            "l1_hit_pct": m.get("l1_hit"), "l1_global_load_hit_pct": m.get("l1_global_load_hit"),
            "l2_hit_pct": m.get("l2_hit"), "l2_read_hit_pct": m.get("l2_read_hit"),
            "l2_read_sectors": m.get("l2_read_sectors"), "l2_write_sectors": m.get("l2_write_sectors"),
            "dram_read_sectors": m.get("dram_read_sectors"), "dram_write_sectors": m.get("dram_write_sectors"),
            "l2_tex_hit_pct": (100.0 * m["l2_tex_hits"] / m["l2_tex_sectors"]
                               if m.get("l2_tex_sectors") and m.get("l2_tex_hits") is not None else None),
            "time_s": m.get("time_s"), "sm_clock_hz": m.get("sm_clock_hz"),
            "l1_load_sectors": m.get("l1_load_sectors"), "l1_store_sectors": m.get("l1_store_sectors"),
        }
        mo, me = row["model"], row["measured"]
        row["error"] = {
            "l1_hit_pp": None if None in (mo["l1_hit_pct"], me["l1_hit_pct"]) else mo["l1_hit_pct"] - me["l1_hit_pct"],
            "l2_hit_pp": None if None in (mo["l2_hit_pct"], me["l2_hit_pct"]) else mo["l2_hit_pct"] - me["l2_hit_pct"],
            "l2_tex_hit_pp": (None if None in (mo["l2_hit_pct"], me["l2_tex_hit_pct"])
                              else mo["l2_hit_pct"] - me["l2_tex_hit_pct"]),
            "time_pct": None if not me["time_s"] or mo["time_s"] is None else 100.0 * (mo["time_s"] / me["time_s"] - 1),
        }
    return row


def calibrated_time(row: dict, source: dict, source_time_s: float | None, source_sheet: dict, target_sheet: dict) -> None:
    """The kernel's time on the target GPU from its duration measured on the source GPU, as `gridcast
    replay --gpu-model cache --gpu-source-sheet` prices it (gpu-cache's calibrate()): the target's
    roofline plus the source's time that its roofline does not explain, in SM cycles of the whole GPU,
    spread over the target's SMs at its clock."""
    if source_time_s is None or source.get("time", {}).get("predicted_s") is None:
        return
    exposed_sm_cycles = max(0.0, source_time_s - source["time"]["predicted_s"]) * source_sheet["sm_clock_hz"] * \
        source_sheet["sm_count"]
    t = row["model"]["time_s"] + exposed_sm_cycles / (target_sheet["sm_clock_hz"] * target_sheet["sm_count"])
    row["model"]["time_calibrated_s"] = t
    row["measured_source_time_s"] = source_time_s
    me = row.get("measured")
    if me and me.get("time_s"):
        row["error"]["time_calibrated_pct"] = 100.0 * (t / me["time_s"] - 1)


def mean_abs(rows: list[dict], key: str) -> float | None:
    v = [abs(r["error"][key]) for r in rows if r.get("error") and r["error"].get(key) is not None]
    return sum(v) / len(v) if v else None


def fmt(x, spec: str) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def table(rows: list[dict], summary: dict, gpu_name: str) -> str:
    calibrated = summary.get("time_calibrated_mae_pct") is not None
    out = [f"GPU memory-system model vs Nsight Compute ({gpu_name}): measured / model",
           f"{'kernel':<12} {'L1 hit %':>13} {'L2 hit %':>13} {'DRAM rd sectors':>23} {'DRAM wr sectors':>23} "
           f"{'time us':>17} {'bound':>7}" + (f" {'calibrated on ' + summary['source_gpu'] + ', us':>34}" if calibrated else "")]
    for r in rows:
        me, mo = r["measured"] or {}, r["model"]

        def pair(key: str, spec: str, scale: float = 1.0) -> str:
            a, b = me.get(key), mo.get(key)
            return f"{fmt(None if a is None else a * scale, spec)} / {fmt(None if b is None else b * scale, spec)}"

        out.append(f"{r['kernel']:<12} {pair('l1_hit_pct', '5.1f'):>13} {pair('l2_hit_pct', '5.1f'):>13} "
                   f"{pair('dram_read_sectors', '.0f'):>23} {pair('dram_write_sectors', '.0f'):>23} "
                   f"{pair('time_s', '7.1f', 1e6):>17} {mo.get('bound') or '-':>7}"
                   + (f" {pair('time_s', '7.1f', 1e6).split(' / ')[0] + ' / ' + fmt(None if mo.get('time_calibrated_s') is None else mo['time_calibrated_s'] * 1e6, '7.1f'):>34}" if calibrated else ""))
    out.append(f"mean absolute error over {summary['kernels_compared']} kernels: L1 hit {fmt(summary['l1_hit_mae_pp'], '.2f')} pp, "
               f"L2 hit {fmt(summary['l2_hit_mae_pp'], '.2f')} pp"
               + (f" (of the sectors from L1TEX: {fmt(summary['l2_tex_hit_mae_pp'], '.2f')} pp)"
                  if summary.get('l2_tex_hit_mae_pp') is not None else "")
               + f", time {fmt(summary['time_mae_pct'], '.2f')} % (roofline alone)"
               + (f", time calibrated on the {summary['source_gpu']} {fmt(summary['time_calibrated_mae_pct'], '.2f')} %"
                  if calibrated else ""))
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--measured", type=Path, required=True, help="run-on-device.sh's OUT folder (ncu.csv, bases.txt)")
    ap.add_argument("--gridcast", type=Path, default=ROOT / "build/bin/gridcast")
    ap.add_argument("--gen-traces", type=Path, default=ROOT / "build/bin/gridcast_bench_gpu_cache_traces")
    ap.add_argument("--gpu", type=Path, default=ROOT / "platforms/gpus/h100.json")
    ap.add_argument("--json", type=Path, default=ROOT / "bench/results/gpu_cache_h100.json")
    ap.add_argument("--txt", type=Path, default=ROOT / "bench/results/gpu_cache_h100.txt")
    ap.add_argument("--work", type=Path, help="where traces and metrics go (default: a temporary folder)")
    ap.add_argument("--keep-traces", action="store_true")
    ap.add_argument("--kernel", action="append", choices=CASES, help="only these cases (repeatable)")
    ap.add_argument("--size", choices=("device", "ci"), default="device",
                    help="the suite's sizes the device ran (run-on-device.sh's SIZE)")
    ap.add_argument("--source-measured", type=Path,
                    help="run-on-device.sh's OUT folder of another GPU (the source): each kernel's time there calibrates "
                         "the model, which then predicts the time on --measured's GPU")
    ap.add_argument("--source-gpu", type=Path, help="the source GPU's data sheet (with --source-measured)")
    a = ap.parse_args()
    if (a.source_measured is None) != (a.source_gpu is None):
        ap.error("--source-measured and --source-gpu go together")
    for f in (a.measured / "ncu.csv", a.measured / "bases.txt", a.gridcast, a.gen_traces, a.gpu):
        if not f.exists():
            print(f"compare: {f}: not found", file=sys.stderr)
            return 1
    measured = read_ncu(a.measured / "ncu.csv")
    source_measured = read_ncu(a.source_measured / "ncu.csv") if a.source_measured else None
    target_sheet = json.loads(a.gpu.read_text())
    source_sheet = json.loads(a.source_gpu.read_text()) if a.source_gpu else None
    gpu_name = "?"
    for ln in (a.measured / "bases.txt").read_text().splitlines():
        if ln.startswith("gpu "):
            gpu_name = ln[4:].split(" sms ")[0]
    rows = []
    with tempfile.TemporaryDirectory(prefix="gpu-cache-compare-") as tmp:
        work = a.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for case in a.kernel or CASES:
            on_source = model_case(case, a, work, a.source_measured, a.source_gpu) if source_sheet else []
            for i, k in enumerate(model_case(case, a, work)):
                rows.append(build_row(case, k, measured.get(kernel_key(k["name"]))))
                if source_sheet:
                    m = source_measured.get(kernel_key(k["name"]))
                    calibrated_time(rows[-1], on_source[i], m.get("time_s") if m else None, source_sheet, target_sheet)
                print(f"compare: {case} {k['name']}: {'profiled' if rows[-1]['profiled'] else 'NOT in ncu.csv'}", file=sys.stderr)
    compared = [r for r in rows if r.get("error")]
    summary = {
        "gpu": gpu_name, "sheet": str(a.gpu.relative_to(ROOT)) if a.gpu.is_relative_to(ROOT) else str(a.gpu),
        "kernels": len(rows), "kernels_compared": len(compared), "size": a.size,
        "l1_hit_mae_pp": mean_abs(rows, "l1_hit_pp"), "l2_hit_mae_pp": mean_abs(rows, "l2_hit_pp"),
        "l2_tex_hit_mae_pp": mean_abs(rows, "l2_tex_hit_pp"),
        "time_mae_pct": mean_abs(rows, "time_pct"),
    }
    if source_sheet:
        source_name = "?"
        for ln in (a.source_measured / "bases.txt").read_text().splitlines():
            if ln.startswith("gpu "):
                source_name = ln[4:].split(" sms ")[0]
        summary["source_gpu"] = source_name
        summary["source_sheet"] = str(a.source_gpu)
        summary["time_calibrated_mae_pct"] = mean_abs(rows, "time_calibrated_pct")
    text = table(rows, summary, gpu_name)
    print(text, end="")
    a.json.parent.mkdir(parents=True, exist_ok=True)
    results_json.write(a.json, a.json.stem, rows, summary)
    a.txt.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
