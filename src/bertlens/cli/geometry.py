"""`bertlens geometry`: anisotropy diagnostics per layer and pooler (cosines, self-similarity, PCs, uniformity)."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from bertlens.cli.progress import STDERR
from bertlens.cli.text_source import add_text_source, load_texts
from bertlens.encoding.encoder import Encoder
from bertlens.evaluation.geometry import collect, layer_diagnostics
from bertlens.evaluation.geometry_report import markdown_table, write_outputs
from bertlens.representation.poolers import check_pooler

POSITIVE_SHARE = 0.8  # similarity pairs scored >= 80% of the maximum (STS-B: >= 4 of 5) count as positives


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("geometry", help="anisotropy diagnostics per layer and pooler",
                                   description="Measure how anisotropic each layer's vectors are (Ethayarajh 2019; "
                                   "Wang & Isola 2020) on your texts.")
    add_text_source(parser)
    parser.add_argument("--model", default="default", help="'default', a model directory or a hub id")
    parser.add_argument("--poolers", default="cls,mean,max", help="sentence poolers to diagnose (comma list)")
    parser.add_argument("--max-length", type=int, help="token limit (default: the model's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("out/geometry"))
    parser.add_argument("--trust-remote-code", action="store_true")
    parser.set_defaults(run=run, max_texts=2000)


def _positives(task, texts: list[str]) -> tuple[np.ndarray, np.ndarray] | None:
    if task is None or task.kind != "similarity":
        return None
    index = {t: i for i, t in enumerate(texts)}
    a, b = [], []
    top = max(float(split.targets.max()) for split in task.splits.values())
    for split in task.splits.values():
        for x, y, score in zip(split.texts_a, split.texts_b, split.targets):
            if score >= POSITIVE_SHARE * top and x in index and y in index:
                a.append(index[x])
                b.append(index[y])
    return (np.array(a), np.array(b)) if a else None


def run(args: argparse.Namespace) -> None:
    poolers = tuple(check_pooler(p.strip()) for p in args.poolers.split(",") if p.strip())
    texts, source, task = load_texts(args, args.seed)
    encoder = Encoder(args.model, max_length=args.max_length, attentions="cls" if "attention" in poolers else "none",
                      trust_remote_code=args.trust_remote_code)
    STDERR.print(f"encoding {len(texts)} texts from {source} ...")
    collected = collect(encoder, texts, poolers, seed=args.seed)
    rows = layer_diagnostics(collected, seed=args.seed, positives=_positives(task, texts))
    paths = write_outputs(rows, args.out, model=encoder.ref.name, source=source, texts=len(texts), seed=args.seed)
    STDERR.print("\n".join(markdown_table(rows)), markup=False, soft_wrap=True)
    STDERR.print(f"wrote {paths['report']}, {paths['results']} and {paths['plot']}", markup=False, soft_wrap=True)
