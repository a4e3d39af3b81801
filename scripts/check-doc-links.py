#!/usr/bin/env python3
"""Check that the documentation's references to files of the repository resolve.

    python3 scripts/check-doc-links.py [REPO_ROOT]

Every markdown file of the repository (build and output folders left out) is read; outside fenced code
blocks, it checks
  - every relative markdown link `[text](target)`: the file (relative to the page) must exist, and an
    `#anchor` on a markdown file must be one of its headings (GitHub's slugs);
  - every repository path in backticks (`docs/...`, `bench/x.py`): text that starts with a top-level
    folder of the repository, or names a file at the top level, must exist (relative to the repository
    root, or to the page);
  - every plain-text mention of a page under docs/ (`docs/guides/gpu.md`).
Placeholders are not paths: text with spaces, `*`, `<`, `{`, `...`, `NNNNN`, or a `%` pattern is skipped.
Exit 0 when everything resolves, 1 (listing each FILE:LINE and the reference) otherwise.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

SKIP_DIRS = {".git", "out", ".cache", "__pycache__", "node_modules"}
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\n]+)`")
PLAIN_DOC = re.compile(r"(?<![\w/.-])(docs/[\w./-]+\.md)")
PLACEHOLDER = re.compile(r"[\s*<>{}$%|]|\.\.\.|NNNNN|XXXX|\bN\b")


def markdown_files(root: Path) -> list[Path]:
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith("build"))
        out += [Path(d) / f for f in sorted(files) if f.endswith(".md")]
    return out


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"`|\*\*|\*", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path, cache: dict[Path, set[str]]) -> set[str]:
    if page not in cache:
        found, seen, fenced = set(), {}, False
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.lstrip().startswith("```"):
                fenced = not fenced
            elif not fenced and line.startswith("#"):
                s = slug(line.lstrip("#"))
                n = seen.get(s, 0)
                seen[s] = n + 1
                found.add(s if n == 0 else f"{s}-{n}")
        cache[page] = found
    return cache[page]


def check(root: Path) -> list[str]:
    top = {p.name for p in root.iterdir() if not p.name.startswith((".", "build")) and p.name != "out"}
    problems: list[str] = []
    cache: dict[Path, set[str]] = {}
    for page in markdown_files(root):
        rel = page.relative_to(root)
        fenced = False
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if fenced:
                continue
            where = f"{rel}:{n}"
            # Inline code is not markdown: `dims2[1](Np)` is a feature name, not a link (a link whose
            # text is code, [`x`](y.md), keeps its target).
            for m in LINK.finditer(CODE.sub(" ", line)):
                target = m.group(1) or m.group(2)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("//"):
                    continue  # http:, https:, mailto:
                path_part, _, anchor = target.partition("#")
                dest = page if not path_part else (page.parent / path_part)
                if not dest.exists():
                    problems.append(f"{where}: link '{target}': {path_part} does not exist")
                elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.resolve(), cache):
                    problems.append(f"{where}: link '{target}': no heading '#{anchor}' in {dest.relative_to(root) if dest.resolve().is_relative_to(root.resolve()) else dest}")
            prose = CODE.sub(" ", line)
            for m in CODE.finditer(line):
                text = m.group(1).strip().rstrip(".,;:")
                text = re.sub(r":\d+(-\d+)?$", "", text)  # FILE:LINE
                if PLACEHOLDER.search(text) or text.startswith(("-", "/")):
                    continue
                first = text.split("/")[0]
                if first not in top or (("/" not in text) and "." not in text):
                    continue  # not a repository path (a key, an option, an example's own folder)
                if not ((root / text).exists() or (page.parent / text).exists()):
                    problems.append(f"{where}: path `{m.group(1)}` does not exist")
            for m in PLAIN_DOC.finditer(prose):
                text = m.group(1).rstrip(".")
                if not (root / text).exists():
                    problems.append(f"{where}: page {text} does not exist")
    return problems


def main(argv: list[str]) -> int:
    root = Path(argv[1] if len(argv) > 1 else Path(__file__).resolve().parent.parent).resolve()
    problems = check(root)
    for p in problems:
        print(p)
    print(f"check-doc-links: {len(markdown_files(root))} markdown files, {len(problems)} broken reference(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
