"""The encoder as blocks: 0 = embeddings, 1..L = transformer layers (what strategies freeze or re-rate).

Where the layers are comes from the family table (families.py). Every parameter of the encoder belongs
to a block: the embedding block holds everything before the layers that is not a layer (ELECTRA's
embedding projection, DeBERTa's relative-position embeddings, MPNet's relative attention bias, ALBERT's
embedding-to-hidden mapping), the last layer's block holds what runs after the layers (ModernBERT's
final norm), and only modules no recipe reads (a pooler) are left out and never trained.

ALBERT shares one group of layer weights across all L layers. Its layers are still blocks 1..L (as the
representations are), and the shared group belongs to the top layer it serves: it trains whenever the
top layer does (partial:K with K >= 1, gradual once the top is unfrozen) at the top layer's learning
rate under llrd; the embedding block is separate, as in BERT.
"""

from __future__ import annotations

import torch
from torch import nn

from bertlens.errors import BertlensError
from bertlens.families import Family, require_family, submodule


def _family(model: nn.Module) -> Family:
    return require_family(getattr(model.config, "model_type", None), type(model).__name__, "where its layers are")


def encoder_layers(model: nn.Module) -> list[nn.Module]:
    """The transformer layer modules, one per layer 1..L (ALBERT: its shared group, repeated for each layer)."""
    family = _family(model)
    layers = submodule(model, family.layers)
    if not isinstance(layers, nn.ModuleList):
        raise BertlensError(
            f"cannot find the transformer layers of a {type(model).__name__} at model.{family.layers}; the "
            f"{family.name} entry of the family table does not fit this model"
        )
    if family.shared_layers:
        count = model.config.num_hidden_layers
        return [layers[min(i * len(layers) // count, len(layers) - 1)] for i in range(count)]
    return list(layers)


def block_of_parameters(model: nn.Module) -> dict[str, int]:
    """Parameter name -> block index (0 = embeddings, l = layer l); parameters of unused modules are left out."""
    family = _family(model)
    layers = encoder_layers(model)
    owner: dict[int, int] = {}
    for index, layer in enumerate(layers, start=1):  # a shared group ends up with the top layer it serves
        for param in layer.parameters():
            owner[id(param)] = index
    for path in family.after_layers:
        module = submodule(model, path)
        for param in module.parameters() if module is not None else ():
            owner[id(param)] = len(layers)
    unused = {id(p) for path in family.unused if (m := submodule(model, path)) is not None for p in m.parameters()}
    return {name: owner.get(id(p), 0) for name, p in model.named_parameters() if id(p) not in unused}


def parameters_by_block(model: nn.Module) -> list[dict[str, nn.Parameter]]:
    """[block 0's parameters by name, block 1's, ..., block L's]."""
    blocks = block_of_parameters(model)
    out: list[dict[str, nn.Parameter]] = [{} for _ in range(len(encoder_layers(model)) + 1)]
    for name, param in model.named_parameters():
        if name in blocks:
            out[blocks[name]][name] = param
    return out


def apply_strategy_blocks(model: nn.Module, trainable: tuple[int, ...] | set[int]) -> None:
    """requires_grad on the parameters of the `trainable` blocks only (unused modules stay frozen)."""
    blocks = block_of_parameters(model)
    for name, param in model.named_parameters():
        param.requires_grad_(name in blocks and blocks[name] in trainable)


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
    for layer in encoder_layers(model)[-count:]:
        layer.apply(init)
    torch.set_rng_state(generator_state)
