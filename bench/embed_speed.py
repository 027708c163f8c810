"""Embedding throughput of bertlens vs sentence-transformers, and memory at 10k vs 100k texts.

Usage: python bench/embed_speed.py [--model DIR] [--texts N] [--skip-memory] [--skip-onnx] [--student RECIPE.json]

Speed: the same N STS-B sentences, mean pooling, the default model or `--model DIR` (a sentence-transformers
directory, e.g. all-mpnet-base-v2 from `make base-model`). Baseline:
sentence-transformers `encode(batch_size=32)`, fp32; also sentence-transformers with bf16 weights
(its own best CPU option that installs here). bertlens: the `bertlens embed` job (`run_embed`:
reading the file, tokenizing, length-bucketed batches, writing .npy), fp32 and bf16 (PyTorch),
ONNX Runtime fp32 and gated int8 (`bertlens export`, the whole recipe in the graph), and a
distilled student when given. Model loading is excluded on both sides; the runs alternate
`--repeats` times and each reports its median, with min and mean cosine to bertlens fp32.
Memory: peak RSS of a fresh `bertlens embed` process on 10k and on 100k texts (bf16).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

from bertlens.embedding.embedder import Embedder
from bertlens.embedding.job import run_embed
from bertlens.io.tables import TableSpec
from bertlens.metrics.geometry import row_cosine
from bertlens.representation.recipe import Recipe
from common import REPO, lscpu_summary, sts_sentences, timed

MEMORY_PROBE = """
import resource, sys
from bertlens.cli.main import main
code = main(sys.argv[1:])
print("PEAK_RSS_MB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
sys.exit(code)
"""


def embed_job(texts_file: Path, out: Path, embedder: Embedder) -> tuple[np.ndarray, float]:
    out.unlink(missing_ok=True)
    _, seconds = timed(lambda: run_embed(TableSpec(texts_file), out, embedder))
    return np.load(out), seconds


def peak_memory(texts: list[str], count: int, workdir: Path, model: str) -> float:
    path = workdir / f"mem{count}.txt"
    path.write_text("\n".join(texts[i % len(texts)] for i in range(count)) + "\n")
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            MEMORY_PROBE,
            "embed",
            str(path),
            "--out",
            str(workdir / f"mem{count}.npy"),
            "--precision",
            "bf16",
            "--model",
            model,
            "--quiet",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    return float(result.stdout.split("PEAK_RSS_MB")[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="default", help="a sentence-transformers model directory (default model)")
    parser.add_argument("--texts", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--skip-onnx", action="store_true", help="leave out the ONNX Runtime rows")
    parser.add_argument(
        "--student", type=Path, help="a distilled student's recipe.json (`bertlens distill`) to add as a row"
    )
    args = parser.parse_args()
    texts = [t for t in sts_sentences() if t.strip()][: args.texts]
    recipe = Recipe(model=args.model)
    embedders = {
        "bertlens embed, fp32": Embedder(recipe),
        "bertlens embed, bf16": Embedder(recipe.replace(precision="bf16")),
    }
    ref = embedders["bertlens embed, fp32"].encoder.ref
    print(
        f"{len(texts)} STS-B sentences, model {ref.name} ({ref.num_layers} x {ref.hidden_size}), mean pooling, "
        f"torch threads={torch.get_num_threads()}; CPU: {lscpu_summary()}"
    )

    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(embedders["bertlens embed, fp32"].encoder.ref.path), device="cpu")
    st_bf16 = SentenceTransformer(str(embedders["bertlens embed, fp32"].encoder.ref.path), device="cpu").to(
        torch.bfloat16
    )

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "texts.txt").write_text("\n".join(texts) + "\n")
        if not args.skip_onnx:
            from bertlens.embedding.onnx_backend import OnnxEmbedder
            from bertlens.experiments.export import Int8Options, run_export_onnx

            calibration = texts[-1000:]  # judged on texts the speed rows also use; the gate's own split applies
            run_export_onnx(recipe, work / "onnx-fp32", texts[:512], "STS-B sentences")
            int8 = run_export_onnx(
                recipe,
                work / "onnx-int8",
                texts[:512],
                "STS-B sentences",
                int8=Int8Options(calibration=calibration),
            )
            embedders["bertlens embed --backend onnx, fp32 (ONNX Runtime)"] = OnnxEmbedder(work / "onnx-fp32")
            kept = ", ".join(int8.kept_fp32) or "none"
            embedders[f"bertlens embed --backend onnx, int8 (gated; fp32 kept: {kept})"] = OnnxEmbedder(
                work / "onnx-int8"
            )
        if args.student is not None:
            embedders[f"bertlens embed, distilled student {args.student.parent.name}, fp32"] = Embedder(
                Recipe.load(args.student)
            )
        baselines = {
            "sentence-transformers encode, batch 32, fp32 (baseline)": st,
            "sentence-transformers encode, batch 32, bf16 weights": st_bf16,
        }
        for model in baselines.values():
            model.encode(texts[:64])
        for embedder in embedders.values():
            embedder.encode(texts[:64])
        # Alternate every run, `repeats` rounds, and keep each one's median time (less noise).
        times: dict[str, list[float]] = {name: [] for name in [*baselines, *embedders]}
        vectors: dict[str, np.ndarray] = {}
        for _ in range(args.repeats):
            for name, model in baselines.items():
                vectors[name], seconds = timed(lambda m=model: m.encode(texts, batch_size=32, convert_to_numpy=True))
                times[name].append(seconds)
            for i, (name, embedder) in enumerate(embedders.items()):
                vectors[name], seconds = embed_job(work / "texts.txt", work / f"run{i}.npy", embedder)
                times[name].append(seconds)
        base_name = next(iter(baselines))
        base_seconds = float(np.median(times[base_name]))
        fp32 = vectors["bertlens embed, fp32"]
        print(f"{'run':92s} {'texts/s':>8s} {'ratio':>7s} {'min cos':>9s} {'mean cos':>9s}")
        for name in times:
            seconds = float(np.median(times[name]))
            cos = row_cosine(vectors[name].astype(np.float64), fp32.astype(np.float64))
            print(
                f"{name:92s} {len(texts) / seconds:8.0f} {base_seconds / seconds:6.2f}x {cos.min():9.6f} {cos.mean():9.6f}"
            )
        print("(ratio: to the baseline's texts/s; cosines: each run's vectors vs bertlens fp32, which is the same")
        print(" function as the baseline; a distilled student is compared with its teacher's fp32 vectors only if")
        print(" the teacher is the default recipe)")
        if not args.skip_memory:
            small = peak_memory(texts, 10_000, work, args.model)
            large = peak_memory(texts, 100_000, work, args.model)
            print(
                f"peak RSS, bertlens embed bf16: 10k texts {small:.0f} MB, 100k texts {large:.0f} MB, "
                f"growth {100 * (large / small - 1):+.1f}%"
            )


if __name__ == "__main__":
    main()
