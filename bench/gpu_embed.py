"""bertlens against sentence-transformers in half precision on a GPU: texts/s and fidelity, side by side.

Usage: python bench/gpu_embed.py --model DIR --texts FILE [FILE ...] [--device cuda] [--rounds 3]

Issue #63's GPU row ("bertlens embed against sentence-transformers fp16"). Each FILE holds one text a line (the
device script, bench/device_rows.sh, gives STS-B sentences and movie reviews cut at 256 tokens, written by
bench/device_prepare.py). For each file, in interleaved rounds (best of `--rounds`, each path warmed first):
- sentence-transformers `encode`, fp16 weights (`.half()`), batch 32 (its default) and batch 256;
- bertlens `Embedder.encode`, the default recipe (mean pooling) at fp32 and bf16 autocast (what `--precision auto`
  takes on a GPU), batches cut by the device's token budget (encoding/device.py).
Fidelity: each path's min and mean cosine to bertlens fp32 (the same function as sentence-transformers fp32).
Runs on the CPU too (`--device cpu`), which is how it is checked without a GPU.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from bertlens.embedding.embedder import Embedder
from bertlens.metrics.geometry import row_cosine
from bertlens.representation.recipe import Recipe


def _paths(model: str, device: str) -> dict:
    """Every path to time: name -> a function of the texts giving float32 vectors."""
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(model, device=device).half()
    fp32 = Embedder(Recipe(model=model), device=device)
    bf16 = Embedder(Recipe(model=model, precision="bf16"), device=device)
    return {
        "sentence-transformers fp16, batch 32": lambda texts: st.encode(texts, batch_size=32),
        "sentence-transformers fp16, batch 256": lambda texts: st.encode(texts, batch_size=256),
        "bertlens fp32": fp32.encode,
        "bertlens bf16 (--precision auto)": bf16.encode,
    }


def _timed(encode, texts: list[str], device: str) -> tuple[np.ndarray, float]:
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    start = time.perf_counter()
    vectors = np.asarray(encode(texts), dtype=np.float32)  # [N, H], on the host: the device has finished
    return vectors, time.perf_counter() - start


def compare(paths: dict, texts: list[str], rounds: int, device: str) -> None:
    """Print texts/s, the ratio to sentence-transformers' best and the cosines to bertlens fp32 for each path."""
    for encode in paths.values():
        encode(texts[:256])
    best: dict[str, float] = {}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(rounds):
        for name, encode in paths.items():
            vectors[name], seconds = _timed(encode, texts, device)
            best[name] = min(best.get(name, float("inf")), seconds)
    baseline = min(seconds for name, seconds in best.items() if name.startswith("sentence-transformers"))
    reference = vectors["bertlens fp32"].astype(np.float64)
    print("| path | texts/s | vs sentence-transformers' fastest | min cosine | mean cosine |")
    print("|---|---|---|---|---|")
    for name, seconds in best.items():
        cosine = row_cosine(vectors[name].astype(np.float64), reference)
        print(f"| {name} | {len(texts) / seconds:,.1f} | {baseline / seconds:.2f}x | {cosine.min():.5f} | "
              f"{cosine.mean():.5f} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True, help="a sentence-transformers model directory")
    parser.add_argument("--texts", type=Path, nargs="+", required=True, help="files of one text a line")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    where = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "CPU"
    print(f"model {args.model}; device {args.device} ({where}); torch {torch.__version__}", flush=True)
    paths = _paths(args.model, args.device)
    for path in args.texts:
        texts = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        print(f"\n{path.name}: {len(texts):,} texts", flush=True)
        compare(paths, texts, args.rounds, args.device)


if __name__ == "__main__":
    main()
