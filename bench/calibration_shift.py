"""Does an int8 export's fidelity gate carry to texts of another genre than its calibration texts?

Usage: python bench/calibration_shift.py [--model DIR] [--calibration 300] [--test 1000]
       [--exports onnx-int8,onnx-int8-static,openvino-int8]

Issue #62. The OpenVINO int8 export of the default model passed its gate (mean cosine >= 0.995, min >= 0.98 on 150
judging sentences) yet reached mean 0.990 and min 0.969 on 1,000 other STS-B sentences. STS-B's training file runs
from image captions (its first ~1,800 sentences) to news headlines (its last ~1,500); the bench calibrated on the
file's last 300 sentences and measured on its first 1,000. So this bench separates the two explanations, a heavy
tail that 150 texts cannot see, or a genre the calibration never saw:
- each export is made twice: calibrated on 300 headlines (the file's last), and on 300 sentences drawn at random
  from the whole file (seed 0), each split by the export into choosing and judging halves as always;
- each is then measured on 1,000 captions (the file's first), 1,000 other headlines, and 1,000 other sentences drawn
  at random, none of them calibration texts: mean, 1st percentile and min cosine to bertlens' PyTorch fp32 vectors,
  and how many fall below the gate's minimum.
Fidelity only: no timing, so it may share the machine.
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
from pathlib import Path

import numpy as np

from common import DATA

PLANS = {
    "onnx-int8": {"format": "onnx", "quantize": "int8"},
    "onnx-int8-static": {"format": "onnx", "quantize": "int8-static"},
    "openvino-int8": {"format": "openvino", "quantize": "int8-static"},
}


def sentences() -> list[str]:
    """STS-B's training sentences, distinct, in file order (captions first, headlines last)."""
    with open(DATA / "stsb" / "train.csv", newline="", encoding="utf-8") as handle:
        return list(dict.fromkeys(text for row in csv.reader(handle) for text in row[:2]))


def text_sets(calibration: int, test: int) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(calibration sets, test sets), disjoint: headlines from the file's end, random ones from what is left."""
    every = sentences()
    headlines_calibration, headlines_test = every[-calibration:], every[-calibration - test : -calibration]
    captions = every[:test]
    rest = every[test : -calibration - test]
    order = np.random.default_rng(0).permutation(len(rest))
    random_calibration = [rest[i] for i in order[:calibration]]
    random_test = [rest[i] for i in order[calibration : calibration + test]]
    return (
        {"headlines (file's last)": headlines_calibration, "drawn at random": random_calibration},
        {"captions": captions, "other headlines": headlines_test, "other random": random_test},
    )


def fidelity(vectors: np.ndarray, reference: np.ndarray, gate_min: float) -> str:
    from bertlens.metrics.geometry import row_cosine

    cosines = row_cosine(vectors.astype(np.float32), reference)
    below = int((cosines < gate_min).sum())
    return f"{cosines.mean():.4f} / {np.quantile(cosines, 0.01):.4f} / {cosines.min():.4f} / {below}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--calibration", type=int, default=300)
    parser.add_argument("--test", type=int, default=1000)
    parser.add_argument("--exports", default=",".join(PLANS))
    args = parser.parse_args()

    from bertlens import Embedder, Recipe
    from bertlens.api.export import export
    from bertlens.embedding.onnx_backend import OnnxEmbedder
    from bertlens.errors import BertlensError

    calibrations, tests = text_sets(args.calibration, args.test)
    reference = Embedder(Recipe(model=args.model, pooler="mean", max_length=256))
    references = {name: reference.encode(texts) for name, texts in tests.items()}
    print(f"model {args.model}; cells: mean / 1st percentile / min cosine to fp32 / texts below the gate's min (0.98)")
    print("| export | calibrated on | judged at export (mean / min) | " + " | ".join(f"on {n}" for n in tests) + " |")
    print("|---|---|---|" + "---|" * len(tests))
    with tempfile.TemporaryDirectory() as work:
        for name in args.exports.split(","):
            for source, texts in calibrations.items():
                path = Path(work) / f"{name}-{len(source)}.txt"
                path.write_text("\n".join(texts) + "\n")
                out = Path(work) / f"{name}-{len(source)}"
                try:
                    export(model=args.model, max_length=256, pooler="mean", texts=path, calibration=path, out=out,
                           quiet=True, **PLANS[name])  # fmt: skip
                except BertlensError as refused:
                    print(f"| {name} | {source} | refused: {refused} |" + " |" * len(tests), flush=True)
                    continue
                made = json.loads((out / "export.json").read_text())
                record = made.get("openvino_int8") or made["int8"]
                if name.startswith("openvino"):
                    from bertlens.embedding.openvino_backend import OpenVinoEmbedder

                    runtime = OpenVinoEmbedder(out)
                else:
                    runtime = OnnxEmbedder(out)
                cells = [fidelity(np.asarray(runtime.encode(t)), references[n], 0.98) for n, t in tests.items()]
                judged = f"{record['mean_cosine']:.4f} / {record['min_cosine']:.4f}"
                print(f"| {name} | {source} | {judged} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
