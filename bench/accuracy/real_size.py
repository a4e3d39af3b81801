#!/usr/bin/env python3
"""Size extrapolation on this machine's real hardware: applications profiled with `gridcast profile` at
np 2 on four small sizes, predicted with `gridcast predict` at 2x-4x the largest on the platform
generated from this machine's calibration (platforms/this-machine), compared with measured runs; the
whole train-fit-predict-measure cycle three times (--cycles), each printed, with the spread of the
predictions across the retrainings.

    cmake --build build --target gridcast gridcast_hook gridcast_bench_profile_tail
    python3 bench/accuracy/real_size.py                  # every application, three cycles
    python3 bench/accuracy/real_size.py --apps lammps --cycles 1 --reps 3 --attempts 5

Before anything it checks the machine (printed, and in --json): the CPU model and its cache sizes
(/proc/cpuinfo, /sys/devices/system/cpu/cpu0/cache), and its noise: a fixed reference kernel (a pure-
Python loop of fixed work: 400 000 iterations) timed 10 times, and timed 10 times on every core at once
(the ranks' load); a spread (max - min over the median) above 2 %, or a slowest core under load more
than 2 % over the fastest, marks the whole run as disturbed (it still runs: its figures say what a busy
machine gives). Then it
measures this machine's library rate curves (`gridcast calibrate --only-rate-curve` on a copy of the
calibration; compute.library_rates), which the profiles carry, so that `gridcast fit` prices the BLAS
calls that carry their arguments on them (docs/reference/latency-model.md, "Library calls priced from
their arguments").

Applications (nw is the size):
- `lammps`: LAMMPS (`lmp`, Debian's `lammps`) on the LJ benchmark input examples/lammps-lj/in.lj, 100
  steps, scaled with -var x/y/z: trained at 4000, 8000, 16000, 32000 atoms, predicted at 64000 and 128000.
  The measured time is rank 0's MPI_Init..MPI_Finalize.
- `hpl`: HPL through Debian's `hpcc` (examples/hpl-hpcc/hpccinf.template, process grid 1 x 2, block size
  32): trained at N 512, 640, 768, 1024, predicted at N 2048 and 4096, where the whole HPL test takes
  0.5 s or more (multiples of 2 x 32: both ranks own as many panels and rank 1 the last at every size).
  Until the issue that asked for it, the sizes were N 128-320 against 640 and 1024: sections of
  milliseconds, which a time slice moved by tens of percent. hpcc always runs every HPCC test, sized from HPL's N, and HPL comes last, so each profile is
  cut to its HPL section (from HPL's grid set-up, the last three MPI_Comm_split, to MPI_Finalize) by
  build/bin/gridcast_bench_profile_tail; the measured time is that section's (the longest rank's).
- `cp2k`: CP2K (`cp2k.psmp`, Debian's `cp2k`; Fortran, Open MPI's mpif.h bindings), classical
  molecular dynamics of a water box (examples/cp2k-water: 20 NVE steps, smooth particle-mesh Ewald):
  trained at 256, 512, 768 molecules, predicted at 1536 and 3072. Measured: rank 0's MPI_Init..MPI_Finalize.
- `qe`: Quantum ESPRESSO (`pw.x`, Debian's `quantum-espresso`; Fortran), a self-consistent field of a
  silicon supercell (examples/qe-silicon): trained at 8, 16, 24 atoms, predicted at 48. How many SCF
  and Davidson iterations run depends on the data, not on the size alone: the row says what the fit
  makes of that. Measured: rank 0's MPI_Init..MPI_Finalize.
- `waitsome`: the test program build/tests/profiler/gridcast_mpi_waitsome (40 steps), whose
  MPI_Waitsome loops make a number of calls that depends on when messages arrive: trained at n 2, 3, 4,
  predicted at 8. Measured: rank 0's MPI_Init..MPI_Finalize.

1. Training: `gridcast profile --calibration platforms/this-machine/calibration.json --nw SIZE -- mpirun
   -np 2 APP ...` at each training size until --train-runs (5) runs were undisturbed (the machine's other
   processes' CPU load during the run, below) or --attempts (8) runs were made, keeping the undisturbed
   ones or else the --train-runs shortest (a disturbance only adds time to the same work, and a loaded
   machine's foreign load was the same, 1.3 cores, for runs whose HPL section was 2-11x stretched and for
   clean ones); then `gridcast fit` with its default options on all the kept profiles. Several profiles at one size: for a compute site's work and for the work a polling
   construct absorbs, the fit compares each call with the same call of the other runs and takes its
   median over them (three runs or more of a deterministic program; else the median of the runs'
   means): one preempted call of HPL's 1-8 ms sections multiplies a construct's work by up to 80, and
   every run usually has one, each at another step (docs/reference/trace-model.md, "Work"). Five runs, not three:
   on a loaded machine the longest calls are stretched in more than one run of three (the prediction at
   N 1024 moved by 0.0641-0.0723 s over 16 refits on 3 runs a size, 0.0640-0.0714 s on 5;
   docs/reference/latency-model.md, "A median per call, and what moved the HPL prediction"); a training run of HPL
   at these sizes takes about a second.

   HPL's sizes were N 128-320 against 640 and 1024 until the training could price the BLAS calls from
   their arguments: larger sections shared their core with the other processes for longer, the
   regression of their measured work took `Nw^3` per construct in 8 of 12 refits on a loaded machine,
   and the sections were so short that a time slice moved them by tens of percent. Now the targets take
   0.5 s or more (a row under MIN_SPAN_S is marked `<`).
2. Prediction: `gridcast predict MODEL --nw SIZE --np 2 --platform platforms/this-machine/platform.xml
   --ranks-per-host 2` (both ranks on the machine's one 2-core host).
3. Measurement: the same command at the target size, profiled the same way (so that the measured time is
   the span the prediction covers; the hook costs within 2 % on LAMMPS, examples/lammps-lj/README.md),
   run until --reps runs were undisturbed or 3 x --reps runs were made; the median of the undisturbed
   ones, or of the --reps least disturbed when too few were (marked `*`).

Each target also prints the ranks' footprints (run.json footprint_bytes) at the training sizes and at
the target, and the factor a rate model would apply there (rate at the nearest training footprint / rate
at the target's, from the calibration's compute.rate_by_working_set; bench/accuracy/rate_model_effect.py):
information only, the prediction does not use it (docs/reference/latency-model.md, "A rate by footprint").

A run is disturbed when the other processes used more than --max-other-cores cores on average while it
ran: /proc/stat's busy time of the whole machine minus the run's own user+system time (wait4 of
`gridcast profile`, which includes mpirun and its ranks). Prints the table of predicted and measured
times and the errors; an application whose model cannot be fitted gets a row saying why. Exit 0 when the pipeline ran (whatever the
errors), 1 when a step failed, 77 when gridcast, the hook or mpirun is missing or no application can run
(a missing program skips its application: lmp, hpcc or the profile_tail tool, cp2k.psmp, pw.x, or the
waitsome test program of the build that --gridcast belongs to).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import importlib.util
import multiprocessing
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import rate_model_effect  # noqa: E402  (the footprint and rate-curve reading, shared)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import results_json  # noqa: E402  (the --json shape of bench/results/)

ROOT = Path(__file__).resolve().parent.parent.parent
CLK_TCK = os.sysconf("SC_CLK_TCK")
CALIBRATION = ROOT / "platforms" / "this-machine" / "calibration.json"
PLATFORM = ROOT / "platforms" / "this-machine" / "platform.xml"
TOOLS = ROOT / "build" / "bin"
# atoms -> the -var x y z of in.lj (an fcc lattice of 4 atoms per cell, (20x)(20y)(20z) cells)
LJ_VARS = {4000: ("0.5", "0.5", "0.5"), 8000: ("1", "0.5", "0.5"), 16000: ("1", "1", "0.5"),
           32000: ("1", "1", "1"), 64000: ("2", "1", "1"), 128000: ("2", "2", "1")}
HPL_NB = 32  # HPL's block size here: N 512 has 16 panels, N 4096 has 128
WAITSOME_STEPS = "40"  # steps of the waitsome program: a measured span of about a second at n 8
MIN_SPAN_S = 0.5  # a measured span shorter than this is moved by a time slice: such a row is marked
NOISE_LIMIT = 0.02  # the reference kernel's spread above which the run is reported disturbed


@dataclass
class App:
    name: str
    unit: str
    train: tuple[int, ...]
    targets: tuple[int, ...]
    measured: str  # what the measured time is, for the table's footnote


APPS = {
    "lammps": App("lammps", "atoms", (4000, 8000, 16000, 32000), (64000, 128000),
                  "rank 0 MPI_Init..MPI_Finalize"),
    "hpl": App("hpl", "N", (512, 640, 768, 1024), (2048, 4096),
               "HPCC's HPL section (the whole HPL test), the longest rank"),
    "cp2k": App("cp2k", "molecules", (256, 512, 768), (1536, 3072), "rank 0 MPI_Init..MPI_Finalize"),
    "qe": App("qe", "atoms", (8, 16, 24), (48,), "rank 0 MPI_Init..MPI_Finalize"),
    "waitsome": App("waitsome", "n", (2, 3, 4), (8,), "rank 0 MPI_Init..MPI_Finalize"),
}


def machine_info() -> dict:
    """The CPU model and the caches of cpu0 (level, type, size as the kernel prints it)."""
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    caches = []
    for d in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            level, kind, size = ((d / f).read_text().strip() for f in ("level", "type", "size"))
        except OSError:
            continue
        caches.append(f"L{level} {kind.lower()} {size}")
    return {"cpu_model": model, "caches": caches, "cores": os.cpu_count()}


def reference_kernel() -> float:
    """Seconds of a fixed amount of pure-Python arithmetic (400 000 iterations): the same work every time."""
    t0 = time.perf_counter()
    acc = 0
    for i in range(400_000):
        acc += (i * i) % 7
    elapsed = time.perf_counter() - t0
    if acc < 0:  # never: keeps the loop's result used
        print(acc)
    return elapsed


def _kernel_on_core(args: tuple[int, int]) -> float:
    """The median of `times` reference kernels on CPU `core` alone (a pool worker)."""
    core, times = args
    os.sched_setaffinity(0, {core})
    reference_kernel()  # warm-up
    return statistics.median(reference_kernel() for _ in range(times))


def loaded_cores(times: int = 10) -> list[float]:
    """The reference kernel's median on each CPU while every CPU runs it at once, as the benchmark's ranks
    run: one core slower than the others under load (a VM whose virtual cores share a physical one, or
    a neighbour) slows whichever rank lands on it, for a whole run, which a kernel timed alone never sees."""
    cores = sorted(os.sched_getaffinity(0))
    with multiprocessing.get_context("fork").Pool(len(cores)) as pool:
        return pool.map(_kernel_on_core, [(c, times) for c in cores])


def noise_check(times: int = 10) -> dict:
    """The reference kernel timed `times` times: its spread (max - min over the median) says how much
    the machine moves a fixed amount of work right now; and timed on every core at once: the slowest
    core's median over the fastest's says how much a loaded core loses (core_imbalance_pct). Either over
    NOISE_LIMIT marks the run disturbed."""
    reference_kernel()  # warm-up
    t = [reference_kernel() for _ in range(times)]
    med = statistics.median(t)
    spread = (max(t) - min(t)) / med
    per_core = loaded_cores(times)
    imbalance = max(per_core) / min(per_core) - 1
    return {"reference_runs": times, "reference_median_s": med, "reference_spread_pct": 100 * spread,
            "loaded_core_median_s": per_core, "core_imbalance_pct": 100 * imbalance,
            "disturbed": spread > NOISE_LIMIT or imbalance > NOISE_LIMIT}


def library_calibration(gridcast: str, work: Path, quick: bool) -> Path:
    """A copy of the calibration with this machine's library rate curves measured now (the rest kept)."""
    out = work / "calibration.json"
    cmd = [gridcast, "calibrate", "--quiet", "--only-rate-curve", str(CALIBRATION), "-o", str(out)]
    if quick:
        cmd.insert(2, "--quick")
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(f"calibrate failed: {' '.join(cmd)}\n{r.stdout}{r.stderr}")
        raise SystemExit(1)
    print(f"# library rate curves measured ({time.perf_counter() - t0:.0f} s): {out}", flush=True)
    return out


