"""A sweep across several models against each model's own sweep: the rows, the time, the prices and the choice.

Usage: python bench/sweep_models.py --task trec|stsb|emobank|goemotions|cranfield [--singles cold|warm|none]
       [--models default,../shared/models/paraphrase-minilm-l3-v2,~/.cache/bertlens/models/all-mpnet-base-v2]
       [--precision auto] [--json out.json]

Each run is `bertlens sweep` in a fresh process. `--singles cold` (the time comparison): every model's single sweep,
one after another, each with an empty cache, then the sweep across models with an empty cache of its own. `warm`:
the sweep across models first (empty cache), then the single sweeps on its cache (they encode nothing: only the
rows are compared). Prints each model's own and best reading, its price, the choice and the runner-up, the tie set
across models, whether every model's rows equal its single sweep's (to 1e-6), and the times. EmoBank is its
valence with the file's own split column; GoEmotions 5,000 comments a split, its label names joined by '|'.
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
from pathlib import Path

from common import DATA, lscpu_summary, run_measured

MODELS = ("default", str(DATA.parent / "models" / "paraphrase-minilm-l3-v2"),
          str(Path("~/.cache/bertlens/models/all-mpnet-base-v2").expanduser()))  # fmt: skip


def goemotions_csv(path: Path) -> Path:
    """GoEmotions' three splits as one CSV: text, the label names joined by '|', split."""
    names = (DATA / "goemotions" / "labels.txt").read_text().split()
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "labels", "split"])
        for split in ("train", "dev", "test"):
            for line in (DATA / "goemotions" / f"{split}.tsv").read_text(encoding="utf-8").splitlines():
                text, ids, _ = line.split("\t")
                writer.writerow([text, "|".join(names[int(i)] for i in ids.split(",")), split])
    return path


def task_flags(task: str, work: Path) -> list[str]:
    if task in ("trec", "stsb"):
        return ["--task", task, "--data-dir", str(DATA)]
    if task == "cranfield":  # with each model's late interaction rows beside its pooled ones
        return ["--task", task, "--data-dir", str(DATA), "--protocols", "cosine,late_interaction"]
    if task == "emobank":
        return ["--data", str(DATA / "emobank" / "emobank.csv"), "--text-col", "text", "--label-col", "V",
                "--split-col", "split"]  # fmt: skip
    if task == "goemotions":
        return ["--data", str(goemotions_csv(work / "goemotions.csv")), "--text-col", "text", "--label-col",
                "labels", "--label-sep", "|", "--split-col", "split", "--max-examples", "5000"]  # fmt: skip
    raise SystemExit(f"unknown --task {task}")


def sweep(flags: list[str], models: list[str], out: Path, cache: Path, precision: str) -> tuple[float, float, dict]:
    argv = ["sweep", *flags, *(w for m in models for w in ("--model", m)), "--precision", precision,
            "--quiet", "--out", str(out), "--cache-dir", str(cache)]  # fmt: skip
    seconds, peak = run_measured(argv)
    return seconds, peak, json.loads((out / "results.json").read_text(encoding="utf-8"))


def rows_differ(single: list[dict], across: list[dict], model: str) -> float:
    """The largest difference between a model's rows alone and its rows in the sweep across models."""
    mine = [{k: v for k, v in r.items() if k not in ("model", "tied_with_best_across_models")}
            for r in across if r["model"] == model]  # fmt: skip
    if len(mine) != len(single):
        return float("inf")
    worst = 0.0
    for a, b in zip(mine, single, strict=True):
        for key, value in a.items():
            other = b.get(key)
            if isinstance(value, float) and isinstance(other, float):
                worst = max(worst, abs(value - other))
            elif value != other:
                return float("inf")
    return worst


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", required=True)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--singles", choices=("cold", "warm", "none"), default="warm")
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    models = args.models.split(",")
    print(f"task {args.task}; models {', '.join(models)}; --precision {args.precision}; {lscpu_summary()}", flush=True)
    summary: dict = {"task": args.task, "models": models, "cpu": lscpu_summary(), "singles": args.singles}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        flags = task_flags(args.task, work)
        singles = {}
        if args.singles == "cold":
            for k, model in enumerate(models):
                singles[model] = sweep(flags, [model], work / f"single{k}", work / f"cache{k}", args.precision)
                print(f"single {model}: {singles[model][0]:.1f} s, peak RSS {singles[model][1]:,.0f} MB", flush=True)
        seconds, peak, across = sweep(flags, models, work / "across", work / "cache-across", args.precision)
        print(f"across {len(models)} models: {seconds:.1f} s, peak RSS {peak:,.0f} MB", flush=True)
        if args.singles == "warm":
            for k, model in enumerate(models):
                singles[model] = sweep(flags, [model], work / f"single{k}", work / "cache-across", args.precision)
        summary.update(
            across_seconds=seconds, across_peak_mb=peak, choice=across["choice"], models_rows=across["models"]
        )
        for row in across["models"]:
            print(f"  {row['model']}: own {row['own_reading']} {row['own_value']}, best {row['best_reading']} "
                  f"{row['best_value']} [{row['best_ci'][0]}, {row['best_ci'][1]}], {row['texts_per_s']:,.0f} "
                  f"texts/s ({row['precision']}), {row['ms_one_text']:.1f} ms, dim {row['dim']}, "
                  f"{row['disk_mb']:,.0f} MB on disk{', chosen' if row['chosen'] else ''}"
                  f"{', tied' if row['tied_with_best'] else ''}")  # fmt: skip
        tied = [f"{r['model']} {r['candidate']}" for r in across["leaderboard"] if r["tied_with_best"]]
        print(f"  tie set across models: {len(tied)} rows; choice: {across['choice']}", flush=True)
        summary["tie_set"] = tied
        if singles:
            differences = {m: rows_differ(singles[m][2]["rows"], across["rows"], m) for m in models}
            print(f"  rows against each single sweep, largest difference: {differences}")
            summary["row_differences"] = differences
            if args.singles == "cold":
                total = sum(s[0] for s in singles.values())
                print(f"  time: singles one after another {total:.1f} s, across {seconds:.1f} s "
                      f"({seconds / total:.2f}x)")  # fmt: skip
                summary.update(singles_seconds={m: s[0] for m, s in singles.items()}, singles_total=total)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1, default=str))


if __name__ == "__main__":
    main()
