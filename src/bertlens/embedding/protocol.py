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
from pathlib import Path
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


@dataclass(frozen=True)
class ChunkEmbeddings:
    """A chunk recipe's result (its long_text keeps one vector per chunk, `maxp`): rows [C, D] float32, the input
    text each belongs to [C], the chunk's number within it [C] and its [start, end) characters in it [C, 2]."""

    vectors: np.ndarray
    owner: np.ndarray
    chunk: np.ndarray
    characters: np.ndarray


@runtime_checkable
class TextEncoder(Protocol):
    """Texts -> vectors. Backends subclass it to inherit `encode`; anything with the same members fits too."""

    recipe: Recipe  # what the vectors are (precision resolved to what actually runs)
    dim: int  # width of the output vectors
    fingerprint: str  # identifies the weights (cache keys, resume checks)
    max_length: int  # tokens per text the model reads
    capabilities: frozenset[str] = frozenset()  # optional parts it has (TOKEN_VECTORS); a route needing one checks
    chunked: bool = False  # texts become one vector per chunk (embed_chunks), not one each (a maxp recipe's documents)
    multi_vector: bool = False  # texts become every kept token's vector (embed_tokens): a pooler 'tokens' recipe
    first_stage: TextEncoder | None = None  # a multi-vector recipe's pooled first stage (its search re-ranks it)
    export_dir: Path | None = None  # an ONNX export's directory when the vectors come from one (an index records it)

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

    def embed_chunks(self, texts: Sequence[str], progress: Progress = silent) -> ChunkEmbeddings:
        """A chunk recipe's documents: one row per chunk. Backends that run one pass per text refuse."""
        raise BertlensError(
            f"{type(self).__name__} embeds one vector per text; a recipe that keeps one vector per chunk "
            f"('{self.recipe.long_text}') runs on the PyTorch backend"
        )

    def for_queries(self) -> TextEncoder:
        """The encoder queries are embedded with: itself, except that a reading of documents (late or independent
        chunks, MaxP) reads a query whole up to the limit, as the retrieval sweep scored queries."""
        return self

    def embed_tokens(self, texts: Sequence[str], progress: Progress = silent):
        """A multi-vector recipe (pooler 'tokens'): every kept token's vector, packed (PackedTokens [T, D] with
        offsets [N+1]). Backends that pool refuse."""
        raise BertlensError(
            f"{type(self).__name__} pools each text into one vector; a multi-vector recipe (pooler 'tokens') runs "
            "on the PyTorch backend"
        )

    def token_vectors(self, texts: Sequence[str]) -> list[np.ndarray]:
        """With TOKEN_VECTORS in `capabilities`: each text's token vectors [T_i, D] (the recipe's layers, before
        pooling); a backend without it refuses in one line."""
        raise BertlensError(f"{type(self).__name__} has no token vectors; use the PyTorch backend")


def chunked_refusal(recipe: Recipe) -> BertlensError:
    """Why a chunk recipe's documents have no one vector each: what to call instead."""
    return BertlensError(
        f"the recipe reads documents as '{recipe.long_text}': one vector per chunk, a document scored by its best "
        "(MaxP); embed documents with embed_chunks (`bertlens embed` writes chunk rows, `bertlens index` stores "
        "them) and queries with the query role"
    )


def token_counter_of(tokenizer) -> TokenCounter:
    """A `TokenCounter` over a private copy of `tokenizer` (a fast tokenizer is not safe to share across threads)."""
    own = copy.deepcopy(tokenizer)

    def count(texts: Sequence[str]) -> list[int]:
        return [len(ids) for ids in own(list(texts), add_special_tokens=True)["input_ids"]]

    return count