def busy_seconds() -> float:
    """Busy CPU seconds of the whole machine since boot (all cores), from /proc/stat."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    return (sum(values[:8]) - idle) / CLK_TCK


@dataclass
class Run:
    wall_s: float        # the span the prediction covers (see App.measured)
    other_cores: float   # the other processes' mean CPU load during the run
    profile: Path


def waitsome_program() -> Path:
    """The waitsome test program of the build that --gridcast belongs to (TOOLS is its bin/)."""
    return TOOLS.parent / "tests" / "profiler" / "gridcast_mpi_waitsome"


def example_module(name: str):
    """examples/<name>/make_input.py as a module (its write_input(size, run_dir))."""
    spec = importlib.util.spec_from_file_location(name.replace("-", "_"), ROOT / "examples" / name / "make_input.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def app_command(app: App, size: int, run_dir: Path, wrapper: tuple[str, ...] = ()) -> list[str]:
    """The command that runs `app` at `size` at np 2 (its input written into run_dir); `wrapper` goes
    between mpirun's options and the program (each rank runs under it: bench/accuracy/call_count.py)."""
    mpirun = ["mpirun", "-np", "2", "--oversubscribe", "--bind-to", "none", "-x", "OMP_NUM_THREADS=1"]
    if os.geteuid() == 0:
        mpirun.append("--allow-run-as-root")
    mpirun += wrapper
    if app.name == "cp2k":
        inp = example_module("cp2k-water").write_input(size, run_dir)
        return [*mpirun, "cp2k.psmp", "-i", str(inp), "-o", str(run_dir / "cp2k.log")]
    if app.name == "qe":
        inp = example_module("qe-silicon").write_input(size, run_dir)
        return [*mpirun, "pw.x", "-in", str(inp)]
    if app.name == "waitsome":
        return [*mpirun, str(waitsome_program()), str(size), WAITSOME_STEPS]
    if app.name == "lammps":
        x, y, z = LJ_VARS[size]
        return [*mpirun, "lmp", "-in", str(ROOT / "examples" / "lammps-lj" / "in.lj"), "-log", "none",
                "-screen", "none", "-var", "x", x, "-var", "y", y, "-var", "z", z]
    # hpcc reads hpccinf.txt from its working directory: N, a 1 x 2 grid, block size HPL_NB.
    template = (ROOT / "examples" / "hpl-hpcc" / "hpccinf.template").read_text()
    inf = template.replace("@N@", str(size)).replace("@P@", "1").replace("@Q@", "2")
    inf = inf.replace("\n64           NBs\n", f"\n{HPL_NB}           NBs\n")
    (run_dir / "hpccinf.txt").write_text(inf)
    return [*mpirun, "hpcc"]


