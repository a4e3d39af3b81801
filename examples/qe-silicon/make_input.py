#!/usr/bin/env python3
"""Writes a Quantum ESPRESSO (pw.x) self-consistent-field input for a supercell of diamond silicon.

    python3 examples/qe-silicon/make_input.py ATOMS [--dir RUN_DIR]
    mpirun -np 2 pw.x -in RUN_DIR/si.in

ATOMS (a multiple of 8) is 1 x 1 x ATOMS/8 conventional cubic cells (a = 10.26 bohr) of 8 atoms each,
stacked along z. Local-density pseudopotential Si.pz-vbc.UPF from Debian's quantum-espresso-data
(/usr/share/espresso/pseudo), 14 Ry wave-function cut-off, the Gamma point as a 1 x 1 x 1 k-point grid,
Davidson diagonalisation, converged to 1e-8 Ry. Writes RUN_DIR/si.in; pw.x's scratch goes to
RUN_DIR/tmp and nothing is written to disk between iterations (disk_io 'none').

How many SCF iterations the run takes, and how many Davidson iterations each of them takes, depends on
the data (10, 9 and 12 SCF iterations at 8, 16 and 24 atoms): the code path is not a function of the
size alone.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

PSEUDO_DIR = Path("/usr/share/espresso/pseudo")
CELL = [(0, 0, 0), (0, .5, .5), (.5, 0, .5), (.5, .5, 0),
        (.25, .25, .25), (.25, .75, .75), (.75, .25, .75), (.75, .75, .25)]  # diamond, crystal units


def write_input(atoms: int, run_dir: Path) -> Path:
    """Writes si.in into run_dir; returns its path."""
    if atoms < len(CELL) or atoms % len(CELL):
        raise ValueError(f"atoms: {atoms} is not a positive multiple of {len(CELL)}")
    nz = atoms // len(CELL)
    positions = "\n".join(f"Si {x:.6f} {y:.6f} {(z + k) / nz:.6f}" for k in range(nz) for x, y, z in CELL)
    run_dir.mkdir(parents=True, exist_ok=True)
    out = run_dir / "si.in"
    out.write_text(f"""&CONTROL
  calculation = 'scf'
  pseudo_dir = '{PSEUDO_DIR}'
  outdir = './tmp'
  disk_io = 'none'
/
&SYSTEM
  ibrav = 8, celldm(1) = 10.26, celldm(2) = 1.0, celldm(3) = {nz}.0
  nat = {atoms}, ntyp = 1, ecutwfc = 14.0
/
&ELECTRONS
  conv_thr = 1.0d-8
  diagonalization = 'david'
/
ATOMIC_SPECIES
Si 28.086 Si.pz-vbc.UPF
ATOMIC_POSITIONS crystal
{positions}
K_POINTS automatic
1 1 1 0 0 0
""")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("atoms", type=int, help="silicon atoms (a multiple of 8)")
    ap.add_argument("--dir", type=Path, default=Path("."), help="where to write si.in")
    args = ap.parse_args()
    try:
        print(write_input(args.atoms, args.dir))
    except ValueError as e:
        print(f"make_input.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
