"""Every layer pooled by every pooler, from one pass: the bank's building block, CKA's and geometry's input."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from bertlens.encoding.encoder import Encoder, LayerStates
from bertlens.progress import Progress, silent
from bertlens.representation.poolers import pool, token_mask


def pool_layers(states: LayerStates, poolers: Sequence[str], include_special: bool = True) -> list[torch.Tensor]:
    """One [L+1, B, H] tensor per pooler; the attention pooler reads the last layer's [CLS] attention (stays linear)."""
    mask = token_mask(states.attention_mask, states.special_tokens_mask, include_special)  # [B, T]
    weights = states.cls_attention[-1] if states.cls_attention is not None else None  # [B, T]
    return [pool(name, states.hidden, mask, weights) for name in poolers]


def layer_vectors(
    encoder: Encoder, texts: Sequence[str], poolers: Sequence[str] = ("mean",), progress: Progress = silent
) -> dict[str, np.ndarray]:
    """pooler -> [L+1, N, H] float32, rows in input order."""
    out = {p: np.zeros((encoder.num_layers + 1, len(texts), encoder.hidden_size), dtype=np.float32) for p in poolers}
    for states in encoder.stream(encoder.tokenize(list(texts)), progress):
        rows = states.doc_index.numpy()
        for name, pooled in zip(poolers, pool_layers(states, poolers)):
            out[name][:, rows] = pooled.float().numpy()  # [L+1, B, H]
    return out