def profile(gridcast: str, app: App, size: int, out: Path, calibration: Path) -> Run:
    run_dir = out.with_name(out.name + ".run")
    run_dir.mkdir(parents=True, exist_ok=True)
    whole = out.with_name(out.name + ".whole") if app.name == "hpl" else out
    cmd = [gridcast, "profile", "--force", "--nw", str(size), "--out", str(whole), "--calibration", str(calibration), "--",
           *app_command(app, size, run_dir)]
    busy0 = busy_seconds()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=run_dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    busy = busy_seconds() - busy0
    stdout, stderr = proc.stdout.read(), proc.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.stderr.write(f"profile failed: {' '.join(cmd)}\n{stdout}{stderr}")
        raise SystemExit(1)
    other = max(0.0, busy - usage.ru_utime - usage.ru_stime) / wall
    if app.name != "hpl":
        m = re.search(r"^0\s+finalized\s+([0-9.]+)", stdout, re.M)
        if not m:
            sys.stderr.write(f"no rank 0 summary in the output of {' '.join(cmd)}\n{stdout}")
            raise SystemExit(1)
        return Run(float(m.group(1)), other, out)
    # HPL: HPCC's last section, from the grid set-up (HPL_grid_init's three MPI_Comm_split) to the end.
    tail = subprocess.run([str(TOOLS / "gridcast_bench_profile_tail"), str(whole), str(out), "MPI_Comm_split", "3"],
                          capture_output=True, text=True)
    if tail.returncode != 0:
        sys.stderr.write(tail.stdout + tail.stderr)
        raise SystemExit(1)
    shutil.rmtree(whole)  # tens of millions of HPCC's polls: not kept
    spans = [float(x) for x in re.findall(r"records, ([0-9.eE+-]+) s", tail.stdout)]
    return Run(max(spans), other, out)


