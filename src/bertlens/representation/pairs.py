"""Features of a text pair from its two vectors: the one definition probes (numpy) and heads (torch) share.

similarity:  [|u-v|, u*v]          (SentEval's STS features, Conneau et al. 2017)
otherwise:   [u, v, |u-v|, u*v]    (InferSent, Conneau et al. 2017; SBERT's classification head)
"""

from __future__ import annotations

import numpy as np
import torch


def pair_features(u, v, kind: str):
    """u, v [n, D] (numpy or torch, alike) -> [n, 2D] for similarity, [n, 4D] otherwise; u alone when v is None."""
    if v is None:
        return u
    blocks = [abs(u - v), u * v] if kind == "similarity" else [u, v, abs(u - v), u * v]
    return torch.cat(blocks, dim=-1) if isinstance(u, torch.Tensor) else np.concatenate(blocks, axis=-1)


def pair_width(dim: int, kind: str) -> int:
    """Width of `pair_features` for D-wide vectors."""
    return dim * (2 if kind == "similarity" else 4)
