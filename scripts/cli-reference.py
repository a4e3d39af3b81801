#!/usr/bin/env python3
"""Write docs/reference/cli.md from the `--help` of the gridcast program, so that the page is never a stale
copy of the options.

    python3 scripts/cli-reference.py build/bin/gridcast            # rewrite docs/reference/cli.md
    python3 scripts/cli-reference.py build/bin/gridcast --check    # exit 1 when the page differs

Exit 0 written / up to date, 1 differs (--check), 2 the program failed (named).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "reference" / "cli.md"
# The order of the page: the commands a newcomer meets first.
COMMANDS = [["replay"], ["predict"], ["phases"], ["fit"], ["synth"], ["profile"], ["import", "tit"], ["convert"],
            ["calibrate"], ["platform"], ["study"], ["study", "run"], ["study", "submit"], ["study", "status"],
            ["study", "collect"], ["gpu-cache"], ["diff"], ["algorithms"], ["version"]]
HEAD = """# Command-line reference

`gridcast <command> [options]`. Exit codes: 0 success, 1 bad input or a run that cannot finish (the
message names the file, line, key or rank), 2 internal error. Every command explains its options with
`--help`; this page is that text, one section per command, written by `scripts/cli-reference.py` (a test
fails when it differs from the program's). Formats of the files read and written:
[the reference pages](../README.md#reference); `--cfg` keys: [cfg.md](cfg.md).
"""


def help_text(gridcast: str, args: list[str]) -> str:
    r = subprocess.run([gridcast, *args, "--help"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"cli-reference: `gridcast {' '.join(args)} --help` exited {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def render(gridcast: str) -> str:
    out = [HEAD, "```", help_text(gridcast, []).rstrip("\n"), "```", ""]
    for args in COMMANDS:
        out += [f"## `gridcast {' '.join(args)}`", "", "```", help_text(gridcast, args).rstrip("\n"), "```", ""]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gridcast", help="the gridcast program")
    ap.add_argument("--check", action="store_true", help="exit 1 when docs/reference/cli.md differs")
    a = ap.parse_args()
    text = render(a.gridcast)
    if a.check:
        if PAGE.read_text() != text:
            print(f"cli-reference: {PAGE} differs from `gridcast --help`: run "
                  f"python3 scripts/cli-reference.py {a.gridcast}", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