def undisturbed(gridcast: str, app: App, size: int, work: Path, tag: str, want: int, tries: int,
                max_other: float, shortest: bool, calibration: Path) -> tuple[list[Run], bool]:
    """Runs until `want` runs saw at most max_other cores of foreign load or `tries` runs were made.
    Returns the kept runs (the undisturbed ones, else the `want` least disturbed) and whether they all
    were undisturbed. Least disturbed: with `shortest` (training), the `want` shortest spans, since a
    disturbance only adds time to the same work and the machine's foreign load does not say which run it
    hit (docs/reference/latency-model.md, "A median per call, and what moved the HPL prediction"); else
    (measurement, whose median must not be biased low) the least foreign load."""
    runs: list[Run] = []
    for k in range(tries):
        runs.append(profile(gridcast, app, size, work / f"{app.name}-{tag}-{size}-{k}", calibration))
        quiet = [r for r in runs if r.other_cores <= max_other]
        if len(quiet) >= want:
            return quiet[:want], True
    return sorted(runs, key=(lambda r: r.wall_s) if shortest else (lambda r: r.other_cores))[:want], False


def rate_model_line(train: list[str], target: Path) -> str:
    """The rank footprints of the training profiles and of a measured one, and the factor a rate model
    (compute charged at the host's rate for the footprint, bench/accuracy/rate_model_effect.py) would
    apply at the target: information, the prediction does not use it."""
    try:
        points = [rate_model_effect.describe(Path(t)) for t in train]
        nw, fp, rate = rate_model_effect.describe(target)
    except SystemExit as e:  # describe() exits with the reason when a profile lacks the data
        return f"rate model at {target.name}: not evaluated ({str(e).split(': ', 1)[-1]})"
    return (f"footprints (MB/rank) {' '.join(f'{p[1] / 1e6:.1f}' for p in points)} -> {fp / 1e6:.1f} at {nw:g}; "
            f"rate model factor {rate_model_effect.factor(points, fp, rate):.3f} (rate at the nearest training "
            "footprint / at the target's)")


