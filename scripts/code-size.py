#!/usr/bin/env python3
"""The size limits a newcomer can rely on (issue 16, docs/architecture.md "Size limits"), checked.

    python3 scripts/code-size.py [ROOT] [--max-function-lines N] [--max-class-lines N] [--max-file-lines N]

Every C++ definition of the product code (every top-level folder with a CMakeLists.txt but tests/, bench/,
examples/, packaging/, platforms/ and build trees) is located by Universal Ctags, which gives each function, class and struct its first and last
line. Fails (exit 1), listing each offender with its file and line, when
  - a .cpp or .hpp of emulator/ or models/ has more than 1,000 lines;
  - a class or struct anywhere in the product code spans more than 400 lines;
  - a function or method spans more than 150 lines.
Lines are counted from the definition's first line to its closing brace, comments and blank lines included,
as a reader meets them. Exit 2 when ctags cannot be run (scripts/install-deps.sh installs universal-ctags).
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

MAX_FILE_LINES = 1000  # emulator/ and models/
MAX_CLASS_LINES = 400
MAX_FUNCTION_LINES = 150
# Top-level folders with a CMakeLists.txt that hold no product code: the test suite, the benches, packaging
# and the platforms' regeneration.
NOT_PRODUCT = {"tests", "bench", "packaging", "platforms"}
FILE_LIMIT_DIRS = ("emulator", "models")
SOURCE_SUFFIXES = {".cpp", ".hpp", ".h", ".cc", ".cu"}


def product_dirs(root: Path) -> list[Path]:
    """The components: top-level folders with a CMakeLists.txt (not build trees or outputs left in the tree)."""
    return sorted(d for d in root.iterdir()
                  if d.is_dir() and (d / "CMakeLists.txt").is_file() and not d.name.startswith((".", "build"))
                  and d.name not in NOT_PRODUCT)


def definitions(root: Path, dirs: list[Path]) -> list[dict]:
    ctags = shutil.which("ctags")
    if ctags is None:
        print("code-size: ctags not found (apt-get install universal-ctags)", file=sys.stderr)
        sys.exit(2)
    cmd = [ctags, "--output-format=json", "--fields=+ne", "--kinds-c++=cfs", "--languages=C++",
           "--langmap=C++:+.cu", "-R", "-f", "-", *[str(d.relative_to(root)) for d in dirs]]
    run = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    if run.returncode != 0 or not run.stdout.startswith("{"):
        print(f"code-size: {' '.join(cmd)} failed: {run.stderr.strip()[:300]} (Universal Ctags with JSON output "
              "is needed: apt-get install universal-ctags)", file=sys.stderr)
        sys.exit(2)
    return [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", nargs="?", type=Path, default=Path(__file__).resolve().parent.parent)
    ap.add_argument("--max-function-lines", type=int, default=MAX_FUNCTION_LINES)
    ap.add_argument("--max-class-lines", type=int, default=MAX_CLASS_LINES)
    ap.add_argument("--max-file-lines", type=int, default=MAX_FILE_LINES)
    args = ap.parse_args()
    root = args.root.resolve()
    dirs = product_dirs(root)
    problems = []
    for d in FILE_LIMIT_DIRS:
        for f in sorted((root / d).rglob("*")):
            if f.suffix in SOURCE_SUFFIXES and f.is_file():
                n = len(f.read_text(errors="replace").splitlines())
                if n > args.max_file_lines:
                    problems.append(f"{f.relative_to(root)}: {n} lines (at most {args.max_file_lines} in {d}/)")
    counted = 0
    for t in definitions(root, dirs):
        if "end" not in t:
            continue
        counted += 1
        span = t["end"] - t["line"] + 1
        limit = args.max_function_lines if t["kind"] == "function" else args.max_class_lines
        if span > limit:
            scope = f"{t['scope']}::" if t.get("scope") and not t["scope"].startswith("__anon") else ""
            problems.append(f"{t['path']}:{t['line']}: {t['kind']} {scope}{t['name']} spans {span} lines "
                            f"(at most {limit})")
    if counted == 0:
        print("code-size: ctags found no definition: nothing was checked", file=sys.stderr)
        return 2
    for p in problems:
        print(f"code-size: {p}")
    print(f"code-size: {counted} definitions in {', '.join(d.name for d in dirs)}: "
          f"{'OK' if not problems else str(len(problems)) + ' over the limits'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
