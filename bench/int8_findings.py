"""Why dynamic int8 hurts the default model, and what the gated export keeps in fp32 (issue #15).

Usage: python bench/int8_findings.py [--texts 1000]

On STS-B sentences (the first half chooses, the second half judges, as the export's gate does), with
the default model's mean-pooling recipe exported to ONNX: cosine to bertlens fp32 (mean, min) and
STS-B test Spearman for (a) every linear layer dynamic int8 with one scale per tensor (ONNX Runtime's
plain `quantize_dynamic`, the usual advice), (b) the same with one scale per output channel, (c) the
gated export (per channel, the most sensitive modules kept in fp32), and the ten most sensitive
modules alone. Also each int8 variant's texts/s against ONNX fp32 on the same texts, same run.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from common import DATA, sts_sentences


def spearman_sts(embedder) -> float:
    from scipy.stats import spearmanr

    with open(DATA / "stsb" / "test.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    u, v = embedder.encode([r[0] for r in rows]), embedder.encode([r[1] for r in rows])
    cos = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    return float(spearmanr(cos, [float(r[2]) for r in rows]).statistic)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=1000)
    args = parser.parse_args()
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from bertlens.embedding.embedder import Embedder
    from bertlens.embedding.onnx_backend import MODEL_FILE, OnnxEmbedder
    from bertlens.experiments.export import Int8Options, run_export_onnx
    from bertlens.io.cache import file_sha256
    from bertlens.metrics.geometry import row_cosine
    from bertlens.representation.recipe import Recipe

    texts = [t for t in sts_sentences() if t.strip()][: args.texts]
    judge = texts[len(texts) // 2 :]
    reference = Embedder(Recipe()).encode(judge)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        run_export_onnx(Recipe(), work / "fp32", texts[:256], "STS-B")
        gated = run_export_onnx(Recipe(), work / "gated", texts[:256], "STS-B", int8=Int8Options(calibration=texts))
        run_export_onnx(
            Recipe(),
            work / "static",
            texts[:256],
            "STS-B",
            int8=Int8Options(static=True, calibration=texts, force=True),
        )
        variants = {
            "ONNX fp32": work / "fp32",
            "int8 dynamic, gated (per channel, sensitive modules fp32)": work / "gated",
            "int8 static QDQ, gated (forced if below the gate)": work / "static",
        }
        for name, per_channel in (("int8 all, one scale per tensor", False), ("int8 all, per channel", True)):
            target = work / name.replace(" ", "_").replace(",", "")
            shutil.copytree(work / "fp32", target)
            quantize_dynamic(
                str(work / "fp32" / MODEL_FILE),
                str(target / MODEL_FILE),
                op_types_to_quantize=["MatMul", "Gemm"],
                weight_type=QuantType.QInt8,
                per_channel=per_channel,
            )
            record = json.loads((target / "export.json").read_text())
            record["sha256"] = {MODEL_FILE: file_sha256(target / MODEL_FILE)}
            (target / "export.json").write_text(json.dumps(record))
            variants[name] = target
        embedders = {name: OnnxEmbedder(path) for name, path in variants.items()}
        for e in embedders.values():
            e.encode(judge[:32])
        print(
            f"{len(judge)} held-out STS-B sentences; STS-B test Spearman of bertlens fp32: {spearman_sts(Embedder(Recipe())):.4f}"
        )
        print("| variant | mean cosine to fp32 | min cosine | STS-B test Spearman | texts/s | vs ONNX fp32 |")
        print("|---|---|---|---|---|---|")
        base = None
        for name, embedder in embedders.items():
            start = time.perf_counter()
            vectors = embedder.encode(judge)
            speed = len(judge) / (time.perf_counter() - start)
            base = base or speed
            cos = row_cosine(vectors.astype(np.float64), reference.astype(np.float64))
            print(
                f"| {name} | {cos.mean():.5f} | {cos.min():.5f} | {spearman_sts(embedder):.4f} | {speed:,.0f} | "
                f"{speed / base:.2f}x |",
                flush=True,
            )
        record = json.loads((work / "gated" / "export.json").read_text())["int8"]
        print(f"kept in fp32 by the gate: {record['modules_kept_fp32']}")
        print("most sensitive modules (mean cosine to fp32 with only that module int8, per channel):")
        ranked = sorted(record["sensitivity_mean_cosine_alone"].items(), key=lambda kv: kv[1])
        for module, value in ranked[:10]:
            print(f"  {module}: {value:.5f}")
        print(
            f"gate figures on held-out calibration texts: mean {gated.int8.mean_cosine:.5f}, min {gated.int8.min_cosine:.5f}"
        )


if __name__ == "__main__":
    main()
