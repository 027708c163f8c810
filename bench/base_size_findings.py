"""The sweep's pick vs the last layer at base size: every catalog task and the three retrieval collections (#37).

Usage: python bench/base_size_findings.py --model DIR [--out bench/out/base] [--tasks sst2,mr,...] [--precision auto]

One `bertlens sweep --task T --model DIR` per task, each in a fresh process with its wall time and peak RSS
(a task whose OUT/T/results.json exists is read, not run again: the bench resumes). Then one row per task:
the last-layer default (mean pooling of the last layer, always scored by the logistic probe on classification
tasks) and the sweep's pick with its honest test figure (under cross-validation, the cross-validated choice's
score: chosen on each fold's dev, scored on that fold's test; otherwise the recommended candidate's test figure,
chosen on dev or the choosing queries), their difference, and the run's cost.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from common import REPO, lscpu_summary, run_measured

TASKS = ("sst2", "mr", "subj", "trec", "stsb", "cranfield", "cisi", "npl")
MAIN_PROTOCOL = {"classification": "probe", "similarity": "cosine", "retrieval": "cosine"}


def run_task(task: str, model: str, out: Path, precision: str) -> dict:
    result_file = out / task / "results.json"
    timing_file = out / task / "bench.json"
    if not result_file.is_file():
        argv = ["sweep", "--task", task, "--model", model, "--precision", precision, "--out", str(out / task)]
        seconds, peak = run_measured([*argv, "--cache-dir", str(out / "cache"), "--quiet"])
        timing_file.write_text(json.dumps({"seconds": seconds, "peak_rss_mb": peak}))
    return {**json.loads(result_file.read_text()), "bench": json.loads(timing_file.read_text())}


def row_for(result: dict) -> str:
    protocol = MAIN_PROTOCOL[result["kind"]]
    metric = result["protocols"][protocol]["metric"]  # retrieval rows carry one protocol and several metrics
    rows = [r for r in result["rows"] if r["protocol"] == protocol and r["metric"] == metric]
    layers = max(int(m.group(1)) for r in rows if (m := re.fullmatch(r"[a-z]+/L(\d+)", r["candidate"])))
    (last,) = [r for r in rows if r["candidate"] == f"mean/L{layers}"]
    (pick,) = [r for r in rows if r["candidate"] == result["recommended"]]
    chosen = result["protocols"][protocol].get("choice_cross_validated")
    value, low, high = (chosen["value"], chosen["ci_low"], chosen["ci_high"]) if chosen else (
        pick["value"], pick["ci_low"], pick["ci_high"])  # fmt: skip
    cost = result["bench"]
    return (
        f"| {result['task']} | {last['metric']} | {last['value']:.4f} [{last['ci_low']:.4f}, {last['ci_high']:.4f}] "
        f"({last['scored_by']}) | {result['recommended']} ({pick['scored_by']}) | {value:.4f} [{low:.4f}, {high:.4f}]"
        f"{' (CV choice)' if chosen else ''} | {value - last['value']:+.4f} | {cost['seconds']:.0f} s, "
        f"{cost['peak_rss_mb'] / 1024:.2f} GB |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True, help="e.g. all-mpnet-base-v2's directory (make base-model)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "base")
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--precision", default="auto")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"model {args.model}; CPU: {lscpu_summary()}")
    print("| task | metric | last-layer mean, test [95% CI] (probe) | pick (probe) | pick's test [95% CI] | change "
          "| sweep wall, peak RSS |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for task in args.tasks.split(","):
        print(row_for(run_task(task, args.model, args.out, args.precision)), flush=True)


if __name__ == "__main__":
    main()
