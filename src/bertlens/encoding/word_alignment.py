"""Words -> the subword tokens that cover them, through the tokenizer's character offsets.

Aligning on offsets in the real sentence text (not on words fed one by one) keeps the
tokenisation the model sees in use: "don't" stays one stretch of text, and UD's words
"do" and "n't" each take the tokens that overlap their characters. A token that straddles
two words belongs to both. Normalisation (lower-casing, accent stripping) does not move
offsets, so "Café" still maps to the tokens of "cafe". A word with no token (cut off by
max_length, or made only of characters the tokenizer drops) gets none and is reported.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from bertlens.encoding.names import SUBWORD_POOLING  # noqa: F401 - re-exported


def covering_tokens(
    word_spans: Sequence[tuple[int, int]], token_offsets: Sequence[tuple[int, int]]
) -> list[np.ndarray]:
    """Token positions overlapping each word's [start, end) span; special tokens ((0, 0)) never match."""
    if not word_spans:
        return []
    offsets = np.asarray(token_offsets, dtype=np.int64).reshape(-1, 2)  # [T, 2]
    spans = np.asarray(word_spans, dtype=np.int64).reshape(-1, 2)  # [W, 2]
    real = offsets[:, 1] > offsets[:, 0]  # [T] tokens with characters
    overlap = (
        (offsets[None, :, 0] < spans[:, None, 1]) & (offsets[None, :, 1] > spans[:, None, 0]) & real[None]
    )  # [W, T]
    return [np.flatnonzero(row) for row in overlap]


def pooling_weights(tokens: np.ndarray, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """(positions, weights) that pool a word's tokens: first, last or mean subword."""
    if len(tokens) == 0:
        return tokens, np.zeros(0, dtype=np.float32)
    if mode == "first":
        return tokens[:1], np.ones(1, dtype=np.float32)
    if mode == "last":
        return tokens[-1:], np.ones(1, dtype=np.float32)
    return tokens, np.full(len(tokens), 1.0 / len(tokens), dtype=np.float32)


def pool_words(hidden: torch.Tensor, groups: list[list[np.ndarray]], mode: str) -> torch.Tensor:
    """hidden [L+1, B, T, H], groups[b] = token positions per word of row b -> [L+1, W, H] (W words, row order).

    Words without tokens come out as zero vectors; callers mark them unaligned.
    """
    layers, batch, length, width = hidden.shape
    word_ids, positions, weights = [], [], []
    word = 0
    for b, row in enumerate(groups):
        for tokens in row:
            where, weight = pooling_weights(tokens, mode)
            word_ids.append(np.full(len(where), word, dtype=np.int64))
            positions.append(b * length + where)
            weights.append(weight)
            word += 1
    out = torch.zeros(layers, word, width, dtype=hidden.dtype)  # [L+1, W, H]
    if word == 0 or not positions:
        return out
    flat = hidden.reshape(layers, batch * length, width)  # [L+1, B*T, H]
    pos = torch.from_numpy(np.concatenate(positions))  # [P]
    w = torch.from_numpy(np.concatenate(weights)).to(hidden.dtype)  # [P]
    out.index_add_(1, torch.from_numpy(np.concatenate(word_ids)), flat[:, pos] * w[None, :, None])  # [L+1, W, H]
    return out
