"""`sweep --engine ray` against the local sweep, stage by stage (issue #51): the same sweep run locally and on Ray
with N workers, each in a fresh process with an empty cache, and the ratio of each stage's seconds (bank: the
encoding pass, on the actors; screen and logistic: the probe stages, Ray tasks from RAY_PROBE_ROWS example rows up;
the rest on the driver both times). With --nodes the Ray run goes to a cluster of a head and N-1 worker nodes
started here (ray.cluster_utils, one CPU each), the driver joining by address; else to a local Ray instance.
It also checks that both runs pick the same recipe and prints the largest difference between their scores.

    cd bench && BERTLENS_DATA=../../shared/data ../.venv/bin/python ray_sweep_overhead.py --task stsb \\
        --max-examples 1000 [--model default] [--workers 2]
    cd bench && ../.venv/bin/python ray_sweep_overhead.py --data task.csv --text-col text --label-col label \\
        --model ~/.cache/bertlens/models/all-mpnet-base-v2 --precision auto --nodes

Run it alone: the figures are seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
from pathlib import Path

from common import lscpu_summary, run_measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="stsb")
    parser.add_argument("--data", help="a CSV task instead of --task (with --text-col and --label-col)")
    parser.add_argument("--text-col", default="text")
    parser.add_argument("--label-col", default="label")
    parser.add_argument("--max-examples", type=int, default=None)
    parser.add_argument("--model", default="default")
    parser.add_argument("--precision", default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--nodes", action="store_true", help="a head and workers-1 worker nodes here, one CPU each")
    args = parser.parse_args()
    print(lscpu_summary())
    source = ["--task", args.task] if args.data is None else ["--data", args.data, "--text-col", args.text_col,
                                                               "--label-col", args.label_col]  # fmt: skip
    source += ["--max-examples", str(args.max_examples)] if args.max_examples else []
    source += ["--precision", args.precision] if args.precision else []
    stages, walls, outs = {}, {}, {}
    with tempfile.TemporaryDirectory() as folder, _cluster(args.workers if args.nodes else 0) as address:
        for engine in ("local", "ray"):
            outs[engine], cache = Path(folder) / engine, Path(folder) / f"cache-{engine}"
            argv = ["sweep", *source, "--model", args.model, "--seed", "1", "--out", str(outs[engine]), "--cache-dir",
                    str(cache), "--quiet"]  # fmt: skip
            if engine == "ray":
                argv += ["--engine", "ray", "--ray-workers", str(args.workers)]
                argv += ["--ray-address", address] if address else []
            walls[engine], peak = run_measured(argv)
            stages[engine] = json.loads((outs[engine] / "results.json").read_text())["timings"]
            print(f"{engine}: {walls[engine]:.1f} s wall, driver peak RSS {peak:,.0f} MB; stages {stages[engine]}")
        _compare(outs["local"], outs["ray"])
    print("\n| stage | local s | ray s | ray / local |")
    print("|---|---|---|---|")
    for name in stages["local"]:
        local, remote = stages["local"][name], stages["ray"].get(name)
        if isinstance(local, int | float) and isinstance(remote, int | float) and local > 0:
            print(f"| {name} | {local:.1f} | {remote:.1f} | {remote / local:.2f}x |")
    print(
        f"| whole command (wall) | {walls['local']:.1f} | {walls['ray']:.1f} | {walls['ray'] / walls['local']:.2f}x |"
    )


@contextlib.contextmanager
def _cluster(workers: int):
    """A Ray cluster of a head and workers-1 worker nodes here (one CPU each), its address; nothing for 0."""
    if not workers:
        yield None
        return
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    for _ in range(workers - 1):
        cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    try:
        yield cluster.address
    finally:
        cluster.shutdown()


def _compare(local: Path, remote: Path) -> None:
    """Same pick? The largest difference between the two runs' scores."""
    rows = [json.loads((folder / "results.json").read_text())["rows"] for folder in (local, remote)]
    gaps = [abs(a["value"] - b["value"]) for a, b in zip(*rows, strict=True) if a["value"] is not None]
    same = [json.loads((folder / "recipe.json").read_text()) for folder in (local, remote)]
    print(f"same recipe: {same[0] == same[1]}; largest score difference {max(gaps):.2e} over {len(gaps)} rows")


if __name__ == "__main__":
    main()
