"""Texts longer than the model limit: pieces per strategy, encoded in batches, aggregated per text.

Each text is tokenized once without special tokens; its pieces (encoding/pieces.py) are wrapped
in the model's own special tokens and encoded across texts in length-bucketed batches, keeping
the piece -> text index. Texts are processed a group at a time, so memory is bounded by the
group, not by the longest document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bertlens.encoding.chunking import LongText
from bertlens.encoding.encoder import Encoder
from bertlens.encoding.pieces import piece_groups, pooled_units
from bertlens.progress import Progress, counting, silent
from bertlens.representation.aggregate import aggregate
from bertlens.representation.apply import Representation


@dataclass(frozen=True)
class Pieces:
    """Encoded pieces: vectors [C, D], the text each came from [C], its content tokens [C], its order [C], and
    (when asked) its [start, end) characters in that text [C, 2]."""

    vectors: np.ndarray
    doc_index: np.ndarray
    tokens: np.ndarray
    order: np.ndarray
    characters: np.ndarray | None = None

    def aggregate(self, texts: int, how: str) -> np.ndarray:
        """One float32 vector per text [texts, D]."""
        return aggregate(self.vectors, self.doc_index, self.tokens, self.order, texts, how).astype(np.float32)


def encode_pieces(
    encoder: Encoder,
    representation: Representation,
    texts: Sequence[str],
    long_text: LongText,
    *,
    group: int = 64,
    progress: Progress = silent,
    characters: bool = False,
) -> Pieces:
    """Every piece of every text, encoded; pieces of one text never depend on other texts in the batch."""
    vectors, doc_index, tokens, order, spans = [], [], [], [], []
    for first, pieces in piece_groups(encoder, texts, long_text, group, characters):
        out = None
        for states in encoder.stream(pieces.tokenized):
            for units, pooled in pooled_units(states, pieces, lambda s: representation(s).float().numpy()):  # [B, D]
                if out is None:
                    out = np.zeros((pieces.units, pooled.shape[1]), dtype=np.float32)  # [C, D]
                out[units] = pooled
        vectors.append(out)
        doc_index.append(pieces.owner)
        tokens.append(pieces.tokens)
        order.append(pieces.order)
        spans.append(pieces.characters)
        progress(counting("encoding", "texts"), min(first + group, len(texts)), len(texts))
    where = np.concatenate(spans) if characters else None
    return Pieces(*(np.concatenate(x) for x in (vectors, doc_index, tokens, order)), where)


def encode_long(
    encoder: Encoder,
    representation: Representation,
    texts: Sequence[str],
    long_text: LongText,
    progress: Progress = silent,
) -> np.ndarray:
    """[N, D] float32: each text's pieces aggregated as the strategy says."""
    pieces = encode_pieces(encoder, representation, texts, long_text, progress=progress)
    return pieces.aggregate(len(texts), long_text.piece_aggregate)
