"""Texts longer than the model limit: pieces per strategy, encoded in batches, aggregated per text.

Each text is tokenized once without special tokens; its pieces (see encoding/chunking.py)
are wrapped in the model's own special tokens and encoded across texts in length-bucketed
batches, keeping the piece -> text index. Texts are processed a group at a time, so memory
is bounded by the group, not by the longest document; aggregation runs on the fly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from bertlens.embedder import represent
from bertlens.encoding.chunking import LongText
from bertlens.encoding.encoder import Encoder, Tokenized
from bertlens.representation.recipe import Recipe


@dataclass(frozen=True)
class Pieces:
    """Encoded pieces: vectors [C, D], the text each came from [C], its content tokens [C], its order [C]."""

    vectors: np.ndarray
    doc_index: np.ndarray
    tokens: np.ndarray
    order: np.ndarray


def special_affixes(encoder: Encoder) -> tuple[list[int], list[int]]:
    """The model's special tokens before and after content, read from how it encodes one word."""
    encoded = encoder.tokenizer("a", return_special_tokens_mask=True)
    ids, special = encoded["input_ids"], encoded["special_tokens_mask"]
    content = [i for i, s in enumerate(special) if not s]
    return ids[: content[0]], ids[content[-1] + 1 :]


def piece_size(encoder: Encoder) -> int:
    prefix, suffix = special_affixes(encoder)
    return encoder.max_length - len(prefix) - len(suffix)


@dataclass(frozen=True)
class PieceTokens:
    """Model inputs for the pieces of a group of texts, and which text each piece belongs to."""

    tokenized: Tokenized
    owner: np.ndarray  # [C] text index
    tokens: np.ndarray  # [C] content tokens in the piece
    order: np.ndarray  # [C] rank of the piece within its text


def piece_tokens(encoder: Encoder, texts: Sequence[str], long_text: LongText, first: int = 0) -> PieceTokens:
    """Tokenize texts once (no special tokens), cut them into pieces, wrap each in the model's special tokens."""
    prefix, suffix = special_affixes(encoder)
    size = encoder.max_length - len(prefix) - len(suffix)
    content = encoder.tokenizer(list(texts), add_special_tokens=False, truncation=False)["input_ids"]
    ids, special, owner, count, rank = [], [], [], [], []
    for offset, doc in enumerate(content):
        for k, spans in enumerate(long_text.pieces(len(doc), size)):
            body = [t for start, end in spans for t in doc[start:end]]
            ids.append(prefix + body + suffix)
            special.append([1] * len(prefix) + [0] * len(body) + [1] * len(suffix))
            owner.append(first + offset)
            count.append(len(body))
            rank.append(k)
    return PieceTokens(Tokenized(ids, special, 0), np.array(owner), np.array(count), np.array(rank))


def encode_pieces(encoder: Encoder, recipe: Recipe, texts: Sequence[str], long_text: LongText, *,
                  group: int = 64, on_progress: Callable[[int, int], None] | None = None) -> Pieces:
    """Every piece of every text, encoded; pieces of one text never depend on other texts in the batch."""
    vectors, doc_index, tokens, order = [], [], [], []
    with encoder.running():
        for first in range(0, len(texts), group):
            pieces = piece_tokens(encoder, texts[first : first + group], long_text, first)
            out = None
            for states in encoder.iter_states(pieces.tokenized):
                pooled = represent(recipe, states).float().numpy()  # [B, D]
                if out is None:
                    out = np.zeros((len(pieces.owner), pooled.shape[1]), dtype=np.float32)
                out[states.doc_index.numpy()] = pooled
            vectors.append(out)
            doc_index.append(pieces.owner)
            tokens.append(pieces.tokens)
            order.append(pieces.order)
            if on_progress:
                on_progress(min(first + group, len(texts)), len(texts))
    return Pieces(np.concatenate(vectors), np.concatenate(doc_index), np.concatenate(tokens), np.concatenate(order))


def aggregate(pieces: Pieces, texts: int, how: str) -> np.ndarray:
    """One vector per text [N, D] from its pieces: mean, max, first, or token-weighted mean."""
    width = pieces.vectors.shape[1]
    if how == "first":
        out = np.zeros((texts, width), dtype=np.float32)
        first = pieces.order == 0
        out[pieces.doc_index[first]] = pieces.vectors[first]
        return out
    if how == "max":
        out = np.full((texts, width), -np.inf, dtype=np.float32)
        np.maximum.at(out, pieces.doc_index, pieces.vectors)
        return out
    weights = pieces.tokens.astype(np.float64) if how == "weighted" else np.ones(len(pieces.doc_index))
    weights = np.maximum(weights, 1e-9)  # an empty text still gets its (special-tokens-only) piece
    total = np.zeros((texts, width))
    np.add.at(total, pieces.doc_index, pieces.vectors * weights[:, None])
    norm = np.bincount(pieces.doc_index, weights=weights, minlength=texts)[:, None]
    return (total / norm).astype(np.float32)


def encode_long(encoder: Encoder, recipe: Recipe, texts: Sequence[str], long_text: LongText,
                on_progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    pieces = encode_pieces(encoder, recipe, texts, long_text, on_progress=on_progress)
    return aggregate(pieces, len(texts), long_text.aggregate if long_text.kind == "windows" else "first")
