"""A Recipe applied to LayerStates: mix the layers, pool the tokens, optionally L2-normalise -> [B, D].

`Representation` is an nn.Module so that the recipe's one learnable part, its ScalarMix, is a
real submodule: the training loop optimises it (and the encoder through it), and serving
builds it frozen from the recipe's fitted weights. Everything else in a recipe is a pure
function of the states.
"""

from __future__ import annotations

import torch
from torch import nn

from bertlens.encoding.encoder import LayerStates
from bertlens.errors import BertlensError
from bertlens.representation.mixers import ScalarMix, mix_layers, resolve_layers
from bertlens.representation.poolers import pool, token_mask
from bertlens.representation.recipe import Recipe


def check_recipe_fits(recipe: Recipe, num_layers: int) -> None:
    """Layer and attention-layer indices must exist in this model (errors list the valid range)."""
    resolve_layers(recipe.layers, num_layers)
    layer = recipe.attention_layer
    if recipe.pooler == "attention" and (layer == 0 or not -num_layers <= layer <= num_layers):
        raise BertlensError(
            f"attention_layer {recipe.attention_layer} is out of range: valid are 1..{num_layers} or -{num_layers}..-1"
        )


class Representation(nn.Module):
    """`Representation(recipe)(states)` -> [B, D]; `trainable=True` lets fine-tuning learn the ScalarMix."""

    def __init__(self, recipe: Recipe, trainable: bool = False):
        super().__init__()
        self.recipe = recipe
        self.scalar_mix = None
        if recipe.mixer == "scalar_mix":
            self.scalar_mix = ScalarMix(
                len(recipe.layers), recipe.mix_weights, recipe.mix_gamma, recipe.mix_layer_norm, trainable=trainable
            )

    def forward(self, states: LayerStates) -> torch.Tensor:
        recipe = self.recipe
        mixed = mix_layers(states.hidden, recipe.mixer, recipe.layers, self.scalar_mix)  # [B, T, D]
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

    def fitted_recipe(self) -> Recipe:
        """The recipe with the ScalarMix weights as they are now (after training)."""
        if self.scalar_mix is None:
            return self.recipe
        weights, gamma = self.scalar_mix.fitted()
        return self.recipe.replace(mix_weights=weights, mix_gamma=gamma)
