"""`--rows auto` against `--rows all`: rows read, wall time and pick, on the 100-class cloze at a given size.

Usage: python bench/sweep_rows.py --texts 100000 [--model DIR] [--precision auto]

Builds bench/many_classes_data.py's cloze task at `--texts` texts (100 classes, 10-fold CV) and runs `bertlens sweep`
on it twice, each in a fresh process with its own empty cache: `--rows all` (the baseline: every row) and `--rows
auto`, each sampled from /proc by stage (bench/sweep_memory.py). Prints each run's wall time, memory by stage, peak
RSS, rows read and pick, the ratio of auto's time to all's, and where auto's pick stands on every row: its score in
the all run and whether it is tied there with that run's best (issue #63's acceptance: the same pick or one tied with
it on all rows, in at most 30% of the time).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from common import DATA, lscpu_summary
from many_classes_data import cloze_task, write_csv
from sweep_memory import print_peaks, run_sampled


def _sweep(work: Path, rows: str, model: str, precision: str) -> tuple[float, float, dict]:
    """One sweep in a fresh process with its own empty cache, its memory sampled by stage (printed)."""
    out = work / f"sweep-{rows}"
    argv = [
        *("sweep", "--data", str(work / "task.csv"), "--text-col", "text", "--label-col", "label"),
        *("--model", model, "--precision", precision, "--rows", rows),
        *("--out", str(out), "--cache-dir", str(work / f"cache-{rows}")),
    ]
    run = run_sampled(argv, every=2.0)
    if run.returncode != 0:
        raise RuntimeError(f"bertlens sweep --rows {rows} exited {run.returncode}")
    print(f"--rows {rows}: wall {run.wall:.1f} s; memory by stage:", flush=True)
    print_peaks(run)
    return run.wall, run.peak_rss, json.loads((out / "results.json").read_text(encoding="utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=10000)
    parser.add_argument("--model", default="default")
    parser.add_argument("--precision", default="auto")
    args = parser.parse_args()
    rows = cloze_task(DATA, args.texts)
    print(f"cloze task: {len(rows)} texts; model {args.model}; --precision {args.precision}; {lscpu_summary()}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        write_csv(rows, work / "task.csv")
        runs = {name: _sweep(work, name, args.model, args.precision) for name in ("all", "auto")}
    every = runs["all"][2]
    main_rows = [r for r in every["rows"] if r["protocol"] == "probe"]
    print("| --rows | wall s | vs all | peak RSS MB | rows read | pick | its score on the rows read |")
    print("|---|---|---|---|---|---|---|")
    for name, (seconds, peak, result) in runs.items():
        staging = result["staging"]
        read = staging.get("rows_used", staging.get("rows"))
        pick = next(r for r in result["rows"] if r["protocol"] == "probe" and r["candidate"] == result["recommended"])
        print(
            f"| {name} | {seconds:.1f} | {seconds / runs['all'][0]:.2f}x | {peak:,.0f} | {read:,} | "
            f"{result['recommended']} | {pick['value']:.4f} [{pick['ci_low']:.4f}, {pick['ci_high']:.4f}] |"
        )
    auto_pick = runs["auto"][2]["recommended"]
    on_all = next(r for r in main_rows if r["candidate"] == auto_pick)
    print(
        f"auto's pick {auto_pick} on every row: {on_all['value']:.4f} against all's pick {every['recommended']} "
        f"{next(r for r in main_rows if r['candidate'] == every['recommended'])['value']:.4f}; "
        f"{'the same pick' if auto_pick == every['recommended'] else 'a different pick'}; tied with all's best on "
        f"every row: {on_all['tied_with_best']}"
    )
    looks = runs["auto"][2]["staging"].get("looks", [])
    for number, look in enumerate(looks, start=1):
        print(f"  stage {number}: {look['rows']:,} rows, pick {look['pick']}, largest gap {look['largest_gap']} "
              f"({look['ahead']}), projected to every row {look['projected_gap']} ({look['reaching']}), "
              f"settled {look['settled']}, {look['seconds']} s")  # fmt: skip
    print("auto stages:", json.dumps({k: v for k, v in runs["auto"][2]["staging"].items() if k != "looks"}))
    print("all timings:", json.dumps(every["timings"]))


if __name__ == "__main__":
    main()
