"""Embedder: a Recipe applied to texts -> one float32 vector per text, in input order."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence

import numpy as np
import torch

from bertlens.embedding.long_text import encode_long, encode_pieces
from bertlens.embedding.multi_vector import multi_vector_reader, multi_vector_refusal
from bertlens.embedding.protocol import (
    TOKEN_VECTORS,
    ChunkEmbeddings,
    Embeddings,
    TextEncoder,
    TokenCounter,
    chunked_refusal,
    token_counter_of,
)
from bertlens.encoding.encoder import Encoder
from bertlens.errors import BertlensError
from bertlens.progress import Progress, silent
from bertlens.representation.apply import Representation, check_recipe_fits
from bertlens.representation.late_interaction import PackedTokens
from bertlens.representation.mixers import mix_layers
from bertlens.representation.postprocess import PostProcessor
from bertlens.representation.recipe import Recipe


class Embedder(TextEncoder):
    """`Embedder(recipe).encode(texts)` -> np.ndarray [N, D] float32, rows in input order (PyTorch backend)."""

    capabilities = frozenset({TOKEN_VECTORS})

    def __init__(
        self,
        recipe: Recipe | None = None,
        *,
        encoder: Encoder | None = None,
        trust_remote_code: bool = False,
        device: str = "cpu",
        **changes,
    ):
        recipe = recipe or Recipe()
        self.recipe = recipe.replace(**changes) if changes else recipe
        self.encoder = encoder or Encoder(
            self.recipe.model,
            max_length=self.recipe.max_length,
            precision=self.recipe.precision,
            attentions="cls" if self.recipe.needs_attentions else "none",
            trust_remote_code=trust_remote_code,
            device=device,
        )
        self.recipe = self.recipe.replace(precision=self.encoder.precision)  # 'auto' resolved: what actually runs
        check_recipe_fits(self.recipe, self.encoder.num_layers)
        self.representation = Representation(self.recipe).eval()  # frozen: serving reproduces the fitted mix exactly
        self.postprocessor = PostProcessor.load(self.recipe.postprocess) if self.recipe.postprocess else None
        self.reading = self.recipe.long_text_strategy  # how a text is read (None: truncated); see for_queries
        self.tokens = multi_vector_reader(self.recipe, self.encoder) if self.recipe.multi_vector else None
        first = self.recipe.first_stage  # a multi-vector recipe's pooled first stage: the same encoder reads it
        self.first_stage = Embedder(first, encoder=self.encoder) if first is not None else None
        if self.postprocessor is not None and self.postprocessor.dim != self.pooled_dim:
            raise BertlensError(
                f"post-processor {self.recipe.postprocess} was fitted on {self.postprocessor.dim}-dimensional "
                f"vectors but this recipe makes {self.pooled_dim}; refit it for this recipe"
            )

    def for_thread(self) -> Embedder:
        """A copy for a concurrent worker thread: same weights, mix and post-processing; its own tokenizer."""
        twin = copy.copy(self)
        twin.encoder = self.encoder.for_thread()
        if self.tokens is not None:
            twin.tokens = dataclasses.replace(self.tokens, encoder=twin.encoder)
        if self.first_stage is not None:
            twin.first_stage = copy.copy(self.first_stage)
            twin.first_stage.encoder = twin.encoder
        return twin

    @property
    def chunked(self) -> bool:
        return self.reading is not None and self.reading.per_piece

    @property
    def multi_vector(self) -> bool:
        return self.tokens is not None

    @property
    def reads_queries(self) -> bool:
        """A multi-vector recipe's reader of queries (for_queries): augmented, punctuation kept."""
        return self.tokens is not None and self.tokens.query

    def for_queries(self) -> Embedder:
        """Same recipe and weights; a reading of documents only (late, chunks, maxp) reads a query whole, and a
        multi-vector recipe reads queries as queries (mask-token augmentation, no punctuation filter)."""
        if self.tokens is not None:
            twin = copy.copy(self)
            twin.tokens = self.tokens.for_queries()
            twin.first_stage = self.first_stage and self.first_stage.for_queries()
            return twin
        if self.reading is None or not self.reading.for_documents:
            return self
        twin = copy.copy(self)
        twin.reading = None
        return twin

    @property
    def fingerprint(self) -> str:
        return self.encoder.ref.fingerprint

    @property
    def max_length(self) -> int:
        return self.encoder.max_length

    @property
    def pooled_dim(self) -> int:
        """Width before post-processing."""
        return self.recipe.output_width(self.encoder.hidden_size)

    @property
    def dim(self) -> int:
        """Width of the output vectors (whitening may keep fewer components; a token projection its width)."""
        if self.tokens is not None:
            return self.tokens.dim
        return self.postprocessor.output_dim if self.postprocessor is not None else self.pooled_dim

    def token_counter(self) -> TokenCounter:
        return token_counter_of(self.encoder.tokenizer)

    def token_vectors(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Every token's vector [T_i, D] per text (special tokens included, padding not): the recipe's layers mixed
        as it mixes them, before pooling. Post-processing is fitted on pooled vectors, so it is not applied."""
        tokenized = self.encoder.tokenize(texts)
        out: list[np.ndarray | None] = [None] * len(texts)
        with torch.inference_mode():
            for states in self.encoder.stream(tokenized):
                recipe = self.recipe
                mixed = mix_layers(
                    states.hidden, recipe.mixer, recipe.layers, self.representation.scalar_mix
                )  # [B, T, D]
                for row, index in enumerate(states.doc_index.tolist()):
                    keep = states.attention_mask[row].bool()  # [T]
                    out[index] = mixed[row][keep].float().numpy()  # [T_i, D]
        return out

    def embed(self, texts: Sequence[str], progress: Progress = silent) -> Embeddings:
        """Embed texts; `progress("embedding", done, len(texts))` after each batch. A long-text strategy reads
        every text whole, so nothing counts as truncated then."""
        long_text = self.reading
        truncated = 0
        if self.chunked:
            raise chunked_refusal(self.recipe)
        if self.tokens is not None:
            raise multi_vector_refusal()
        if long_text is not None:
            out = encode_long(
                self.encoder,
                self.representation,
                texts,
                long_text,
                lambda stage, done, total: progress("embedding", done, total),
            )
        else:
            tokenized = self.encoder.tokenize(texts)
            truncated = tokenized.truncated
            out = np.empty((len(texts), self.pooled_dim), dtype=np.float32)  # [N, D]
            with torch.inference_mode():
                for states in self.encoder.stream(tokenized, progress, "embedding"):
                    out[states.doc_index.numpy()] = self.representation(states).float().numpy()
        vectors = self.postprocessor.transform(out) if self.postprocessor is not None else out
        return Embeddings(vectors, truncated)

    def embed_tokens(self, texts: Sequence[str], progress: Progress = silent) -> PackedTokens:
        """A multi-vector recipe's texts: every kept token's vector [T, D] float32, packed with offsets [N+1]."""
        if self.tokens is None:
            raise BertlensError(
                f"embed_tokens is for multi-vector recipes (pooler 'tokens'); this one pools with "
                f"'{self.recipe.pooler}': use embed"
            )
        return self.tokens.read(texts, progress)

    def embed_both(
        self, texts: Sequence[str], role: str, progress: Progress = silent
    ) -> tuple[PackedTokens, np.ndarray]:
        """A first-stage recipe's texts of `role` read both ways, each with its own prompt: the kept tokens (packed)
        and the first stage's vectors [N, D1]. One forward pass when both read the same tokens (the same prompt, no
        query augmentation, a first stage without a long-text reading), else one each."""
        if self.first_stage is None:
            raise BertlensError("embed_both is for a multi-vector recipe with a first_stage; this one has none")
        me = self.for_queries() if role == "query" else self
        first, prompt = me.first_stage, self.recipe.prompt(role)
        augments = me.tokens.query and me.tokens.augment
        if prompt != first.recipe.prompt(role) or first.reading is not None or augments:
            tokens = me.embed_tokens([prompt + text for text in texts], progress)
            return tokens, first.encode([first.recipe.prompt(role) + text for text in texts])
        tokens, pooled = me.tokens.read_pooled([prompt + text for text in texts], first.representation, progress)
        return tokens, first.postprocessor.transform(pooled) if first.postprocessor is not None else pooled

    def embed_chunks(self, texts: Sequence[str], progress: Progress = silent) -> ChunkEmbeddings:
        """A chunk recipe's documents: every chunk's vector (post-processed like any vector) with its text, number
        and characters; `progress("embedding", texts done, len(texts))`."""
        if not self.chunked:
            raise BertlensError(
                f"embed_chunks is for recipes that keep one vector per chunk (long_text ...:maxp); this one reads "
                f"'{self.recipe.long_text or 'truncate'}' into one vector per text: use embed"
            )
        pieces = encode_pieces(
            self.encoder,
            self.representation,
            texts,
            self.reading,
            progress=lambda stage, done, total: progress("embedding", done, total),
            characters=True,
        )
        vectors = self.postprocessor.transform(pieces.vectors) if self.postprocessor is not None else pieces.vectors
        return ChunkEmbeddings(vectors, pieces.doc_index, pieces.order, pieces.characters)
