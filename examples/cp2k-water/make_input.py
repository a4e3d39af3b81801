#!/usr/bin/env python3
"""Writes a CP2K force-field (FIST) molecular-dynamics input for a box of water molecules.

    python3 examples/cp2k-water/make_input.py MOLECULES [--steps 20] [--dir RUN_DIR]
    mpirun -np 2 cp2k.psmp -i RUN_DIR/run.inp -o RUN_DIR/cp2k.log

The molecules (a multiple of 64) sit on a simple cubic lattice of 3.104 Angstrom (1 g/cm^3), 8 x 8 in x
and y, MOLECULES / 64 layers along z, all in the same orientation; the box is the lattice's. The
force field is a flexible SPC/E-like water (harmonic O-H bonds and H-O-H bend, Lennard-Jones between
oxygens, 8 Angstrom cut-off) with smooth particle-mesh Ewald electrostatics on a grid of about one
point per Angstrom on each axis (so the FFT grid grows with the box). Writes RUN_DIR/run.inp (from
water.inp beside this script) and RUN_DIR/water.xyz.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

SPACING_A = 3.104   # lattice spacing, Angstrom: one molecule per 29.9 A^3 is 1 g/cm^3
OH_A = 0.9572       # O-H bond length, Angstrom
HOH_DEG = 104.52    # H-O-H angle, degrees
LAYER = 8 * 8       # molecules per layer along z


def write_input(molecules: int, run_dir: Path, steps: int = 20) -> Path:
    """Writes run.inp and water.xyz into run_dir; returns the input's path."""
    if molecules < LAYER or molecules % LAYER:
        raise ValueError(f"molecules: {molecules} is not a positive multiple of {LAYER}")
    if steps < 1:
        raise ValueError(f"steps: {steps} is not positive")
    n = (8, 8, molecules // LAYER)
    half = math.radians(HOH_DEG) / 2
    dx, dy = OH_A * math.sin(half), OH_A * math.cos(half)
    lines = []
    for i in range(n[0]):
        for j in range(n[1]):
            for k in range(n[2]):
                x, y, z = ((c + 0.5) * SPACING_A for c in (i, j, k))
                lines += [f"O {x:.4f} {y:.4f} {z:.4f}", f"H {x + dx:.4f} {y + dy:.4f} {z:.4f}",
                          f"H {x - dx:.4f} {y + dy:.4f} {z:.4f}"]
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "water.xyz").write_text(f"{len(lines)}\nwater, {molecules} molecules\n" + "\n".join(lines) + "\n")
    box = [c * SPACING_A for c in n]
    grid = [2 * math.ceil(length / 2) for length in box]  # even sizes, about 1 point per Angstrom
    template = (Path(__file__).resolve().parent / "water.inp").read_text()
    text = (template.replace("@STEPS@", str(steps))
            .replace("@ABC@", " ".join(f"{length:.4f}" for length in box))
            .replace("@GMAX@", " ".join(map(str, grid))))
    out = run_dir / "run.inp"
    out.write_text(text)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("molecules", type=int, help="water molecules (a multiple of 64)")
    ap.add_argument("--steps", type=int, default=20, help="MD steps (default 20)")
    ap.add_argument("--dir", type=Path, default=Path("."), help="where to write run.inp and water.xyz")
    args = ap.parse_args()
    try:
        print(write_input(args.molecules, args.dir, args.steps))
    except ValueError as e:
        print(f"make_input.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
