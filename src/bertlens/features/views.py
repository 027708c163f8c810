"""Augmented views of some texts, each a feature bank like the plain one: what label-free alignment compares."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bertlens.encoding.chunking import LongText
from bertlens.encoding.encoder import Encoder
from bertlens.features.bank import Bank, build_bank
from bertlens.progress import Progress, silent
from bertlens.tasks.augment import word_dropout


@dataclass(frozen=True)
class Views:
    """Augmented encodings of some bank rows: row k of each view bank is bank row `rows[k]`."""

    rows: np.ndarray  # [V]
    dropout: tuple[Bank, Bank]  # two seeded dropout passes (SimCSE's positives, Gao et al. 2021)
    words: Bank  # word dropout, no model dropout


@dataclass(frozen=True)
class BankOptions:
    """How the plain bank was built; the views are built the same way."""

    poolers: tuple[str, ...]
    include_special: bool = True
    dtype: str = "float16"
    long_text: LongText | None = None


def view_rows(texts: int, count: int, seed: int) -> np.ndarray:
    """`count` seeded rows of `texts`, sorted."""
    return np.sort(np.random.default_rng(seed).choice(texts, count, replace=False))


def build_views(
    encoder: Encoder,
    texts: list[str],
    rows: np.ndarray,
    cache_dir: Path,
    options: BankOptions,
    seed: int = 0,
    progress: Progress = silent,
) -> Views:
    """Three passes over texts[rows]: two with the model's dropout on (seeds seed+1, seed+2), one over the texts with
    words dropped (seeded). Cached like any bank, under a key that names the view and its seed."""
    chosen = [texts[r] for r in rows]

    def bank(view_texts: list[str], variant: str, stage: str) -> Bank:
        return build_bank(
            encoder,
            view_texts,
            cache_dir,
            poolers=options.poolers,
            include_special=options.include_special,
            dtype=options.dtype,
            long_text=options.long_text,
            progress=lambda _stage, done, total: progress(stage, done, total),
            variant=variant,
        )

    dropout = []
    for k in (1, 2):
        with encoder.dropout_active(seed + k):
            dropout.append(bank(chosen, f"dropout:{seed + k}", f"view {k} of 3 (dropout)"))
    words = bank(word_dropout(chosen, seed=seed), f"words:{seed}", "view 3 of 3 (word dropout)")
    return Views(rows, (dropout[0], dropout[1]), words)
