"""Embedder: a Recipe applied to texts -> one float32 vector per text, in input order."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from bertlens.encoding.chunking import parse_long_text
from bertlens.encoding.encoder import Encoder, LayerStates
from bertlens.errors import BertlensError
from bertlens.representation.mixers import mix_layers, resolve_layers
from bertlens.representation.poolers import pool, token_mask
from bertlens.representation.postprocess import PostProcessor
from bertlens.representation.recipe import Recipe


def represent(recipe: Recipe, states: LayerStates) -> torch.Tensor:
    """Mix the recipe's layers, pool the tokens, optionally L2-normalise: [B, D]."""
    mixed = mix_layers(
        states.hidden,
        recipe.mixer,
        recipe.layers,
        weights=recipe.mix_weights,
        gamma=recipe.mix_gamma,
        layer_norm=recipe.mix_layer_norm,
    )  # [B, T, D]
    mask = token_mask(states.attention_mask, states.special_tokens_mask, recipe.include_special)  # [B, T]
    weights = None
    if recipe.pooler == "attention":
        if states.cls_attention is None:
            raise BertlensError("the 'attention' pooler needs attention weights; encode with attentions='cls'")
        layer = recipe.attention_layer
        weights = states.cls_attention[layer - 1 if layer > 0 else layer]  # [B, T] (attentions are 1-based layers)
    vectors = pool(recipe.pooler, mixed, mask, weights)  # [B, D]
    if recipe.normalize:
        vectors = torch.nn.functional.normalize(vectors, dim=-1)  # [B, D]
    return vectors


def check_recipe_fits(recipe: Recipe, num_layers: int) -> None:
    """Layer and attention-layer indices must exist in this model (errors list the valid range)."""
    resolve_layers(recipe.layers, num_layers)
    layer = recipe.attention_layer
    if recipe.pooler == "attention" and (layer == 0 or not -num_layers <= layer <= num_layers):
        raise BertlensError(
            f"attention_layer {recipe.attention_layer} is out of range: valid are 1..{num_layers} or -{num_layers}..-1"
        )


class Embedder:
    """`Embedder(recipe).encode(texts)` -> np.ndarray [N, D] float32, rows in input order."""

    def __init__(self, recipe: Recipe | None = None, *, encoder: Encoder | None = None, trust_remote_code: bool = False, **changes):
        recipe = recipe or Recipe()
        self.recipe = recipe.replace(**changes) if changes else recipe
        self.encoder = encoder or Encoder(
            self.recipe.model,
            max_length=self.recipe.max_length,
            precision=self.recipe.precision,
            attentions="cls" if self.recipe.needs_attentions else "none",
            trust_remote_code=trust_remote_code,
        )
        check_recipe_fits(self.recipe, self.encoder.num_layers)
        self.postprocessor = PostProcessor.load(self.recipe.postprocess) if self.recipe.postprocess else None
        if self.postprocessor is not None and self.postprocessor.dim != self.pooled_dim:
            raise BertlensError(f"post-processor {self.recipe.postprocess} was fitted on {self.postprocessor.dim}-dimensional "
                                f"vectors but this recipe makes {self.pooled_dim}; refit it for this recipe")
        self.truncated = 0

    @property
    def pooled_dim(self) -> int:
        """Width before post-processing."""
        width = self.encoder.hidden_size
        count = len(self.recipe.layers) if self.recipe.mixer == "concat" else 1
        return width * count

    @property
    def dim(self) -> int:
        """Width of the output vectors (whitening may keep fewer components)."""
        return self.postprocessor.output_dim if self.postprocessor is not None else self.pooled_dim

    def encode(self, texts: Sequence[str], on_batch: Callable[[int], None] | None = None) -> np.ndarray:
        """Embed texts; `on_batch(n)` is called after each batch (for progress bars)."""
        if self.recipe.long_text is not None:
            from bertlens.long_documents import encode_long  # long texts: pieces per strategy, aggregated

            seen = [0]

            def progress(done: int, total: int) -> None:
                if on_batch is not None:
                    on_batch(done - seen[0])
                seen[0] = done

            out = encode_long(self.encoder, self.recipe, texts, parse_long_text(self.recipe.long_text), progress)
            self.truncated = 0
            return self.postprocessor.transform(out) if self.postprocessor is not None else out
        tokenized = self.encoder.tokenize(texts)
        self.truncated = tokenized.truncated
        out = np.empty((len(texts), self.pooled_dim), dtype=np.float32)  # [N, D]
        with self.encoder.running():  # mixing and pooling are element-wise: safe under autocast
            for states in self.encoder.iter_states(tokenized):
                out[states.doc_index.numpy()] = represent(self.recipe, states).float().numpy()
                if on_batch is not None:
                    on_batch(len(states.doc_index))
        return self.postprocessor.transform(out) if self.postprocessor is not None else out
