"""One JSON of the figures bench/device_rows.sh's runs wrote: each sweep's pick, stage timings and rows read, and
recommend's decisions. Usage: python bench/device_summary.py WORK (the folder device_rows.sh ran in)."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def sweep_figures(results: dict) -> dict:
    """What a GPU row needs from a sweep's results.json."""
    staging = results.get("staging", {})
    return {
        "recommended": results.get("recommended"),
        "timings": results.get("timings"),
        "rows": staging.get("rows"),
        "rows_used": staging.get("rows_used"),
        "looks": staging.get("looks"),
    }


def recommend_figures(results: dict) -> dict:
    """recommend's results.json, its scalar and short fields (the decisions and their timings)."""
    return {k: v for k, v in results.items() if len(json.dumps(v)) < 2000}


def main() -> None:
    work = Path(sys.argv[1])
    summary = {}
    for results in sorted(work.glob("*/results.json")):
        run = json.loads(results.read_text(encoding="utf-8"))
        name = results.parent.name
        summary[name] = recommend_figures(run) if name == "recommend" else sweep_figures(run)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
