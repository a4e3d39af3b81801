"""One shape for the figures every bench writes with `--json FILE` (bench/results/*.json), which
scripts/readme-figures.py renders into the README: what ran, when, on what, the rows and a summary."""
from __future__ import annotations

import datetime
import json
import os
import platform
import sys
from pathlib import Path


def write(path: Path, bench: str, rows: list[dict], summary: dict) -> None:
    doc = {
        "bench": bench,
        "command": " ".join(["python3", *sys.argv]),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": {"name": platform.node(), "cores": os.cpu_count(), "load_average": round(os.getloadavg()[0], 2)},
        "source": "measured",
        "summary": summary,
        "rows": rows,
    }
    Path(path).write_text(json.dumps(doc, indent=2) + "\n")
