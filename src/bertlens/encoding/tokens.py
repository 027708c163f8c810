"""Texts -> token ids, and token ids -> padded batches: the one tokenize and the one pad of the package.

The PyTorch encoder, the ONNX Runtime backend, masked-LM measurement and training objectives all go
through these, so truncation, special tokens and padding agree wherever a text is encoded. numpy only:
the ONNX backend runs without torch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from bertlens.encoding.batching import length_batches
from bertlens.errors import BertlensError
from bertlens.progress import Progress, silent


@dataclass(frozen=True)
class Tokenized:
    """Token ids per text (unpadded), how many texts were cut at max_length, and (when asked) each token's
    character span in its text ((0, 0) for special tokens) and whether it starts a word."""

    input_ids: list[list[int]]
    special_tokens_mask: list[list[int]]
    truncated: int
    offsets: list[list[tuple[int, int]]] | None = None
    word_starts: list[list[bool]] | None = None

    @property
    def lengths(self) -> np.ndarray:
        return np.fromiter((len(ids) for ids in self.input_ids), dtype=np.int64, count=len(self.input_ids))


def check_texts(texts: Sequence[str]) -> None:
    """A list of strings: a bare string would be read as a list of characters (a vector per letter, no error), and
    a number or None inside would fail deep in the tokenizer."""
    if isinstance(texts, str | bytes):
        raise BertlensError("texts is one string; give a list of strings (e.g. [text])")
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise BertlensError(f"texts[{index}] is a {type(text).__name__}, not a string; every text must be a str")


def tokenize(
    tokenizer, texts: Sequence[str], max_length: int, *, offsets: bool = False, word_starts: bool = False
) -> Tokenized:
    """Tokenize with truncation at `max_length` and count how many texts were cut.

    word_starts: a token starts a word when its word id differs from the previous token's (special tokens,
    which have none, count as starts), as whole-word masking needs.
    """
    check_texts(texts)
    if not texts:
        return Tokenized([], [], 0, [] if offsets else None, [] if word_starts else None)
    encoded = tokenizer(
        list(texts),
        truncation=True,
        max_length=max_length,
        return_special_tokens_mask=True,
        return_offsets_mapping=offsets,
    )
    truncated = sum(1 for enc in encoded.encodings if enc.overflowing)
    spans = [[tuple(pair) for pair in row] for row in encoded["offset_mapping"]] if offsets else None
    starts = None
    if word_starts:
        starts = [[i == 0 or w[i] != w[i - 1] for i in range(len(w))] for w in (e.word_ids for e in encoded.encodings)]
    return Tokenized(encoded["input_ids"], encoded["special_tokens_mask"], truncated, spans, starts)


def pad_ids(rows_ids: Sequence[Sequence[int]], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Right-padded ids [B, T] int64 and attention mask [B, T] int64 (1 on real tokens) of the given rows."""
    length = max(len(ids) for ids in rows_ids)
    ids = np.full((len(rows_ids), length), pad_id, dtype=np.int64)  # [B, T]
    attention = np.zeros((len(rows_ids), length), dtype=np.int64)  # [B, T]
    for i, row in enumerate(rows_ids):
        ids[i, : len(row)] = row
        attention[i, : len(row)] = 1
    return ids, attention


def map_batches(
    lengths: np.ndarray,
    run: Callable[[np.ndarray], np.ndarray],
    max_batch: int,
    max_tokens: int,
    progress: Progress = silent,
    stage: str = "encoding",
    workers: int = 1,
    batches: list[np.ndarray] | None = None,
) -> np.ndarray:
    """`run(rows)` -> [B, ...] for each length-bucketed batch of rows, put back in input order [N, ...]
    (no rows: an empty float64 array). With `workers` > 1, that many batches run at once on threads (for a `run`
    that releases the GIL, such as an ONNX Runtime session of one thread each); results are placed in order.
    `batches`: length_batches(lengths, max_batch, max_tokens) when the caller already made them (1 s at 100k rows)."""
    batches = length_batches(lengths, max_batch, max_tokens) if batches is None else batches
    out = None
    done = 0
    pool = ThreadPoolExecutor(workers) if workers > 1 and len(batches) > 1 else None
    parts = pool.map(run, batches) if pool else map(run, batches)
    try:
        for rows, part in zip(batches, parts, strict=True):
            part = np.asarray(part)
            if out is None:
                out = np.empty((len(lengths), *part.shape[1:]), dtype=part.dtype)
            out[rows] = part
            done += len(rows)
            progress(stage, done, len(lengths))
    finally:
        if pool:
            pool.shutdown(cancel_futures=True)
    return out if out is not None else np.empty((0,))


def token_prefix(lengths: Sequence[int], budget: int, minimum: int = 1) -> int:
    """How many leading texts reach `budget` tokens (at least `minimum`, at most all)."""
    reached = int(np.searchsorted(np.cumsum(lengths), budget)) + 1
    return min(len(lengths), max(minimum, reached))