def run_app(args: argparse.Namespace, app: App, work: Path, calibration: Path) -> list[tuple]:
    """The rows of one application: (app, size, x train, predicted, measured, error %, quiet, runs, other)
    or (app, message) when its model could not be fitted or predicted."""
    train: list[str] = []
    for size in app.train:
        runs, quiet = undisturbed(args.gridcast, app, size, work, "train", args.train_runs,
                                  max(args.attempts, args.train_runs), args.max_other_cores, True, calibration)
        print(f"  {app.name}: trained at {app.unit} {size:>6}: {' '.join(f'{r.wall_s:.4f}' for r in runs)} s, "
              f"other load {max(r.other_cores for r in runs):.2f} cores"
              f"{'' if quiet else ' (disturbed: the shortest of ' + str(max(args.attempts, args.train_runs)) + ')'}",
              flush=True)
        train += [str(r.profile) for r in runs]
    train_one = [t for i, t in enumerate(train) if i % args.train_runs == 0]  # one per size: the footprints
    model = work / f"{app.name}-model.json"
    t0 = time.perf_counter()
    fit = subprocess.run([args.gridcast, "fit", *train, "-o", str(model)], capture_output=True, text=True)
    if fit.returncode != 0:
        reason = (fit.stderr.strip().splitlines() or ["?"])[-1]
        print(f"  {app.name}: fit failed: {reason}", flush=True)
        return [(app.name, f"fit failed: {reason}")]
    print(f"  {app.name}: fit ({time.perf_counter() - t0:.1f} s): " +
          "; ".join(l.strip() for l in fit.stdout.splitlines() if "latency" in l or "group" in l or "priced" in l),
          flush=True)
    rows = []
    for size in app.targets:
        out = subprocess.run([args.gridcast, "predict", str(model), "--nw", str(size), "--np", "2",
                              "--platform", str(PLATFORM), "--ranks-per-host", "2", "--no-timeline"],
                             capture_output=True, text=True)
        if out.returncode != 0:
            reason = (out.stderr.strip().splitlines() or ["?"])[-1]
            print(f"  {app.name}: predict at {size} failed: {reason}", flush=True)
            rows.append((app.name, f"predict at {size} failed: {reason}"))
            continue
        predicted = float(re.search(r"makespan: ([0-9.eE+-]+) s", out.stdout).group(1))
        runs, quiet = undisturbed(args.gridcast, app, size, work, "measure", args.reps, 3 * args.reps,
                                  args.max_other_cores, False, calibration)
        measured = statistics.median(r.wall_s for r in runs)
        print(f"  {app.name}: {rate_model_line(train_one, runs[0].profile)}", flush=True)
        rows.append((app.name, size, size / app.train[-1], predicted, measured,
                     100 * (predicted - measured) / measured, quiet, [r.wall_s for r in runs],
                     max(r.other_cores for r in runs)))
    return rows


