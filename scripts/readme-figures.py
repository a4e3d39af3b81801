#!/usr/bin/env python3
"""Render the README's figures from the benches' outputs, so that no figure in it is typed by hand.

    python3 scripts/readme-figures.py            # rewrite the block in README.md
    python3 scripts/readme-figures.py --check    # exit 1 when README.md differs from what it would write

Reads bench/results/*.json (written by the benches' `--json FILE`, shape in bench/results_json.py) and
replaces what lies between `<!-- figures:begin -->` and `<!-- figures:end -->` in README.md. A file whose
`source` is not "measured" says where its figures come from, and the README says it too. A bench without
a file gets no line. Exit 0 written / up to date, 1 differs (--check), 2 bad input (missing markers,
malformed JSON), naming the file.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

BEGIN, END = "<!-- figures:begin -->", "<!-- figures:end -->"


def pct(x: float, digits: int = 2) -> str:
    return f"{x:.{digits}f}%"


def bound(fraction: float) -> str:
    """A relative difference as a bound a reader can take in: "0.012%", or "0.001%" for anything smaller."""
    return f"{max(100 * fraction, 0.001):.3f}%"


def origin(d: dict, script: str) -> str:
    """`script`, date[, where the figures come from]."""
    text = f"`{script}`, {d['date'][:10]}"
    return text if d.get("source", "measured") == "measured" else f"{text}; {d['source']}"


def smpi_agreement(d: dict) -> str:
    s = d["summary"]
    p2p, coll = s["max_abs_rel_diff_point_to_point"], s["max_abs_rel_diff_collectives"]
    parts = []
    if p2p is not None:
        parts.append(f"within {bound(p2p)} on every point-to-point trace")
    if coll is not None:
        parts.append(f"within {bound(coll)} on traces of every collective")
    return (f"- Agreement with `smpirun -replay` on the same TIT traces and platform, {s['cases']} cases: "
            f"{' and '.join(parts)}, {s['failed']} failed (`--cfg gridcast/coll-selector:{s['coll_selector']}`; "
            f"{origin(d, 'bench/smpi_agreement.py')}).")


def smpi_extrapolation(d: dict) -> str:
    s = d["summary"]
    return (f"- Prediction against `smpirun` running the real programs at np {' and '.join(map(str, s['target_np']))} "
            f"after training at np {min(s['train_np'])}-{max(s['train_np'])}: {pct(s['mean_abs_error_pct'])} mean, "
            f"{pct(s['max_abs_error_pct'])} max, {pct(s['median_abs_error_pct'])} median error over {s['points']} points "
            f"(the LSim paper: {s['paper_mean_pct']}% mean, {s['paper_max_pct']}% max), with gridcast expanding "
            f"collectives as SMPI's default selector does (`--cfg gridcast/coll-selector:{s['coll_selector']}`; "
            f"{origin(d, 'bench/accuracy/smpi_extrapolation.py')}).")


def real_size(d: dict) -> str:
    s, rows = d["summary"], d["rows"]
    runs = sorted({r.get("run", 1) for r in rows})
    points = []
    for r in rows:
        key = (r["app"], r["size"], r["x_train"])
        if key not in points:
            points.append(key)
    names = {"lammps": "LAMMPS", "hpl": "HPL (HPCC's HPL section)", "cp2k": "CP2K (Fortran)",
             "qe": "Quantum ESPRESSO (Fortran)", "waitsome": "MPI_Waitsome program"}
    lines = [f"- Real hardware, np {s['np']}, size extrapolation ({origin(d, 'bench/accuracy/real_size.py')}; "
             f"target {s['target_mean_pct']}% mean, {s['target_max_pct']}% max):", "",
             "  | app | size | x training | " + " | ".join(f"run {k}" for k in runs) + " |",
             "  |---|---|---|" + "---|" * len(runs)]
    for app, size, x in points:
        errs = {r.get("run", 1): r["error_pct"] for r in rows if (r["app"], r["size"], r["x_train"]) == (app, size, x)}
        lines.append(f"  | {names.get(app, app)} | {size} | {x:g} | " + " | ".join(f"{errs[k]:+.1f}%" for k in runs) + " |")
    for failed in s.get("not_predicted", []):
        app = failed.split(": ", 1)[0]
        lines.append(f"  | {names.get(app, app)} | | | " + " | ".join("no prediction" for _ in runs) + " |")
    if "per_run" in s:
        lines.append("  | mean / max | | | " + " | ".join(
            f"{p['mean_abs_error_pct']:.1f}% / {p['max_abs_error_pct']:.1f}%" for p in s["per_run"]) + " |")
    else:
        lines.append(f"  | mean / max | | | {s['mean_abs_error_pct']:.1f}% / {s['max_abs_error_pct']:.1f}% |")
    if s.get("not_predicted"):
        lines.append("")
        lines.append("  No prediction: " + "; ".join(
            f"{names.get(f.split(': ', 1)[0], f.split(': ', 1)[0])}, {f.split(': ', 1)[1]}" for f in s["not_predicted"]) + ".")
    if s.get("prediction_spread_pct"):
        lines.append("")
        lines.append("  Spread of the predictions over the retrainings: " + ", ".join(
            f"{k} {v:.1f}%" for k, v in s["prediction_spread_pct"].items()) + f" (target {s.get('target_spread_pct', 5)}%).")
    if "machine" in s:
        m, n = s["machine"], s.get("noise", {})
        lines.append("")
        lines.append(f"  Machine: {m['cpu_model']}, {m['cores']} cores, {', '.join(m['caches'])}; reference kernel "
                     f"spread {n.get('reference_spread_pct', float('nan')):.1f}%"
                     + (f", slowest core under load {n['core_imbalance_pct']:.1f}% over the fastest"
                        if "core_imbalance_pct" in n else "")
                     + (" (over 2%: a disturbed run, its figures say what a busy machine gives)." if s.get("disturbed")
                        else " (quiet)."))
    return "\n".join(lines) + "\n"


def trace_model_validation(d: dict) -> str:
    s = d["summary"]
    return (f"- Trace model: synthesized streams at np {' and '.join(map(str, s['target_np']))} and 2-4x the training "
            f"sizes equal the real SMPI recordings call for call ({s['default_set_identical_pct']:.2f}% on all "
            f"{s['default_set_rows']} rows of {', '.join(s['default_set_apps'])}; {s['hpl_1xQ_identical_pct']:.2f}% on "
            f"the {s['hpl_1xQ_rows']} rows of HPL on 1 x Q grids); LAMMPS: every call's route "
            f"({s['lammps_route_eq_pct']:.2f}%), its sizes only {pct(s['lammps_size_eq_pct'])} (two recordings with "
            f"different seeds agree on {pct(s['lammps_size_eq_two_seeds_pct'])}) "
            f"({origin(d, 'bench/trace_model_validation.py')}).")


def speed(d: dict) -> str:
    s = d["summary"]
    return (f"- Speed: `gridcast predict` of the {s['predict_what']}: {s['predict_wall_s']:.2f} s (target "
            f"< {s['predict_target_s']} s); `gridcast fit` of {s['fit_what']}: {s['fit_wall_s']:.2f} s (target "
            f"< {s['fit_target_s']} s); fast-forward against full emulation: relative error "
            f"{s['fast_forward_rel_error']:.3g}, {s['fast_forward_s']} s against {s['full_emulation_s']} s "
            f"({origin(d, 'bench/accuracy/speed.py')}).")


def scale(d: dict) -> str:
    s = d["summary"]
    rows = {r["np"]: r for r in d["rows"] if r.get("status") == "ok"}
    parts = ", ".join(f"{np:,} in {r['wall_s']:.3g} s ({r['rss_kib_per_rank']:.0f} KiB a rank)" for np, r in rows.items())
    stopped = [r for r in d["rows"] if r.get("status") != "ok"]
    tail = "".join(f"; {r['np']:,} ranks: {r['status']}, {r['rss_mib'] / 1024:.2g} GiB resident, no crash" for r in stopped)
    return (f"- Scale: the bundled stencil model at Nw 256 on a cluster of Np hosts, fast-forward on: {parts}; "
            f"log-log slope of wall time against ranks {s['wall_slope']} over {s['ranks']} (target 1.15{'' if s['wall_slope'] <= 1.15 else ': not met'}), of "
            f"memory {s['rss_slope']}{tail} ({origin(d, 'bench/scale.py')}; docs/studies/scale.md).")


def calibration_validation(d: dict) -> str:
    s = d["summary"]
    return (f"- Calibration: the emulated MPI ping-pong on the platform generated from `{s['calibration']}` is "
            f"within {pct(100 * s['pingpong_max_abs_rel_error'], 1)} of the measured one at all "
            f"{s['pingpong_points']} sizes; {s['collectives_within_target']} of the {s['collectives']} collective "
            f"timings at np 2 are within {s['collectives_target']:.0%} ({origin(d, 'bench/calibration_validation.py')}).")


def corpus_validation(d: dict) -> str:
    s = d["summary"]
    rows = d["rows"]
    errs = [abs(r["makespan_error_pct"]) for r in rows if "makespan_error_pct" in r]
    err = f"; makespan error of those {pct(sum(errs) / len(errs))} mean, {pct(max(errs))} max" if errs else ""
    model = [abs(r["model_error_pct"]) for r in rows if "model_error_pct" in r]
    floor = [abs(r["replay_error_pct"]) for r in rows if "replay_error_pct" in r]
    hook = s.get("recorder", "tit") == "hook"
    recorded = ("recorded with gridcast's own profiler under SMPI" if hook
                else "recorded as SMPI time-independent traces")
    why = "" if hook else ", which spends time SMPI's time-independent traces do not record"
    split = (f" (against the recorded target profile replayed, the model's own error: {pct(statistics.mean(model))} "
             f"mean, {pct(statistics.median(model))} median, {pct(max(model))} max over {len(model)} programs; that "
             f"replay itself is {pct(statistics.mean(floor))} mean, {pct(max(floor))} max from `smpirun`{why})"
             ) if model and floor else ""
    # A row NAME@VARIANT is a program of the corpus at other training counts (bench/corpus_validation.py).
    variants = sum(1 for r in rows if "@" in r["program"])
    apps = (f"{s['programs'] - variants} mini-apps the model was not built around ({s['programs']} rows: "
            f"{variants} at other training counts; " if variants else
            f"{s['programs']} mini-apps the model was not built around (")
    return (f"- Generalization, on {apps}examples/corpus, "
            f"{recorded}, trained at 3 process counts x 3 sizes, predicted at {s['target_factor']}x the count and 2x "
            f"the size against `smpirun`): {s['predicted']} of {s['programs']} get a prediction, {s['test_predicted']} of "
            f"the {s['test_programs']} held-out test programs{err}{split}; the others stop at fit or predict with "
            f"the reason the model cannot express ({origin(d, 'bench/corpus_validation.py')}).")


def gpu_cache_measured(d: dict) -> str:
    s = d["summary"]

    def val(x, unit: str) -> str:
        return "-" if x is None else f"{x:.1f}{unit}"
    calibrated = ""
    if s.get("time_calibrated_mae_pct") is not None:
        calibrated = (f"; the kernel time predicted from its measurement on the {s['source_gpu']}: "
                      f"{val(s['time_calibrated_mae_pct'], '%')} (target 15%)")
    sizes = ("the CI sizes (working sets of 80 KB to about 1 MB)" if s.get("size") == "ci"
             else "the device sizes (working sets of 5-185 MB)")
    tex = ""
    if s.get("l2_tex_hit_mae_pp") is not None:
        tex = f" ({val(s['l2_tex_hit_mae_pp'], ' pp')} on the L2 sectors that come from the SMs' loads and stores)"
    return (f"- GPU memory-system model against Nsight Compute on the {s['gpu']}, {s['kernels_compared']} kernel launches "
            f"of bench/gpu-cache at {sizes}: mean absolute error {val(s['l1_hit_mae_pp'], ' pp')} on the L1 sector "
            f"hit rate, {val(s['l2_hit_mae_pp'], ' pp')} on the L2{tex} (targets 10 and 12; the seed on TITAN V: "
            f"11.1 and 15.9); the roofline alone is {val(s['time_mae_pct'], '%')} off the kernel time{calibrated} "
            f"({origin(d, 'bench/gpu-cache/compare.py')}).")


def gpu_cache_speed(d: dict) -> str:
    s = d["summary"]
    return (f"- GPU memory model speed (`gridcast gpu-cache`, the {s['sheet']} sheet, generated warp accesses grouped "
            f"by CTA): {s['accesses_per_s_median'] / 1e6:.2f} M warp accesses per CPU second on one core (target "
            f">= {s['target_accesses_per_s'] / 1e6:.0f} M: {'met' if s['rate_target_met'] else 'not met'}); peak "
            f"resident set {s['peak_rss_mib']:.0f} MiB, {100 * s['rss_growth_4x']:+.1f} % for 4x the accesses "
            f"({origin(d, 'bench/gpu-cache/speed.py')}).")


def study_speed(d: dict) -> str:
    s = d["summary"]
    met = "met" if s["speedup"] >= s["target_speedup"] else "not met"
    return (f"- Studies: `gridcast study run` of {s['points']} points (the bundled stencil model, 4 sizes x 4 rank counts x "
            f"3 networks, fast-forward off) with -j {s['jobs']}: {s['median_wall_s_jN']:.3g} s against "
            f"{s['median_wall_s_j1']:.3g} s with -j 1, {s['speedup']:.2f}x (target {s['target_speedup']}x on 2 cores: "
            f"{met}), medians of {s['reps']}; results.csv {'byte-identical' if s['results_identical'] else 'DIFFERENT'} "
            f"whatever the pool's size ({origin(d, 'bench/study_speed.py')}; docs/guides/studies.md).")


def timeline_formats(d: dict) -> str:
    s, rows = d["summary"], d["rows"]
    big = max(rows, key=lambda r: r["np"])
    return (f"- Timelines in Perfetto's protobuf format (`--timeline-format perfetto`): {s['median_bytes_ratio']:.2f} "
            f"of timeline.json's bytes and {s['median_wall_ratio']:.2f} of its wall time (medians over "
            f"{len(rows)} rank counts, every rank drawn); at {big['np']:,} ranks {big['perfetto_bytes'] / 1e6:.0f} MB "
            f"against {big['json_bytes'] / 1e6:.0f} MB ({origin(d, 'bench/timeline_formats.py')}; "
            f"docs/reference/outputs.md).")


def sampling(d: dict) -> str:
    parts = []
    for r in d["rows"]:
        opts = r.get("options", [])
        shown = [f"`{opts[i]} {opts[i + 1]}`" for i in range(0, len(opts) - 1, 2) if opts[i] != "--seed"]
        how = ", ".join((["a recorded trace replayed"] if r.get("command") == "replay" else []) + shown)
        # Units: the loop's iterations, or the windows between world collectives (docs/reference/sampling.md).
        what = "windows" if "windows" in r.get("loop", "") else "iterations"
        parts.append(f"{r['workload']} ({how + ', ' if how else ''}{r['np']:,} ranks, {r['units']} {what}): median |error| "
                     f"{r['median_abs_error_pct']:.3f}% (max {r['max_abs_error_pct']:.3f}%), the 95% interval held the full "
                     f"emulation's makespan in {r['covered']} of {r['seeds']} draws, {r['median_emulated_pct']:.1f}% of "
                     f"units emulated, {r['speedup']:.1f}x faster")
    return (f"- Sampled prediction (`--sample auto`, against full emulation, one run per sample seed): "
            + "; ".join(parts) + f" ({origin(d, 'bench/sampling.py')}; docs/reference/sampling.md).")


RENDER = {"corpus_validation": corpus_validation, "smpi_agreement": smpi_agreement, "smpi_extrapolation": smpi_extrapolation,
          "trace_model_validation": trace_model_validation, "real_size": real_size, "speed": speed,
          "calibration_validation": calibration_validation, "gpu_cache_h100": gpu_cache_measured,
          "gpu_cache_h200": gpu_cache_measured, "gpu_cache_h100_ci": gpu_cache_measured,
          "gpu_cache_h200_ci": gpu_cache_measured,
          "gpu_cache_speed": gpu_cache_speed, "scale": scale, "study_speed": study_speed,
          "timeline_formats": timeline_formats, "sampling": sampling}


def render(results: Path) -> str:
    docs = {}
    for f in sorted(results.glob("*.json")):
        try:
            d = json.loads(f.read_text())
            docs[d["bench"]] = d
        except (ValueError, KeyError) as e:
            raise SystemExit(f"readme-figures: {f}: {e}") from None
    out = [BEGIN, "<!-- generated by scripts/readme-figures.py from bench/results/*.json: edit those, not this -->", ""]
    for bench, fn in RENDER.items():  # a fixed order, whatever the files' names
        if bench in docs:
            try:
                out.append(fn(docs[bench]).rstrip("\n"))
            except (KeyError, TypeError) as e:
                sys.exit(f"readme-figures: bench/results: {bench}: missing or bad figure {e}")
    out.append(END)
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when README.md is not what this would write")
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    a = ap.parse_args()
    readme = a.root / "README.md"
    text = readme.read_text()
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        print(f"readme-figures: {readme}: needs exactly one {BEGIN} ... {END} block", file=sys.stderr)
        return 2
    new = text[:text.index(BEGIN)] + render(a.root / "bench" / "results") + text[text.index(END) + len(END):]
    if a.check:
        if new != text:
            print(f"readme-figures: {readme} differs from bench/results/*.json: run scripts/readme-figures.py",
                  file=sys.stderr)
            return 1
        return 0
    if new != text:
        readme.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
