"""Embedding throughput of bertlens vs sentence-transformers, and memory at 10k vs 100k texts.

Usage: python bench/embed_speed.py [--texts N] [--skip-memory]

Speed: the same N STS-B sentences, mean pooling, default model. Baseline:
sentence-transformers `encode(batch_size=32)`, fp32. bertlens: the `bertlens embed` job
(`run_embed`: reading the file, tokenizing, length-bucketed batches, writing .npy), fp32
and bf16. Model loading is excluded on both sides; the runs alternate
`--repeats` times and each reports its median.
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
from bertlens.representation.recipe import Recipe
from common import REPO, sts_sentences, timed

MEMORY_PROBE = """
import resource, sys
from bertlens.cli.main import main
code = main(sys.argv[1:])
print("PEAK_RSS_MB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
sys.exit(code)
"""


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def embed_job(texts_file: Path, out: Path, embedder: Embedder) -> tuple[np.ndarray, float]:
    out.unlink(missing_ok=True)
    _, seconds = timed(lambda: run_embed(TableSpec(texts_file), out, embedder))
    return np.load(out), seconds


def peak_memory(texts: list[str], count: int, workdir: Path) -> float:
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
    parser.add_argument("--texts", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-memory", action="store_true")
    args = parser.parse_args()
    texts = [t for t in sts_sentences() if t.strip()][: args.texts]
    print(
        f"{len(texts)} STS-B sentences, default model (all-MiniLM-L6-v2), mean pooling, torch threads={torch.get_num_threads()}"
    )

    from sentence_transformers import SentenceTransformer

    embedders = {"fp32": Embedder(Recipe()), "bf16": Embedder(Recipe(precision="bf16"))}
    st = SentenceTransformer(str(embedders["fp32"].encoder.ref.path), device="cpu")
    for warm in (st.encode, *(e.encode for e in embedders.values())):
        warm(texts[:64])

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "texts.txt").write_text("\n".join(texts) + "\n")
        # Alternate the three runs, `repeats` rounds, and keep each one's median time (less noise).
        times: dict[str, list[float]] = {"st": [], "fp32": [], "bf16": []}
        for _ in range(args.repeats):
            reference, seconds = timed(lambda: st.encode(texts, batch_size=32))
            times["st"].append(seconds)
            for name, embedder in embedders.items():
                vectors, seconds = embed_job(work / "texts.txt", work / f"{name}.npy", embedder)
                times[name].append(seconds)
                if name == "fp32":
                    fp32 = vectors
                else:
                    bf16 = vectors
        st_seconds, fp32_seconds, bf16_seconds = (float(np.median(times[k])) for k in ("st", "fp32", "bf16"))
        st_rate = len(texts) / st_seconds
        rows = [
            (
                "sentence-transformers encode, batch 32, fp32 (baseline)",
                st_rate,
                1.0,
                cosine_rows(reference, reference).min(),
            ),
            (
                "bertlens embed, fp32",
                len(texts) / fp32_seconds,
                st_seconds / fp32_seconds,
                cosine_rows(fp32, reference).min(),
            ),
            (
                "bertlens embed, bf16",
                len(texts) / bf16_seconds,
                st_seconds / bf16_seconds,
                cosine_rows(bf16, fp32).min(),
            ),
        ]
        print(f"{'run':58s} {'texts/s':>9s} {'ratio':>7s} {'min cosine':>11s}")
        for name, rate, ratio, cos in rows:
            print(f"{name:58s} {rate:9.0f} {ratio:6.2f}x {cos:11.6f}")
        print("(min cosine: fp32 vs sentence-transformers; bf16 vs bertlens fp32)")
        if not args.skip_memory:
            small = peak_memory(texts, 10_000, work)
            large = peak_memory(texts, 100_000, work)
            print(
                f"peak RSS, bertlens embed bf16: 10k texts {small:.0f} MB, 100k texts {large:.0f} MB, "
                f"growth {100 * (large / small - 1):+.1f}%"
            )


if __name__ == "__main__":
    main()
