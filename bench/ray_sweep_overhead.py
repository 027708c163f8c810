"""`sweep --engine ray` against the local sweep, stage by stage (issue #51): the same sweep run locally and with a
local Ray instance of N workers (actors), each in a fresh process with an empty cache, and the ratio of each stage's
seconds (bank: the encoding pass; the rest: probes and scoring, on the driver both times).

    cd bench && BERTLENS_DATA=../../shared/data ../.venv/bin/python ray_sweep_overhead.py --task stsb \\
        --max-examples 1000 [--model default] [--workers 2]

Run it alone: the figures are seconds.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from common import lscpu_summary, run_measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="stsb")
    parser.add_argument("--max-examples", type=int, default=1000)
    parser.add_argument("--model", default="default")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    print(lscpu_summary())
    stages, walls = {}, {}
    with tempfile.TemporaryDirectory() as folder:
        for engine in ("local", "ray"):
            out, cache = Path(folder) / engine, Path(folder) / f"cache-{engine}"
            argv = ["sweep", "--task", args.task, "--max-examples", str(args.max_examples), "--model", args.model,
                    "--seed", "1", "--out", str(out), "--cache-dir", str(cache), "--quiet"]  # fmt: skip
            if engine == "ray":
                argv += ["--engine", "ray", "--ray-workers", str(args.workers)]
            walls[engine], peak = run_measured(argv)
            stages[engine] = json.loads((out / "results.json").read_text())["timings"]
            print(f"{engine}: {walls[engine]:.1f} s wall, driver peak RSS {peak:,.0f} MB; stages {stages[engine]}")
    print("\n| stage | local s | ray s | ray / local |")
    print("|---|---|---|---|")
    for name in stages["local"]:
        local, remote = stages["local"][name], stages["ray"].get(name)
        if isinstance(local, int | float) and isinstance(remote, int | float) and local > 0:
            print(f"| {name} | {local:.1f} | {remote:.1f} | {remote / local:.2f}x |")
    print(
        f"| whole command (wall) | {walls['local']:.1f} | {walls['ray']:.1f} | {walls['ray'] / walls['local']:.2f}x |"
    )


if __name__ == "__main__":
    main()
