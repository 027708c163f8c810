"""Anisotropy and its fixes on STS-B: random-pair cosine and test Spearman, before and after
whitening (Su et al. 2021) and after unsupervised SimCSE (Gao et al. 2021).

Usage: python bench/geometry_sts.py MODEL [--simcse-texts N] [--pooler mean] [--out DIR]
- baseline: the recipe's vectors (last layer, given pooler), cosine Spearman on STS-B test
- whitening: fitted on every STS-B sentence (train+dev+test, unlabelled, as BERT-whitening
  does), all components, and k = 256 or width/2
- SimCSE: 1 epoch over N sentences of ../shared/data/raw/state_union.txt (sentence-split),
  batch 64, lr 3e-5, temperature 0.05, then the same evaluation (and whitening on top)
Random-pair cosine: 5,000 random pairs of STS-B test sentences.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from bertlens.embedding.embedder import Embedder
from bertlens.experiments.contrastive import Examples, run_contrastive
from bertlens.representation.postprocess import PostProcessor, parse_steps
from bertlens.representation.recipe import Recipe
from bertlens.tasks.catalog import get_task
from bertlens.tasks.loaders import load_catalog_task
from bertlens.training.config import CONTRASTIVE_DEFAULTS
from common import DATA, REPO


def raw_sentences(limit: int, seed: int = 0) -> list[str]:
    text = (DATA / "raw" / "state_union.txt").read_text(encoding="utf-8", errors="replace")
    pieces = [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n", text)]
    sentences = [s for s in pieces if 5 <= len(s.split()) <= 60]
    rng = np.random.default_rng(seed)
    return [sentences[i] for i in np.sort(rng.choice(len(sentences), min(limit, len(sentences)), replace=False))]


def evaluate(embedder: Embedder, test, fit_texts: list[str], label: str) -> list[tuple[str, float, float]]:
    a = embedder.encode(list(test.texts_a))
    b = embedder.encode(list(test.texts_b))
    fit = embedder.encode(fit_texts)
    rng = np.random.default_rng(0)
    i, j = rng.integers(0, len(a), 5000), rng.integers(0, len(b), 5000)
    rows = []
    width = a.shape[1]
    variants = [
        ("", None),
        (" + whitening", "whiten"),
        (f" + whitening k={min(256, width // 2)}", f"whiten:{min(256, width // 2)}"),
    ]
    for suffix, steps in variants:
        if steps is None:
            x, y = a, b
        else:
            fitted = PostProcessor.fit(parse_steps(steps), fit)
            x, y = fitted.transform(a), fitted.transform(b)
        cos = (x * y).sum(1) / (np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1))
        ux, uy = x / np.linalg.norm(x, axis=1, keepdims=True), y / np.linalg.norm(y, axis=1, keepdims=True)
        rows.append((label + suffix, float(spearmanr(cos, test.targets)[0]), float((ux[i] * uy[j]).sum(1).mean())))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--pooler", default="mean")
    parser.add_argument("--simcse-texts", type=int, default=20000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--out", type=Path, default=REPO / "out" / "simcse")
    args = parser.parse_args()
    task = load_catalog_task(get_task("stsb"), DATA)
    test = task.splits["test"]
    fit_texts = task.all_texts()
    recipe = Recipe(model=args.model, pooler=args.pooler)
    rows = evaluate(Embedder(recipe), test, fit_texts, f"{Path(args.model).name} {args.pooler}")
    texts = raw_sentences(args.simcse_texts)
    start = time.perf_counter()
    config = dataclasses.replace(CONTRASTIVE_DEFAULTS, lr=args.lr, batch_size=args.batch_size)
    # SimCSE trains on sentences cut at 32 word pieces; the one training loop (checkpoints, resume) runs it
    result, saved = run_contrastive(
        Examples(texts, None, "raw/state_union.txt"), recipe.replace(max_length=32), config, args.out, restart=True
    )
    seconds = time.perf_counter() - start
    rows += evaluate(Embedder(saved.replace(max_length=None)), test, fit_texts, "after SimCSE")
    print(
        f"SimCSE: {len(texts)} sentences, {result.steps} steps, loss {result.first_loss:.3f} -> {result.last_loss:.3f}, "
        f"{seconds:.0f} s ({seconds / 900:.2f} x the 15-minute budget); saved {args.out}"
    )
    print("| representation | STS-B test Spearman | random-pair cosine |")
    print("|---|---|---|")
    for label, rho, cos in rows:
        print(f"| {label} | {rho:.4f} | {cos:.3f} |")


if __name__ == "__main__":
    main()
