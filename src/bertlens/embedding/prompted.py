"""A role's prompt put before every text, over any backend: queries and documents embedded as the recipe says.

Asymmetric retrieval models are trained with a marker on each side (E5: "query: " / "passage: ";
Wang et al. 2022) and lose accuracy without it. The prompt is part of the text the model reads, so
it counts toward the token limit, as in sentence-transformers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bertlens.embedding.protocol import ChunkEmbeddings, Embeddings, TextEncoder, TokenCounter
from bertlens.progress import Progress, silent


class Prompted(TextEncoder):
    """`Prompted(encoder, role)`: `encoder` with its recipe's prompt for `role` before each text."""

    def __init__(self, inner: TextEncoder, role: str | None) -> None:
        self.inner, self.role = inner, role
        self.prompt = inner.recipe.prompt(role)
        self.recipe, self.dim = inner.recipe, inner.dim
        self.fingerprint, self.max_length = inner.fingerprint, inner.max_length
        self.chunked = getattr(inner, "chunked", False)
        self.multi_vector = getattr(inner, "multi_vector", False)
        self.reads_queries = getattr(inner, "reads_queries", False)
        self.first_stage = getattr(inner, "first_stage", None)  # a multi-vector recipe's pooled first stage

    def embed(self, texts: Sequence[str], progress: Progress = silent) -> Embeddings:
        return self.inner.embed([self.prompt + text for text in texts] if self.prompt else texts, progress)

    def embed_chunks(self, texts: Sequence[str], progress: Progress = silent) -> ChunkEmbeddings:
        """Chunks of the prompted texts; their characters count in the texts as given (the prompt is not theirs)."""
        out = self.inner.embed_chunks([self.prompt + text for text in texts], progress)
        shifted = np.maximum(out.characters - len(self.prompt), 0)  # [C, 2]
        return ChunkEmbeddings(out.vectors, out.owner, out.chunk, shifted)

    def embed_tokens(self, texts: Sequence[str], progress: Progress = silent):
        return self.inner.embed_tokens([self.prompt + text for text in texts] if self.prompt else texts, progress)

    def embed_both(self, texts: Sequence[str], role: str, progress: Progress = silent):
        """A first-stage recipe's two readings: the inner encoder puts each reading's own prompt before the texts."""
        return self.inner.embed_both(texts, role, progress)

    def for_queries(self) -> Prompted:
        return Prompted(self.inner.for_queries(), self.role)

    def for_thread(self) -> Prompted:
        return Prompted(self.inner.for_thread(), self.role)

    def token_counter(self) -> TokenCounter:
        count = self.inner.token_counter()
        return lambda texts: count([self.prompt + text for text in texts])


def with_role(encoder: TextEncoder, role: str | None) -> TextEncoder:
    """The encoder itself when the role has no prompt (nothing to wrap), else it `Prompted`; queries read as the
    recipe reads queries (`for_queries`: a reading of documents only reads a query whole)."""
    if role == "query":
        reader = getattr(encoder, "for_queries", None)  # a TextEncoder that does not subclass it reads as it is
        encoder = reader() if reader is not None else encoder
    return Prompted(encoder, role) if encoder.recipe.prompt(role) else encoder
