"""Late interaction: a query scored against a document by MaxSim over their token vectors (issue #52).

ColBERT (Khattab & Zaharia, SIGIR 2020, eq. 3): S(q, d) = sum over the query's tokens i of max over the document's
tokens j of cos(q_i, d_j). Nothing is pooled; a text is the matrix of its (kept) token vectors. Token vectors are
packed: one [T, H] matrix for a collection and offsets [N+1] marking where each text's rows start, so a corpus of
many short texts is one matrix product per block of documents, not one per pair.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

SCORE_BYTES = 256 * 2**20  # working memory of one block of query-token x document-token similarities
QUERY_AUGMENT = 32  # ColBERT's query length N_q: queries padded with mask tokens to it (sec. 3.2)


@dataclass(frozen=True)
class TokenReading:
    """Tokens at `layer`, without pooling: the filters, query augmentation and reduction late interaction is scored
    with (the retrieval sweep's late-interaction candidates; a multi-vector recipe records the same choices)."""

    layer: int
    drop_special: bool = False
    drop_punctuation: bool = False  # the documents' punctuation tokens (ColBERT's document filter)
    augment: int = 0  # queries padded with the mask token to this many tokens (0: as they are)
    reduction: str | None = None  # token vectors projected to 128 dimensions: 'pca' or 'random' (token_projection.py)

    @property
    def name(self) -> str:
        parts = [f"tokens/L{self.layer}"]
        parts += ["no-special"] if self.drop_special else []
        parts += ["no-punct"] if self.drop_punctuation else []
        parts += [f"q{self.augment}"] if self.augment else []
        parts += [f"{self.reduction}128"] if self.reduction else []
        return "+".join(parts)

    @property
    def plain(self) -> bool:
        """Only the layer chosen: the tokens as the model gives them."""
        return not (self.drop_special or self.drop_punctuation or self.augment or self.reduction)


@dataclass(frozen=True)
class PackedTokens:
    """Token vectors of N texts: vectors [T, H] (text i's rows are offsets[i]:offsets[i+1]), offsets [N+1]."""

    vectors: np.ndarray  # [T, H], float16 or float32, possibly memory-mapped
    offsets: np.ndarray  # [N+1] int64, offsets[0] == 0, offsets[-1] == T
    unit: bool = False  # vectors are float32 unit rows already (`normalized`): MaxSim reads them as they are

    def __post_init__(self) -> None:
        offsets = np.asarray(self.offsets)
        if offsets.ndim != 1 or len(offsets) < 1 or offsets[0] != 0 or offsets[-1] != len(self.vectors):
            raise ValueError(f"offsets must run from 0 to {len(self.vectors)} (the token rows), got {offsets[:3]}...")
        if np.any(np.diff(offsets) < 0):
            raise ValueError("offsets must not decrease")

    @property
    def texts(self) -> int:
        return len(self.offsets) - 1

    def of(self, i: int) -> np.ndarray:
        """Text i's token vectors [t, H]."""
        return self.vectors[self.offsets[i] : self.offsets[i + 1]]

    def normalized(self) -> PackedTokens:
        """The same tokens as float32 unit rows, made once: a corpus searched by many queries is not normalised again
        for each (that, not the products, was most of a query's time)."""
        if self.unit:
            return self
        return PackedTokens(_unit(self.vectors).numpy(), self.offsets, unit=True)

    def to_arrow(self, value_type):
        """An Arrow list<fixed_size_list<value_type, H>> column: one row a text, its token vectors in it."""
        import pyarrow as pa

        dtype = value_type.to_pandas_dtype()
        flat = pa.array(np.ascontiguousarray(self.vectors, dtype=dtype).reshape(-1), value_type)
        rows = pa.FixedSizeListArray.from_arrays(flat, self.vectors.shape[1])
        return pa.ListArray.from_arrays(pa.array(np.asarray(self.offsets, dtype=np.int32)), rows)

    @classmethod
    def from_arrow(cls, column) -> PackedTokens:
        """The texts of an Arrow list<fixed_size_list<H>> column (`to_arrow`'s; chunked or sliced alike)."""
        column = column.combine_chunks() if hasattr(column, "combine_chunks") else column
        offsets = column.offsets.to_numpy().astype(np.int64)  # [N+1], from the slice's start
        width = column.type.value_type.list_size
        flat = column.flatten().flatten().to_numpy(zero_copy_only=False).reshape(-1, width)  # [T, H]
        return cls(flat, offsets - offsets[0])

    @classmethod
    def from_list(cls, matrices: list[np.ndarray]) -> PackedTokens:
        """Pack a list of [t_i, H] matrices."""
        offsets = np.concatenate([[0], np.cumsum([len(m) for m in matrices])]).astype(np.int64)
        width = matrices[0].shape[1] if matrices else 0
        vectors = np.concatenate(matrices) if matrices else np.zeros((0, width), dtype=np.float32)
        return cls(vectors, offsets)


def _unit(vectors: np.ndarray, unit: bool = False) -> torch.Tensor:
    """Rows as float32 unit vectors (a zero row stays zero); `unit`: they are already."""
    if unit:
        return torch.from_numpy(np.ascontiguousarray(vectors))  # [n, H]
    x = torch.from_numpy(np.asarray(vectors, dtype=np.float32))  # [n, H]
    return x / x.norm(dim=1, keepdim=True).clamp(min=1e-12)


def _document_blocks(offsets: np.ndarray, query_tokens: int) -> list[tuple[int, int]]:
    """(first, end) document ranges whose tokens x the query tokens fit SCORE_BYTES of float32 similarities."""
    budget = max(1, SCORE_BYTES // (4 * max(query_tokens, 1)))  # document tokens per block
    blocks, first = [], 0
    count = len(offsets) - 1
    while first < count:
        end = int(np.searchsorted(offsets, offsets[first] + budget, side="right")) - 1
        end = min(max(end, first + 1), count)  # at least one document, whatever its length
        blocks.append((first, end))
        first = end
    return blocks


def maxsim(queries: PackedTokens, documents: PackedTokens) -> np.ndarray:
    """[Q, D] late-interaction scores: each query token's best cosine over a document's tokens, summed over the
    query's tokens. A document with no tokens scores -inf (it cannot match); a query with none scores 0."""
    q = _unit(queries.vectors)  # [Tq, H]
    spans = list(zip(queries.offsets[:-1], queries.offsets[1:], strict=True))  # each query's token rows
    scores = np.full((queries.texts, documents.texts), -np.inf, dtype=np.float32)
    lengths = np.diff(documents.offsets)
    for first, end in _document_blocks(documents.offsets, len(q)):
        base = documents.offsets[first]
        d = _unit(documents.vectors[base : documents.offsets[end]], documents.unit)  # [Tb, H]
        kept = np.flatnonzero(lengths[first:end] > 0)  # documents of this block with tokens
        if len(kept) == 0:
            continue
        sims = (q @ d.T).numpy()  # [Tq, Tb]
        # an empty document has no columns, so the kept documents' starts cut the columns into their own tokens
        starts = documents.offsets[first:end][kept] - base  # [kept]
        best = np.maximum.reduceat(sims, starts, axis=1) if len(q) else np.zeros((0, len(kept)), np.float32)
        for k, (start, stop) in enumerate(spans):
            scores[k, first + kept] = best[start:stop].sum(axis=0)  # [kept]; 0 for a query with no tokens
    return scores
