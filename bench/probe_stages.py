"""Where a sweep's time goes, stage by stage, and whether a faster commit still computes the same rows (issue #75).

Usage: python bench/probe_stages.py --task goemotions|emobank|stsb|trec|sst2|cranfield|cloze100k [--task ...]
       [--model default] [--out bench/out/stages] [--against DIR] [--cache-dir PATH] [--rows all]

Each task is one `bertlens sweep` in a fresh process (wall time and peak RSS of that process), with an empty cache
unless --cache-dir names one (then the bank is read, not encoded, and its time is a load's). The stage table is read
from the run's own results.json (`stages`: bank, each protocol, the probe's ScalarMix fits, ridge screen, logistic
probes and bootstrap), with each stage's multiple of the bank. `--against DIR`: a run of the same tasks on another
commit (its --out); prints both stage tables side by side, the largest difference between their rows (every
candidate's test figure and interval ends) and whether the pick is the same. When this run's bank came from a cache,
the ratios use DIR's bank (an encoding's time). GoEmotions is the whole set (43k comments, 28 labels); cloze100k is
bench/many_classes_data.py's 100-class cloze at 100,000 texts (written to --out once).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from bertlens.experiments.sweep.stage_times import stage_rows, stages
from common import DATA, lscpu_summary, run_measured

GOEMOTIONS = DATA / "goemotions"


def task_flags(task: str, out: Path) -> list[str]:
    if task in ("trec", "stsb", "sst2", "cranfield"):
        return ["--task", task, "--data-dir", str(DATA)]
    if task == "emobank":
        return ["--data", str(DATA / "emobank" / "emobank.csv"), "--text-col", "text", "--label-col", "V",
                "--split-col", "split"]  # fmt: skip
    if task == "goemotions":
        return ["--data", str(GOEMOTIONS / "train.tsv"), "--dev", str(GOEMOTIONS / "dev.tsv"), "--test",
                str(GOEMOTIONS / "test.tsv"), "--no-header", "--text-col", "0", "--label-col", "1",
                "--label-sep", ","]  # fmt: skip
    if task == "cloze100k":
        data = out / "cloze100k.csv"
        if not data.exists():
            code = ("import sys; from pathlib import Path; sys.path.insert(0, 'bench'); from common import DATA; "
                    "from many_classes_data import cloze_task, write_csv; "
                    f"write_csv(cloze_task(DATA, 100000), Path({str(data)!r}))")  # fmt: skip
            subprocess.run([sys.executable, "-c", code], check=True)
        return ["--data", str(data), "--text-col", "text", "--label-col", "label"]
    raise SystemExit(
        f"--task: unknown task {task!r}; use goemotions, emobank, stsb, trec, sst2, cranfield or cloze100k"
    )


def rows_apart(before: list[dict], after: list[dict]) -> float:
    """The largest difference between two runs' rows (every figure: value, interval ends, validation, the figures
    reported beside), inf when they name other rows or another probe scored a row."""
    key = lambda r: (r["protocol"], r["candidate"], r["metric"], r["split"])  # noqa: E731
    mine = {key(r): r for r in after}
    if set(mine) != {key(r) for r in before}:
        return float("inf")
    worst = 0.0
    for row in before:
        other = mine[key(row)]
        if other.get("scored_by") != row.get("scored_by"):
            return float("inf")
        for name, value in row.items():
            if isinstance(value, float) and isinstance(other.get(name), float):
                worst = max(worst, abs(value - other[name]))
    return worst


def stage_table(result: dict, bank: float | None) -> dict[str, tuple[float, float | None]]:
    """label -> (seconds, x the bank) from results.json's stages; `bank` replaces the run's own when given."""
    if "stages" in result:
        rows = {s["stage"]: (s["seconds"], s["x_bank"]) for s in result["stages"]}
    else:  # a commit before stages were written: read from its timings as this commit reads them
        table = stage_rows(stages(result["timings"], result["protocols"]))
        rows = {label: (seconds, ratio) for label, seconds, ratio in table}
    if bank:
        rows = {k: (v, v / bank) for k, (v, _) in rows.items()}
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", action="append", required=True)
    parser.add_argument("--model", default="default")
    parser.add_argument("--out", type=Path, default=Path("bench/out/stages"))
    parser.add_argument("--against", type=Path, default=None)
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--rows", default="all")
    args = parser.parse_args()
    print(lscpu_summary())
    for task in [t for value in args.task for t in value.split(",")]:
        out = args.out / task
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as empty:
            cache = args.cache_dir or Path(empty)
            argv = ["sweep", *task_flags(task, args.out), "--model", args.model, "--rows", args.rows, "--quiet",
                    "--out", str(out), "--cache-dir", str(cache)]  # fmt: skip
            seconds, peak = run_measured(argv)
        result = json.loads((out / "results.json").read_text(encoding="utf-8"))
        before = None
        if args.against is not None:
            before = json.loads((args.against / task / "results.json").read_text(encoding="utf-8"))
        bank = None
        if args.cache_dir is not None and before is not None:
            bank = stage_table(before, None).get("bank", (None, None))[0]
        now = stage_table(result, bank)
        print(f"\n## {task}: `bertlens {' '.join(argv)}`")
        print(f"{seconds:.1f} s wall, peak RSS {peak / 1024:.2f} GB, pick {result['recommended']}")
        if before is None:
            print("| stage | seconds | x the bank |\n|---|---|---|")
            for label, (s, ratio) in now.items():
                print(f"| {label} | {s:,.1f} | {'-' if ratio is None else f'{ratio:.2f}'} |")
            continue
        then = stage_table(before, None)
        print("| stage | before s | x bank | after s | x bank |\n|---|---|---|---|---|")
        show = lambda x: "-" if x is None else f"{x:.2f}"  # noqa: E731
        for label in dict.fromkeys([*now, *then]):
            b, a = then.get(label, (None, None)), now.get(label, (None, None))
            cells = [f"{b[0]:,.1f}" if b[0] is not None else "-", show(b[1])]
            cells += [f"{a[0]:,.1f}" if a[0] is not None else "-", show(a[1])]
            print(f"| {label} | {' | '.join(cells)} |")
        apart = rows_apart(before["rows"], result["rows"])
        same = before["recommended"] == result["recommended"]
        print(f"rows apart: {apart:.2e} (bound 1e-3: {'met' if apart <= 1e-3 else 'NOT met'}); "
              f"pick {'the same' if same else 'CHANGED: ' + before['recommended'] + ' -> ' + result['recommended']}")  # fmt: skip


if __name__ == "__main__":
    main()