def main() -> int:
    global TOOLS  # the profile cut tool next to the gridcast given (build/bin by default)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--gridcast", default=str(TOOLS / "gridcast"), help="the gridcast binary")
    ap.add_argument("--apps", default=",".join(APPS), help=f"comma-separated: {', '.join(APPS)} (default all)")
    ap.add_argument("--reps", type=int, default=3, help="measured runs per target size (median), default 3")
    ap.add_argument("--train-runs", type=int, default=5,
                    help="training profiles per size given to the fit (default 5: the fit takes each call's "
                         "median over them; 1 was the behaviour before)")
    ap.add_argument("--attempts", type=int, default=8,
                    help="training runs per size at most (at least --train-runs); the undisturbed ones are "
                         "kept, else the --train-runs shortest (default 8)")
    ap.add_argument("--max-other-cores", type=float, default=0.3,
                    help="foreign CPU load (cores) above which a run is disturbed (default 0.3)")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here (bench/results/ shape)")
    ap.add_argument("--keep", type=Path, help="keep the profiles and the models in this directory")
    ap.add_argument("--cycles", type=int, default=3,
                    help="whole train-fit-predict-measure cycles (default 3: the spread of the predictions "
                         "across retrainings is part of the result)")
    ap.add_argument("--quick-calibration", action="store_true",
                    help="measure the library rate curves with `gridcast calibrate --quick` (to 4 MiB)")
    args = ap.parse_args()
    if args.train_runs < 1:
        ap.error("--train-runs: at least 1")
    if args.cycles < 1:
        ap.error("--cycles: at least 1")
    names = [a for a in args.apps.split(",") if a]
    unknown = [a for a in names if a not in APPS]
    if unknown or not names:
        ap.error(f"--apps: unknown application(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(APPS)}")
    TOOLS = Path(args.gridcast).resolve().parent
    hook = Path(args.gridcast).resolve().parent.parent / "lib" / "libgridcast-hook.so"
    if not Path(args.gridcast).exists() or not hook.exists() or not shutil.which("mpirun"):
        print("real_size: needs gridcast, build/lib/libgridcast-hook.so and mpirun", file=sys.stderr)
        return 77
    apps = []
    for n in names:
        missing = {"lammps": [] if shutil.which("lmp") else ["lmp"],
                   "hpl": ([] if shutil.which("hpcc") else ["hpcc"]) +
                          ([] if (TOOLS / "gridcast_bench_profile_tail").exists() else ["gridcast_bench_profile_tail"]),
                   "cp2k": [] if shutil.which("cp2k.psmp") else ["cp2k.psmp"],
                   "qe": [] if shutil.which("pw.x") else ["pw.x"],
                   "waitsome": [] if waitsome_program().exists() else [str(waitsome_program())]}[n]
        if missing:
            print(f"real_size: skipping {n}: {', '.join(missing)} not found", file=sys.stderr)
        else:
            apps.append(APPS[n])
    if not apps:
        return 77
    machine = machine_info()
    noise = noise_check()
    print(f"# real_size: np 2 on this machine: {machine['cpu_model']}, {machine['cores']} cores, caches "
          f"{', '.join(machine['caches']) or '?'}; load average {os.getloadavg()[0]:.2f} at the start", flush=True)
    print(f"# noise check: a fixed reference kernel timed {noise['reference_runs']} times, median "
          f"{1e3 * noise['reference_median_s']:.1f} ms, spread {noise['reference_spread_pct']:.1f}%; on every core at "
          f"once, medians {' '.join(f'{1e3 * x:.1f}' for x in noise['loaded_core_median_s'])} ms, the slowest "
          f"{noise['core_imbalance_pct']:.1f}% over the fastest (limit {100 * NOISE_LIMIT:.0f}% each): "
          f"{'DISTURBED: the figures below say what a busy machine gives' if noise['disturbed'] else 'quiet'}",
          flush=True)
    rows: list[tuple] = []  # (cycle, row)
    cycle_s: list[float] = []
    with tempfile.TemporaryDirectory(prefix="gridcast-real-size-") as tmp:
        work = args.keep or Path(tmp)
        work_root = str(work)
        work.mkdir(parents=True, exist_ok=True)
        calibration = library_calibration(args.gridcast, work, args.quick_calibration)
        print(f"# a run is disturbed when other processes use > {args.max_other_cores} cores", flush=True)
        for cycle in range(1, args.cycles + 1):
            t0 = time.perf_counter()
            print(f"\n## cycle {cycle} of {args.cycles}: train, fit, predict, measure", flush=True)
            cycle_dir = work / f"cycle-{cycle}"
            cycle_dir.mkdir(parents=True, exist_ok=True)
            these = []
            for app in apps:
                these += run_app(args, app, cycle_dir, calibration)
            cycle_s.append(time.perf_counter() - t0)
            print_table(these, f"cycle {cycle} ({cycle_s[-1]:.0f} s)")
            rows += [(cycle, r) for r in these]
    for app in apps:
        print(f"  {app.name}: trained at {app.unit} {', '.join(map(str, app.train))}; measured: {app.measured}")
    spreads = prediction_spreads(rows)
    if spreads:
        print("\nspread of the predictions over the cycles ((max - min) / mean):")
        for (name, size), sp in spreads.items():
            print(f"  {name} {size}: {sp['spread_pct']:.1f}% ({' '.join(f'{p:.4f}' for p in sp['predicted_s'])} s)")
    per_cycle = []
    for cycle in range(1, args.cycles + 1):
        errs = [abs(r[5]) for c, r in rows if c == cycle and len(r) > 2]
        if errs:
            per_cycle.append({"run": cycle, "mean_abs_error_pct": round(statistics.mean(errs), 2),
                              "max_abs_error_pct": round(max(errs), 2), "seconds": round(cycle_s[cycle - 1])})
    if noise["disturbed"]:
        print(f"\nDISTURBED: the reference kernel's spread was {noise['reference_spread_pct']:.1f}% and its slowest "
              f"core under load {noise['core_imbalance_pct']:.1f}% over the fastest (limit {100 * NOISE_LIMIT:.0f}% "
              f"each): re-run on an idle machine for figures that say what gridcast does")
    if args.json:
        results_json.write(args.json, "real_size", [
            {"app": r[0], "size": r[1], "x_train": r[2], "run": c, "predicted_s": r[3], "measured_s": r[4],
             "error_pct": r[5], "undisturbed": r[6], "runs_s": list(r[7]), "other_cores": r[8],
             "short_span": r[4] < MIN_SPAN_S} for c, r in rows if len(r) > 2],
            {"points": len({(r[0], r[1]) for _, r in rows if len(r) > 2}), "runs": args.cycles, "np": 2,
             "per_run": per_cycle, "prediction_spread_pct": {f"{n} {sz}": round(sp["spread_pct"], 2)
                                                             for (n, sz), sp in spreads.items()},
             "machine": machine, "noise": noise, "disturbed": noise["disturbed"],
             "not_predicted": sorted({f"{r[0]}: {why_not(r[1], work_root)}" for _, r in rows if len(r) == 2}),
             "target_mean_pct": 5, "target_max_pct": 10, "target_spread_pct": 5})
    return 0


