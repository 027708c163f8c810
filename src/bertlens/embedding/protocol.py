"""What turns texts into vectors: one typed interface for every backend.

`Embedder` (PyTorch), `OnnxEmbedder` (ONNX Runtime) and `RayEmbedder` (a pool of Ray actors) implement
it; the embed job, the server, the scikit-learn and MTEB adapters and the experiments that only need
vectors depend on it alone, so a new backend (a remote server, a GPU pool) is one class here, not a
change in each of them. How many texts were cut at the model's limit comes back with the vectors
(`Embeddings.truncated`), never as state on the object, so concurrent callers cannot read each other's.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from bertlens.errors import BertlensError
from bertlens.progress import Progress, silent
from bertlens.representation.recipe import Recipe

TokenCounter = Callable[[Sequence[str]], list[int]]
TOKEN_VECTORS = "token_vectors"  # a capability: `token_vectors(texts)` gives every token's vector per text


@dataclass(frozen=True)
class Embeddings:
    """One call's result: vectors [N, D] float32 in input order, and how many texts were truncated."""

    vectors: np.ndarray
    truncated: int


@runtime_checkable
class TextEncoder(Protocol):
    """Texts -> vectors. Backends subclass it to inherit `encode`; anything with the same members fits too."""

    recipe: Recipe  # what the vectors are (precision resolved to what actually runs)
    dim: int  # width of the output vectors
    fingerprint: str  # identifies the weights (cache keys, resume checks)
    max_length: int  # tokens per text the model reads
    capabilities: frozenset[str] = frozenset()  # optional parts it has (TOKEN_VECTORS); a route needing one checks

    def embed(self, texts: Sequence[str], progress: Progress = silent) -> Embeddings:
        """Embed texts; `progress("embedding", done, len(texts))` as batches finish."""
        ...

    def for_thread(self) -> TextEncoder:
        """A copy another thread may use at the same time (shared weights, its own tokenizer)."""
        ...

    def token_counter(self) -> TokenCounter:
        """A function giving each text's token count with special tokens (before truncation), on a tokenizer of
        its own, so a caller (the server's event loop) can count while worker threads encode."""
        ...

    def encode(self, texts: Sequence[str], progress: Progress = silent) -> np.ndarray:
        """Just the vectors [N, D] float32."""
        return self.embed(texts, progress).vectors

    def token_vectors(self, texts: Sequence[str]) -> list[np.ndarray]:
        """With TOKEN_VECTORS in `capabilities`: each text's token vectors [T_i, D] (the recipe's layers, before
        pooling); a backend without it refuses in one line."""
        raise BertlensError(f"{type(self).__name__} has no token vectors; use the PyTorch backend")


def token_counter_of(tokenizer) -> TokenCounter:
    """A `TokenCounter` over a private copy of `tokenizer` (a fast tokenizer is not safe to share across threads)."""
    own = copy.deepcopy(tokenizer)

    def count(texts: Sequence[str]) -> list[int]:
        return [len(ids) for ids in own(list(texts), add_special_tokens=True)["input_ids"]]

    return count
