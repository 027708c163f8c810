"""A multi-vector recipe applied to texts: every kept token's vector at the recipe's layer (issue #52).

The recipe (pooler 'tokens') says which layer, whether special tokens and the documents' punctuation are dropped,
whether queries are padded with mask tokens, and which projection reduces the vectors; the sweep's
late_interaction protocol scored exactly these tokens (encoding/token_states.py reads them for both), so MaxSim
over what this gives ranks as the sweep measured.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from bertlens.encoding.encoder import Encoder
from bertlens.encoding.token_states import augmented, punctuation_ids, token_batches
from bertlens.errors import BertlensError
from bertlens.progress import Progress, silent
from bertlens.representation.late_interaction import PackedTokens
from bertlens.representation.mixers import resolve_layers
from bertlens.representation.recipe import Recipe
from bertlens.representation.token_projection import TokenProjection


def multi_vector_refusal() -> BertlensError:
    return BertlensError(
        "the recipe keeps every token's vector (pooler 'tokens'): there is no one vector per text; embed with "
        "embed_tokens (`bertlens embed` writes a list column, `bertlens index` a multi-vector column)"
    )


@dataclass(frozen=True)
class MultiVectorReader:
    """How a multi-vector recipe reads a text of one role: documents (the default) or queries."""

    encoder: Encoder
    layer: int  # index into the stack [embeddings, layer 1, ..., layer L]
    drop_special: bool
    drop_punctuation: bool  # documents only (ColBERT's filter)
    augment: int  # queries only: padded with mask tokens to this length
    projection: TokenProjection | None
    punctuation: np.ndarray  # [V] bool
    query: bool = False

    @property
    def dim(self) -> int:
        return self.projection.dim if self.projection is not None else self.encoder.hidden_size

    def for_queries(self) -> MultiVectorReader:
        return dataclasses.replace(self, query=True)

    def read(self, texts: Sequence[str], progress: Progress = silent) -> PackedTokens:
        """Every kept token's vector [T, D] float32, packed in input order with offsets [N+1]."""
        return self._read(texts, None, progress)[0]

    def read_pooled(
        self, texts: Sequence[str], pool: torch.nn.Module, progress: Progress = silent
    ) -> tuple[PackedTokens, np.ndarray]:
        """`read`, and `pool` (a pooled recipe's Representation) applied to the same forward pass: [N, D1] float32."""
        return self._read(texts, pool, progress)

    def _read(self, texts, pool, progress) -> tuple[PackedTokens, np.ndarray | None]:
        tokenized = self.encoder.tokenize(list(texts))
        if self.query and self.augment:
            tokenized = augmented(self.encoder, tokenized, self.augment)
        kept: list[np.ndarray | None] = [None] * len(texts)
        batches = []  # (text rows, their pooled vectors [B, D1])
        lengths = tokenized.lengths
        with torch.inference_mode():
            for states, picked in token_batches(self.encoder, tokenized, (self.layer,), progress):  # [1, B, T, H]
                rows = states.doc_index.numpy()
                if pool is not None:
                    batches.append((rows, pool(states).float().cpu().numpy()))
                for b, row in enumerate(rows):
                    keep = np.ones(lengths[row], dtype=bool)
                    if self.drop_special:
                        keep &= ~np.asarray(tokenized.special_tokens_mask[row], dtype=bool)
                    if self.drop_punctuation and not self.query:
                        keep &= ~self.punctuation[np.asarray(tokenized.input_ids[row])]
                    kept[row] = picked[0, b, : lengths[row]][keep]  # [t_kept, H]
        tokens = PackedTokens.from_list(kept)
        if self.projection is not None:
            tokens = self.projection.packed(tokens)  # [T, d]
        if pool is None or not batches:
            return tokens, None
        pooled = np.empty((len(texts), batches[0][1].shape[1]), dtype=np.float32)  # [N, D1]
        for rows, vectors in batches:
            pooled[rows] = vectors
        return tokens, pooled


def multi_vector_reader(recipe: Recipe, encoder: Encoder) -> MultiVectorReader:
    """The documents' reader of a multi-vector recipe (`for_queries` gives the queries')."""
    (layer,) = resolve_layers(recipe.layers, encoder.num_layers)
    projection = TokenProjection.load(recipe.token_projection) if recipe.token_projection else None
    if projection is not None and projection.input_dim != encoder.hidden_size:
        raise BertlensError(
            f"token projection {recipe.token_projection} takes {projection.input_dim}-dimensional vectors; this model "
            f"gives {encoder.hidden_size}: refit it with the sweep for this model"
        )
    if recipe.query_augment and encoder.tokenizer.mask_token_id is None:
        raise BertlensError(f"query_augment pads with the mask token, and model '{encoder.ref.name}' has none")
    return MultiVectorReader(
        encoder,
        layer,
        drop_special=not recipe.include_special,
        drop_punctuation=recipe.drop_punctuation,
        augment=min(recipe.query_augment, encoder.max_length),
        projection=projection,
        punctuation=punctuation_ids(encoder),
    )