def why_not(message: str, work_root: str) -> str:
    """A failed step's message without the scratch paths of one cycle (the same reason in every cycle reads
    the same): `<work>/cycle-2/qe-train-24-0:4667: key ...` -> `qe-train-24-0:4667: key ...`."""
    return re.sub(re.escape(work_root) + r"/cycle-\d+/", "", message)


def print_table(rows: list[tuple], title: str) -> None:
    print(f"\n{title}\n{'app':<8} {'size':>7} {'x train':>7} {'predicted s':>12} {'measured s':>11} {'error':>8}  "
          f"{'runs (s)':<26} other_cores")
    for row in rows:
        if len(row) == 2:
            print(f"{row[0]:<8} {row[1]}")
            continue
        name, size, ratio, p, m, e, quiet, walls, other = row
        runs_text = " ".join(f"{w:.3f}" for w in walls)
        print(f"{name:<8} {size:>7} {ratio:>7.0f} {p:>12.4f} {m:>10.4f}{'' if quiet else '*'}"
              f"{'' if m >= MIN_SPAN_S else '<'} {e:>+7.1f}%  {runs_text:<26} {other:.2f}")
    errs = [abs(r[5]) for r in rows if len(r) > 2]
    if errs:
        print(f"mean |error| {statistics.mean(errs):.1f}%, max {max(errs):.1f}%, over {len(errs)} point(s) "
              f"(np 2; measured: median of the profiled runs; target 5% mean, 10% max)")
    if any(len(r) > 2 and not r[6] for r in rows):
        print("* fewer undisturbed runs than --reps: the least disturbed were used")
    if any(len(r) > 2 and r[4] < MIN_SPAN_S for r in rows):
        print(f"< measured span under {MIN_SPAN_S} s: a time slice moves it by several percent")


def prediction_spreads(rows: list[tuple]) -> dict:
    """(app, size) -> the predictions of every cycle and their spread, (max - min) / mean in percent."""
    by_point: dict = {}
    for _, r in rows:
        if len(r) > 2:
            by_point.setdefault((r[0], r[1]), []).append(r[3])
    return {k: {"predicted_s": v, "spread_pct": 100 * (max(v) - min(v)) / statistics.mean(v)}
            for k, v in by_point.items() if len(v) > 1}


if __name__ == "__main__":
    sys.exit(main())
