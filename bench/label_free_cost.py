"""What choosing without labels costs compared with one encoding pass of the same texts (issue #27: <= 1.5x).

Usage: python bench/label_free_cost.py [--texts 10000] [--precision auto]

The texts are distinct sentences of the shared corpora (bench/many_classes_data.py), the first N. Each command
runs in a fresh process with an empty cache, its wall time and peak RSS measured: `bertlens embed` of the
texts (the baseline: default recipe, precision auto) and `bertlens sweep --texts` (the bank of every layer x
pooler, three view passes over a sixth of the texts at most 1,000, every label-free score on 5 subsamples).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from common import DATA, lscpu_summary, print_against_embed, run_measured
from many_classes_data import corpus_sentences


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=10000)
    parser.add_argument("--precision", default="auto", help="the sweep's encoding precision (embed's default is auto)")
    args = parser.parse_args()
    texts = corpus_sentences(DATA)[: args.texts]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "texts.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
        print(f"{len(texts):,} distinct sentences of the shared corpora; default model; {lscpu_summary()}")
        runs = {
            "bertlens embed (baseline)": ["embed", str(work / "texts.txt"), "--out", str(work / "v.npy"), "--quiet"],
            f"bertlens sweep --texts (--precision {args.precision})": [
                *("sweep", "--texts", str(work / "texts.txt"), "--precision", args.precision),
                *("--out", str(work / "sweep"), "--cache-dir", str(work / "cache"), "--quiet"),
            ],
        }
        measured = {name: run_measured(argv) for name, argv in runs.items()}
        result = json.loads((work / "sweep" / "results.json").read_text())
    print_against_embed(measured, result["timings"])
    print(f"recommended without labels: {result['recommended']}")


if __name__ == "__main__":
    main()
