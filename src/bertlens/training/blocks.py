"""The encoder as blocks: 0 = embeddings, 1..L = transformer layers (what strategies freeze or re-rate)."""

from __future__ import annotations

import torch
from torch import nn

from bertlens.errors import BertlensError


def encoder_blocks(model: nn.Module) -> list[nn.Module]:
    """[embeddings, layer 1, ..., layer L] for BERT-family models (BERT, RoBERTa, ELECTRA, MPNet, DistilBERT)."""
    embeddings = getattr(model, "embeddings", None)
    for path in (("encoder", "layer"), ("transformer", "layer")):
        layers = model
        for name in path:
            layers = getattr(layers, name, None)
        if embeddings is not None and isinstance(layers, nn.ModuleList):
            return [embeddings, *layers]
    raise BertlensError(
        f"cannot find the embedding and layer blocks of a {type(model).__name__}; fine-tuning "
        "strategies support BERT-style encoders (model.embeddings + model.encoder.layer)"
    )


def block_of_parameters(model: nn.Module) -> dict[str, int]:
    """Parameter name -> block index; parameters outside the blocks (e.g. the unused pooler) are left out."""
    owner = {}
    for index, block in enumerate(encoder_blocks(model)):
        for param in block.parameters():
            owner[id(param)] = index
    return {name: owner[id(p)] for name, p in model.named_parameters() if id(p) in owner}


def reinitialise_top(model: nn.Module, count: int, seed: int) -> None:
    """Re-initialise the top `count` layers with the model's own initialiser (Zhang et al. 2021, "Revisiting
    few-sample BERT fine-tuning"): the top layers are the most pre-training-specific."""
    if count == 0:
        return
    init = getattr(model, "_init_weights", None)
    if init is None:
        raise BertlensError(f"{type(model).__name__} has no _init_weights; cannot re-initialise layers")
    generator_state = torch.get_rng_state()
    torch.manual_seed(seed)
    for block in encoder_blocks(model)[-count:]:
        block.apply(init)
    torch.set_rng_state(generator_state)
