"""Benchmark: the whole linguistic suite on full UD EWT, timed against the 20-minute budget.

Usage: python bench/linguistic_suite.py [MODEL] [OUT]   (MODEL: 'default' or a model directory)
Runs through the CLI (fresh cache, so encoding is included), then prints the wall time as a
ratio to the 20-minute budget and the Markdown summary table for docs/results-log.md.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bertlens.cli.main import main
from common import DATA, REPO

BUDGET_SECONDS = 20 * 60


def run(model: str, out: Path) -> None:
    cache = Path(tempfile.mkdtemp(prefix="bertlens-bench-"))
    shutil.rmtree(out / "tasks", ignore_errors=True)  # no resumed tasks: time everything
    start = time.perf_counter()
    code = main(
        [
            "probe",
            "--suite",
            "linguistic",
            "--model",
            model,
            "--treebank",
            str(DATA / "ud-ewt"),
            "--out",
            str(out),
            "--cache-dir",
            str(cache),
            "--quiet",
        ]
    )
    seconds = time.perf_counter() - start
    shutil.rmtree(cache, ignore_errors=True)
    if code:
        sys.exit(code)
    data = json.loads((out / "results.json").read_text())
    print(
        f"\nmodel {model}: whole suite {seconds:.0f} s = {seconds / BUDGET_SECONDS:.2f} x the 20-minute budget; "
        f"timings {data['timings']}"
    )
    print((out / "report.md").read_text().split("![")[0])


if __name__ == "__main__":
    run(
        sys.argv[1] if len(sys.argv) > 1 else "default",
        Path(sys.argv[2]) if len(sys.argv) > 2 else REPO / "out" / "bench-linguistic",
    )
