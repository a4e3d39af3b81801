"""Shared helpers of bench/replay_speed.py and bench/smpi_agreement.py (python3, stdlib only).

Running the three replayers on one trace, measuring a child process, and the SMPI 3.32 quirks both
scripts must work around:
  * `smpirun -replay INDEX` opens the per-rank paths of the index relative to its *working
    directory*, so it runs from the index's folder (gridcast and the S4U baseline resolve them
    beside the index).
  * SMPI's tracer writes MPI_ANY_SOURCE as -333 (MPI_UNDEFINED) but its replay only matches -555:
    such a trace deadlocks under `smpirun -replay` (exit code 0, "Deadlock detected"). For smpirun
    we replay a copy where wildcard sources read -555; gridcast gets the trace as recorded.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import gen_cluster  # noqa: E402  (scripts/ is not a package)
import gen_tit  # noqa: E402

DEFAULT_GRIDCAST = REPO / "build" / "bin" / "gridcast"
DEFAULT_S4U = REPO / "build" / "bin" / "gridcast_bench_s4u_ring"
SMPIRUN = "smpirun"
# smpirun always passes these two; the other replayers get them too so that all run the same model.
SMPIRUN_IMPLICIT_CFG = ("network/model:SMPI", "surf/precision:1e-9")

POINT_TO_POINT_ACTIONS = frozenset(
    {"init", "finalize", "compute", "sleep", "send", "isend", "recv", "irecv", "wait", "waitall", "test",
     "comm_size", "comm_split", "comm_dup", "location"})
WILDCARD_LINE = re.compile(r"^(\S+ i?recv) -333 ", re.MULTILINE)
SMPI_TIME = re.compile(r"Simulated time: ([0-9.eE+-]+) seconds")
GRIDCAST_MAKESPAN = re.compile(r"^makespan: ([0-9.eE+-]+) s", re.MULTILINE)
SMPI_FAILURE = ("Deadlock detected", "Stalling SMPI instance", "Execution failed")


# ---------------------------------------------------------------------------------------------------
# Traces


def trace_files(index: Path) -> list[Path]:
    """Per-rank files of a TIT index, resolved beside the index first, then from the cwd."""
    files = []
    for line in index.read_text().splitlines():
        entry = line.strip()
        if not entry:
            continue
        p = Path(entry)
        if not p.is_absolute() and (index.parent / p).exists():
            p = index.parent / p
        files.append(p)
    return files


def count_events(index: Path) -> int:
    """Events = trace actions replayed = non-blank lines of the per-rank files (init/finalize too)."""
    total = 0
    for f in trace_files(index):
        with open(f, "rb") as fh:
            total += sum(1 for line in fh if line.strip())
    return total


def action_names(index: Path) -> set[str]:
    names: set[str] = set()
    for f in trace_files(index):
        with open(f) as fh:
            for line in fh:
                parts = line.split(None, 2)
                if len(parts) >= 2:
                    names.add(parts[1])
    return names


def is_point_to_point_only(index: Path) -> bool:
    return action_names(index) <= POINT_TO_POINT_ACTIONS


@dataclass
class SmpiInput:
    """How to hand a trace to smpirun: the working directory and the index argument."""
    cwd: Path
    index_arg: str
    rewritten_wildcards: int = 0


def smpi_input(index: Path, scratch: Path) -> SmpiInput:
    """Make `index` replayable by smpirun -replay (see the module comment): run from its folder when
    every entry resolves there and no wildcard needs rewriting, else write a fixed copy in scratch."""
    index = index.resolve()
    entries = [line.strip() for line in index.read_text().splitlines() if line.strip()]
    files = trace_files(index)
    texts = {}
    rewritten = 0
    for f in files:
        text = f.read_text()
        fixed, n = WILDCARD_LINE.subn(r"\1 -555 ", text)
        if n:
            texts[f] = fixed
            rewritten += n
    beside = all(not Path(e).is_absolute() and (index.parent / e).exists() for e in entries)
    if beside and not rewritten:
        return SmpiInput(index.parent, index.name)
    out = scratch / (index.stem + "-smpi")
    if out.exists():
        shutil.rmtree(out)
    (out / "files").mkdir(parents=True)
    lines = []
    for rank, f in enumerate(files):
        if f in texts:
            dst = out / "files" / f"rank-{rank + 1}.txt"
            dst.write_text(texts[f])
            lines.append(str(dst))
        else:
            lines.append(str(f.resolve()))
    (out / "trace.txt").write_text("\n".join(lines) + "\n")
    return SmpiInput(out, "trace.txt", rewritten)


# ---------------------------------------------------------------------------------------------------
# Scenarios


@dataclass
class Scenario:
    name: str
    index: Path
    platform: Path
    hostfile: Path
    np: int
    events: int = 0
    point_to_point_only: bool = True
    note: str = ""


def _stamp(**params) -> str:
    """Identity of generated inputs: their parameters and the generators' source, so that a change
    to either regenerates them."""
    h = hashlib.sha256()
    for script in (gen_tit.__file__, gen_cluster.__file__):
        h.update(Path(script).read_bytes())
    return json.dumps({"params": params, "generators": h.hexdigest()}, sort_keys=True)


def generated_scenario(work: Path, name: str, pattern: str, np_: int, iters: int, nbytes: int,
                       flops: float, allreduce: bool | None = None, cluster: dict | None = None) -> Scenario:
    """Generate (or reuse, when nothing changed) a gen_tit trace and a cluster for np ranks."""
    trace_dir = work / "traces" / name
    stamp = _stamp(pattern=pattern, np=np_, iters=iters, bytes=nbytes, flops=flops, allreduce=allreduce)
    stamp_file = trace_dir / "stamp.json"
    if not stamp_file.exists() or stamp_file.read_text() != stamp:
        gen_tit.generate(trace_dir, pattern, np_, iters, nbytes, flops, allreduce=allreduce)
        stamp_file.write_text(stamp)
    meta = json.loads((trace_dir / "gen_tit.json").read_text())

    cluster = dict(cluster or {})
    hosts = -(-np_ // cluster.get("ranks_per_host", 1))
    cdir = work / "platforms" / (f"cluster-{hosts}" + "".join(f"-{k}{v}" for k, v in sorted(cluster.items())))
    cstamp = _stamp(hosts=hosts, **cluster)
    if not (cdir / "stamp.json").exists() or (cdir / "stamp.json").read_text() != cstamp:
        gen_cluster.write_cluster(cdir, hosts=hosts, **cluster)
        (cdir / "stamp.json").write_text(cstamp)
    index = trace_dir / "trace.txt"
    return Scenario(name, index, cdir / "platform.xml", cdir / "hostfile", np_, count_events(index),
                    meta["point_to_point_only"], f"{pattern} np={np_} iters={iters} bytes={nbytes} flops={flops:g}")


def example_scenario(folder: Path) -> Scenario:
    index = folder / "trace" / "trace.txt"
    np_ = len(trace_files(index))
    return Scenario(f"examples/{folder.name}", index, folder / "platform.xml", folder / "hostfile", np_,
                    count_events(index), is_point_to_point_only(index), "recorded with smpirun -trace-ti")


# ---------------------------------------------------------------------------------------------------
# Measuring a child


@dataclass
class Measure:
    returncode: int
    wall_s: float
    cpu_s: float      # user + sys of the child and its waited-for descendants
    maxrss_mib: float  # peak resident set of the largest of them
    output: str
    timed_out: bool = False


def run_measured(cmd: list[str], cwd: Path | None = None, timeout: float = 600.0) -> Measure:
    """Run cmd, returning its wall time and the rusage that wait4 reports for it. smpirun is a shell
    script that waits for smpimain, so its rusage includes the simulator."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        fired = threading.Event()

        def kill() -> None:
            fired.set()
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode(errors="replace")
    return Measure(proc.returncode, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0, text,
                   fired.is_set())


