"""Regression and multi-label sweeps (issue #60): the model's own reading against the sweep's pick, per model.

Usage: python bench/task_kinds.py [--models default,DIR] [--runs emobank-V,emobank-A,goemotions]
                                  [--max-examples N] [--out bench/out/kinds]

Each (run, model) is one sweep in a fresh process (wall time and peak RSS of that process), through the Python API
with the same options as the command line in docs/results-log.md. It prints the own reading (mean of the last layer:
the sentence-transformers pooling of both models) and the pick with their test figures and 95% intervals, and the
pick minus the own reading with its paired-bootstrap interval on the same test rows. A finished run's JSON in --out
is read, not run again.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from common import DATA, REPO, lscpu_summary

GOEMOTIONS = DATA / "goemotions"
RUNS = {
    "emobank-V": dict(data=str(DATA / "emobank" / "emobank.csv"), text_col="text", label_col="V", split_col="split"),
    "emobank-A": dict(data=str(DATA / "emobank" / "emobank.csv"), text_col="text", label_col="A", split_col="split"),
    "goemotions": dict(
        data=str(GOEMOTIONS / "train.tsv"),
        dev=str(GOEMOTIONS / "dev.tsv"),
        test=str(GOEMOTIONS / "test.tsv"),
        no_header=True,
        text_col="0",
        label_col="1",
        label_sep=",",
    ),
}

CHILD = r"""
import json, re, resource, sys, time
import bertlens
from bertlens.metrics.bootstrap import paired_difference
options = json.loads(sys.argv[1])
start = time.perf_counter()
run = bertlens.sweep(**options)
seconds = time.perf_counter() - start
main, result = run.result.main, run.result
names = [c.name for c in main.candidates]
last = max(int(n.split("/L")[1]) for n in names if re.fullmatch(r"[a-z]+/L\d+", n))
own, pick = names.index(f"mean/L{last}"), names.index(result.recommended.name)
diff = paired_difference(main.outputs[[own, pick]], main.gold, main.metric, resamples=1000, seed=0)
by = lambda i: main.scored_by[i] if main.scored_by else "ridge"
row = lambda i: [float(main.test.value[i]), float(main.test.low[i]), float(main.test.high[i]), by(i)]
print("RESULT", json.dumps({
    "kind": result.kind.name, "metric": main.metric, "own": [names[own], *row(own)], "pick": [names[pick], *row(pick)],
    "difference": list(diff), "seconds": seconds, "n_test": main.n_test, "timings": result.timings,
    "reported": {k: [float(v[own]), float(v[pick])] for k, v in main.reported.items()},
    "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
}))
"""


def run_one(name: str, model: str, out: Path, max_examples: int | None) -> dict:
    tag = Path(model).name if model != "default" else "default"
    path = out / f"{name}-{tag}.json"
    if path.is_file():
        return json.loads(path.read_text())
    options = {**RUNS[name], "model": model, "seed": 0, "cache_dir": str(out / "cache")}
    if max_examples:
        options["max_examples"] = max_examples
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(options)], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{name} on {model} failed: {done.stderr[-800:]}")
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    figures = {**json.loads(line[7:]), "run": name, "model": tag, "wall": time.perf_counter() - start}
    path.write_text(json.dumps(figures))
    return figures


def table_row(f: dict) -> str:
    own, pick, (gain, low, high) = f["own"], f["pick"], f["difference"]
    return (
        f"| {f['run']} | {f['model']} | {f['metric']} | {own[0]} {own[1]:.4f} [{own[2]:.4f}, {own[3]:.4f}] | "
        f"{pick[0]} ({pick[4]}) {pick[1]:.4f} [{pick[2]:.4f}, {pick[3]:.4f}] | {gain:+.4f} [{low:+.4f}, {high:+.4f}] "
        f"| {f['n_test']} | {f['seconds']:.0f} s (bank {f['timings'].get('bank_seconds', 0):.0f} s) | "
        f"{f['peak_rss_gb']:.2f} GB |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="default")
    parser.add_argument("--runs", default=",".join(RUNS))
    parser.add_argument("--max-examples", type=int, default=None)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "kinds")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"CPU: {lscpu_summary()}")
    print("| data | model | metric | own reading, test [95% CI] | pick (probe), test [95% CI] | pick - own [95% CI] "
          "| test rows | sweep | peak RSS |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for model in args.models.split(","):
        for name in args.runs.split(","):
            figures = run_one(name, model, args.out, args.max_examples)
            print(table_row(figures), flush=True)
            print("  reported (own, pick):", {k: [round(x, 4) for x in v] for k, v in figures["reported"].items()})


if __name__ == "__main__":
    main()
