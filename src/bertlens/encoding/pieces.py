"""Long texts as model inputs: each text tokenized once, cut into pieces, each piece wrapped in
the model's own special tokens (see chunking.py for the spans). Pure over the tokenizer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bertlens.encoding.chunking import LongText
from bertlens.encoding.encoder import Encoder, Tokenized


def special_affixes(encoder: Encoder) -> tuple[list[int], list[int]]:
    """The model's special tokens before and after content, read from how it encodes one word."""
    encoded = encoder.tokenizer("a", return_special_tokens_mask=True)
    ids, special = encoded["input_ids"], encoded["special_tokens_mask"]
    content = [i for i, s in enumerate(special) if not s]
    return ids[: content[0]], ids[content[-1] + 1 :]


def piece_size(encoder: Encoder) -> int:
    """Content tokens that fit in one piece: the model limit minus its special tokens."""
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


def piece_groups(encoder: Encoder, texts: Sequence[str], long_text: LongText, group: int):
    """(first text index, PieceTokens) for consecutive groups of texts: memory is bounded by a group."""
    for first in range(0, len(texts), group):
        yield first, piece_tokens(encoder, texts[first : first + group], long_text, first)