# ---------------------------------------------------------------------------------------------------
# The three replayers


@dataclass
class Outcome:
    tool: str
    ok: bool
    makespan_s: float | None = None
    measure: Measure | None = None
    error: str = ""
    extra: dict = field(default_factory=dict)


def tail(text: str, lines: int = 3) -> str:
    """The last lines of a child's output, without SimGrid's configuration echo."""
    kept = [ln for ln in text.strip().splitlines() if "Configuration change" not in ln]
    return " | ".join(kept[-lines:])


def run_smpirun(sc: Scenario, scratch: Path, privatize: bool = False, extra_cfg: tuple[str, ...] = (),
                timeout: float = 600.0) -> Outcome:
    inp = smpi_input(sc.index, scratch)
    cmd = [SMPIRUN, "-np", str(sc.np)]
    if not privatize:
        cmd.append("-no-privatize")  # a replay has no application globals; this is smpirun's fast mode
    cmd += ["-platform", str(sc.platform.resolve()), "-hostfile", str(sc.hostfile.resolve()),
            "-replay", inp.index_arg, "--cfg=smpi/display-timing:yes"]
    cmd += [f"--cfg={c}" for c in extra_cfg]
    m = run_measured(cmd, inp.cwd, timeout)
    extra = {"rewritten_wildcards": inp.rewritten_wildcards} if inp.rewritten_wildcards else {}
    if m.timed_out:
        return Outcome("smpirun", False, None, m, f"timed out after {timeout:g} s", extra)
    failure = next((s for s in SMPI_FAILURE if s in m.output), None)
    found = SMPI_TIME.findall(m.output)
    if m.returncode != 0 or failure or not found:
        return Outcome("smpirun", False, None, m, failure or f"exit {m.returncode}: {tail(m.output)}", extra)
    return Outcome("smpirun", True, float(found[-1]), m, "", extra)


