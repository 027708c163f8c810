"""The sweep at user scale: a 100-class task at 10k or 100k texts, 10-fold CV, as a ratio to one embed pass.

Usage: python bench/many_classes.py --texts 10000 [--precision auto] [--model DIR]

Builds the cloze task of bench/many_classes_data.py (100 classes, a seeded sample of `--texts`
sentences from the shared corpora) as a user CSV without splits, then runs, each in a fresh process
with its peak RSS and an empty cache: `bertlens embed` of its texts (the baseline, default recipe)
and `bertlens sweep --data FILE --text-col text --label-col label` (every default candidate, 10-fold
CV). Prints wall time, ratio to embed, peak RSS, and the sweep's own stage timings.
Targets (issue #25): 10k <= 2.0x, 100k <= 3.0x with peak memory <= 4 GB.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from common import DATA, lscpu_summary, print_against_embed, run_measured
from many_classes_data import cloze_task, write_csv


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=10000)
    parser.add_argument("--precision", default="auto", help="the sweep's encoding precision (embed's default is auto)")
    parser.add_argument(
        "--model", default="default", help="the model both runs use (e.g. all-mpnet-base-v2's directory)"
    )
    args = parser.parse_args()
    rows = cloze_task(DATA, args.texts)
    print(
        f"cloze task: {len(rows)} texts, {len({label for _, label in rows})} classes; model {args.model}; "
        f"{lscpu_summary()}"
    )
    model = ["--model", args.model]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        write_csv(rows, work / "task.csv")
        (work / "texts.txt").write_text("\n".join(text for text, _ in rows) + "\n", encoding="utf-8")
        runs = {
            "bertlens embed (baseline)": [
                "embed",
                str(work / "texts.txt"),
                *model,
                "--out",
                str(work / "v.npy"),
                "--quiet",
            ],
            f"bertlens sweep (10-fold CV, --precision {args.precision})": [
                *("sweep", "--data", str(work / "task.csv"), "--text-col", "text", "--label-col", "label"),
                *(
                    "--precision",
                    args.precision,
                    "--out",
                    str(work / "sweep"),
                    "--cache-dir",
                    str(work / "cache"),
                    *model,
                ),
                "--quiet",
            ],
        }
        measured = {name: run_measured(argv) for name, argv in runs.items()}
        result = json.loads((work / "sweep" / "results.json").read_text())
    print_against_embed(measured, result["timings"])
    rows = result["rows"]
    fitted = [r for r in rows if r["scored_by"] == "logistic"]
    best = max(rows, key=lambda r: r["value"] or 0)
    print(
        f"recommended {result['recommended']}; {len(fitted)} of {len(rows)} candidates got the logistic probe "
        f"({', '.join(r['candidate'] for r in fitted)}); best figure {best['candidate']} {best['value']:.4f} "
        f"({best['scored_by']})"
    )


if __name__ == "__main__":
    main()
