"""Features of a text pair from its two vectors: the one definition probes (numpy) and heads (torch) share.

symmetric (similarity):         [|u-v|, u*v]          (SentEval's STS features, Conneau et al. 2017)
ordered (pair classification):  [u, v, |u-v|, u*v]    (InferSent, Conneau et al. 2017; SBERT's classification head)
Which a task reads is its kind's `pair_features` (tasks/kinds.py).
"""

from __future__ import annotations

import numpy as np
import torch

from bertlens.tasks.kinds import ORDERED, SYMMETRIC, TaskKind

BLOCKS = {SYMMETRIC: 2, ORDERED: 4}  # vectors of width D per pair feature


def pair_features(u, v, kind: TaskKind):
    """u, v [n, D] (numpy or torch, alike) -> [n, 2D] (symmetric) or [n, 4D] (ordered); u alone when v is None."""
    if v is None:
        return u
    blocks = [abs(u - v), u * v] if _layout(kind) == SYMMETRIC else [u, v, abs(u - v), u * v]
    return torch.cat(blocks, dim=-1) if isinstance(u, torch.Tensor) else np.concatenate(blocks, axis=-1)


def pair_width(dim: int, kind: TaskKind) -> int:
    """Width of `pair_features` for D-wide vectors."""
    return dim * BLOCKS[_layout(kind)]


def _layout(kind: TaskKind) -> str:
    if kind.pair_features not in BLOCKS:
        raise ValueError(f"a {kind.name} task has one text per example: no pair features")
    return kind.pair_features