def is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def run_gridcast(gridcast: Path, sc: Scenario, out_dir: Path, cfg: tuple[str, ...] = SMPIRUN_IMPLICIT_CFG,
                 extra_args: tuple[str, ...] = (), timeout: float = 600.0) -> Outcome:
    if not is_executable(gridcast):
        return Outcome("gridcast", False, error="not built")
    if out_dir.exists():
        shutil.rmtree(out_dir)
    cmd = [str(gridcast), "replay", str(sc.index.resolve()), "--platform", str(sc.platform.resolve()),
           "--hostfile", str(sc.hostfile.resolve()), "--out", str(out_dir)]
    for c in cfg:
        cmd += ["--cfg", c]
    cmd += list(extra_args)
    m = run_measured(cmd, None, timeout)
    if m.timed_out:
        return Outcome("gridcast", False, None, m, f"timed out after {timeout:g} s")
    if m.returncode != 0:
        return Outcome("gridcast", False, None, m, f"exit {m.returncode}: {tail(m.output)}")
    makespan = None
    prediction = out_dir / "prediction.json"
    if prediction.exists():
        try:
            makespan = float(json.loads(prediction.read_text())["makespan_s"])
        except (ValueError, KeyError, TypeError):
            makespan = None
    if makespan is None:
        found = GRIDCAST_MAKESPAN.findall(m.output)
        makespan = float(found[-1]) if found else None
    if makespan is None:
        return Outcome("gridcast", False, None, m, "no makespan in prediction.json nor on stdout")
    return Outcome("gridcast", True, makespan, m)


def run_s4u(s4u: Path, sc: Scenario, cfg: tuple[str, ...] = SMPIRUN_IMPLICIT_CFG,
            timeout: float = 600.0) -> Outcome:
    if not is_executable(s4u):
        return Outcome("s4u", False, error="not built")
    cmd = [str(s4u), str(sc.platform.resolve()), str(sc.hostfile.resolve()), str(sc.index.resolve())]
    cmd += [f"--cfg={c}" for c in cfg]
    m = run_measured(cmd, None, timeout)
    if m.timed_out:
        return Outcome("s4u", False, None, m, f"timed out after {timeout:g} s")
    found = SMPI_TIME.findall(m.output)
    if m.returncode != 0 or not found:
        return Outcome("s4u", False, None, m, f"exit {m.returncode}: {tail(m.output)}")
    return Outcome("s4u", True, float(found[-1]), m)
