"""Long texts as model inputs: each text tokenized once, cut into pieces, each piece wrapped in
the model's own special tokens (see chunking.py for the spans). Pure over the tokenizer.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch

from bertlens.encoding.chunking import LongText
from bertlens.encoding.encoder import Encoder, LayerStates, Tokenized


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
class Chunks:
    """Late chunking: the chunks pooled out of the pieces (windows), each from one piece's token states."""

    piece: np.ndarray  # [K] the piece (model input) a chunk is pooled from
    span: np.ndarray  # [K, 2] its [start, end) positions in that input (after the special-token prefix)
    rank: np.ndarray  # [K] its rank among the chunks pooled from the same piece


@dataclass(frozen=True)
class PieceTokens:
    """Model inputs for the pieces of a group of texts, and which text each piece belongs to.

    Under late chunking the vectors are per chunk, not per piece: owner/tokens/order then describe the
    chunks, and `chunks` says where each sits."""

    tokenized: Tokenized
    owner: np.ndarray  # [C] text index (of each piece, or of each chunk under late chunking)
    tokens: np.ndarray  # [C] content tokens in the piece (chunk)
    order: np.ndarray  # [C] rank of the piece (chunk) within its text
    chunks: Chunks | None = None
    characters: np.ndarray | None = None  # [C, 2] each unit's [start, end) characters in its text (when asked)

    @property
    def units(self) -> int:
        """How many vectors the pieces give: one per piece, or one per chunk."""
        return len(self.owner)


def chunk_views(states: LayerStates, chunks: Chunks, piece_rows: np.ndarray):
    """Late chunking over one batch of pieces (their rows `piece_rows` [B]): for each chunk rank k, the states with
    a mask covering each piece's k-th chunk only, the batch rows that have one, and those chunks' ids. The hidden
    states are shared, not copied: a pooler reads the chunk's tokens through the mask."""
    length = states.attention_mask.shape[1]
    positions = torch.arange(length)  # [T]
    row_of_piece = {int(p): b for b, p in enumerate(piece_rows)}
    for k in range(int(chunks.rank.max()) + 1 if len(chunks.rank) else 0):
        ids = np.flatnonzero(chunks.rank == k)
        pairs = [(row_of_piece[int(chunks.piece[i])], i) for i in ids if int(chunks.piece[i]) in row_of_piece]
        if not pairs:
            continue
        rows, chosen = (np.array(x) for x in zip(*pairs))
        mask = torch.zeros_like(states.attention_mask, dtype=torch.bool)  # [B, T]
        start = torch.from_numpy(chunks.span[chosen, 0])[:, None]  # [n, 1]
        end = torch.from_numpy(chunks.span[chosen, 1])[:, None]  # [n, 1]
        mask[torch.from_numpy(rows)] = (positions >= start) & (positions < end)  # [n, T]
        yield replace(states, attention_mask=mask), rows, chosen


def piece_tokens(
    encoder: Encoder, texts: Sequence[str], long_text: LongText, first: int = 0, characters: bool = False
) -> PieceTokens:
    """Tokenize texts once (no special tokens), cut them into pieces, wrap each in the model's special tokens;
    with `characters`, also where each unit (piece, or chunk under late chunking) sits in its text's characters."""
    prefix, suffix = special_affixes(encoder)
    size = encoder.max_length - len(prefix) - len(suffix)
    encoded = encoder.tokenizer(
        list(texts), add_special_tokens=False, truncation=False, return_offsets_mapping=characters
    )
    content = encoded["input_ids"]
    ids, special, owner, count, rank, spans = [], [], [], [], [], []
    late: list[tuple[int, int, int, int]] = []  # (piece, start, end, text) per chunk, under late chunking
    late_spans: list[tuple[int, int, int]] = []  # (text, start, end) in the text's tokens, per chunk
    for offset, doc in enumerate(content):
        piece_spans = long_text.pieces(len(doc), size)
        if long_text.kind == "late":
            window_starts = [piece[0][0] for piece in piece_spans]
            for w, a, b in long_text.chunks(len(doc), size):
                late.append((len(ids) + w, len(prefix) + a - window_starts[w], len(prefix) + b - window_starts[w],
                             first + offset))  # fmt: skip
                late_spans.append((offset, a, b))
        for k, piece in enumerate(piece_spans):
            body = [t for start, end in piece for t in doc[start:end]]
            ids.append(prefix + body + suffix)
            special.append([1] * len(prefix) + [0] * len(body) + [1] * len(suffix))
            owner.append(first + offset)
            count.append(len(body))
            rank.append(k)
            spans.append((offset, piece[0][0], piece[-1][1]))
    tokenized = Tokenized(ids, special, 0)
    where = _characters(encoded["offset_mapping"], late_spans or spans) if characters else None
    if long_text.kind != "late":
        return PieceTokens(tokenized, np.array(owner), np.array(count), np.array(rank), characters=where)
    piece, start, end, text = (np.array(column, dtype=np.int64) for column in zip(*late))
    within_piece = np.zeros(len(piece), dtype=np.int64)
    within_text = np.zeros(len(piece), dtype=np.int64)
    for i in range(1, len(piece)):  # chunks come in text order: count them per piece and per text
        within_piece[i] = within_piece[i - 1] + 1 if piece[i] == piece[i - 1] else 0
        within_text[i] = within_text[i - 1] + 1 if text[i] == text[i - 1] else 0
    chunks = Chunks(piece, np.stack([start, end], axis=1), within_piece)
    return PieceTokens(tokenized, text, end - start, within_text, chunks, where)


def _characters(offsets: list, spans: list[tuple[int, int, int]]) -> np.ndarray:
    """[U, 2] character spans of token spans (text, start, end); an empty span (an empty text) is [0, 0)."""
    out = np.zeros((len(spans), 2), dtype=np.int64)
    for u, (text, start, end) in enumerate(spans):
        if end > start:
            out[u] = (offsets[text][start][0], offsets[text][end - 1][1])
    return out


def pooled_units(states: LayerStates, pieces: PieceTokens, pool) -> Iterator[tuple[np.ndarray, object]]:
    """`pool(states)` for one batch of pieces, as (unit ids, pooled rows): the pieces themselves, or under late
    chunking each of their chunks (pooled through a mask over its tokens)."""
    piece_rows = states.doc_index.numpy()
    if pieces.chunks is None:
        yield piece_rows, pool(states)
        return
    for view, rows, chunk_ids in chunk_views(states, pieces.chunks, piece_rows):
        pooled = pool(view)
        yield (
            chunk_ids,
            tuple(None if x is None else x[rows] for x in pooled) if isinstance(pooled, tuple) else pooled[rows],
        )


def piece_groups(encoder: Encoder, texts: Sequence[str], long_text: LongText, group: int, characters: bool = False):
    """(first text index, PieceTokens) for consecutive groups of texts: memory is bounded by a group."""
    for first in range(0, len(texts), group):
        yield first, piece_tokens(encoder, texts[first : first + group], long_text, first, characters)
