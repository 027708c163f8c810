"""Layer mixers over a stack of layers [L+1, ...] (embedding output first, then each layer).

They act on the first axis only, so the same mixer works on token states [L+1, B, T, H]
and on pooled vectors [L+1, B, H]. For the linear mixers and linear poolers,
mix(pool(x)) == pool(mix(x)); max pooling and layer-normed ScalarMix do not commute.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import torch
from torch import nn

from bertlens.errors import BertlensError
from bertlens.representation.choices import (  # noqa: F401 - re-exported: the mixers' names and layer specs
    LINEAR_MIXERS,
    MIXERS,
    check_mixer,
    mixed_layers,
    output_blocks,
    parse_layers,
    resolve_layers,
)


def mix_probabilities(weights: torch.Tensor) -> torch.Tensor:
    """softmax(w) over layers [K]: the one place ScalarMix weights become layer probabilities (differentiable).
    ScalarMix, the sweep's mix fits, the layer-wise probe and the sentence-transformers export all use it."""
    return torch.softmax(weights, dim=0)


class ScalarMix(nn.Module):
    """gamma * sum_k softmax(w)_k * h_k  (Peters et al. 2018, ELMo; Tenney et al. 2019).

    The one ScalarMix of the package: fine-tuning trains it (its weights get gradients, and so
    does the encoder through it); serving builds it frozen from a recipe's fitted weights.
    With `layer_norm`, each layer is normalised per token over its hidden size (no affine)
    before mixing. This differs from AllenNLP, which normalises over the whole masked batch:
    per-token normalisation keeps results independent of how texts are batched.
    """

    def __init__(
        self,
        num_mixed: int,
        weights: Sequence[float] | None = None,
        gamma: float = 1.0,
        layer_norm: bool = False,
        trainable: bool = True,
    ):
        super().__init__()
        if weights is not None and len(weights) != num_mixed:
            raise BertlensError(
                f"ScalarMix got {len(weights)} weights for {num_mixed} layers; give one weight per layer"
            )
        init = torch.tensor(list(weights), dtype=torch.float32) if weights is not None else torch.zeros(num_mixed)
        self.scalar_weights = nn.Parameter(init, requires_grad=trainable)  # [K]
        self.gamma = nn.Parameter(torch.tensor(float(gamma)), requires_grad=trainable)  # []
        self.layer_norm = layer_norm

    def forward(self, stack: torch.Tensor) -> torch.Tensor:
        """stack [K, ..., H] -> [..., H]."""
        if stack.shape[0] != self.scalar_weights.shape[0]:
            raise BertlensError(f"ScalarMix expects {self.scalar_weights.shape[0]} layers, got {stack.shape[0]}")
        if self.layer_norm:
            stack = nn.functional.layer_norm(stack, stack.shape[-1:])  # [K, ..., H]
        probs = mix_probabilities(self.scalar_weights).to(stack.dtype)  # [K]
        shape = (-1,) + (1,) * (stack.dim() - 1)
        return self.gamma.to(stack.dtype) * (probs.view(shape) * stack).sum(dim=0)  # [..., H]

    def fitted(self) -> tuple[tuple[float, ...], float]:
        """(pre-softmax weights, gamma) as plain floats: float32 -> float -> JSON -> float32 is exact."""
        return tuple(float(x) for x in self.scalar_weights.detach()), float(self.gamma.detach())


def softmax(weights: Sequence[float] | np.ndarray) -> np.ndarray:
    """`mix_probabilities` of ScalarMix weights [K] as a float32 array (computed in float64)."""
    return mix_probabilities(torch.as_tensor(np.asarray(weights, dtype=np.float64))).float().numpy()


MIX_BLOCK = 1 << 20  # values of each layer mixed at a time (4 MB in float32): converted, scaled and added in cache


def mix_pooled(
    layers: Iterable[np.ndarray], weights: Sequence[float] | np.ndarray, out: np.ndarray | None = None
) -> np.ndarray:
    """sum_k softmax(w)_k * v_k over already-pooled layer vectors (exact for linear poolers) [n, H] float32.

    Layers [n, H] in float32 or float16 (a bank's stored vectors, read-only views of its file are fine: they are
    only read). Each term is p_k * float32(v_k) rounded to float32, then added in layer order, as numpy's
    `p * v` then `+=`; a block of rows at a time through every layer, so nothing the size of a layer is written
    but the sum: equal to the bit, 5x faster on a ScalarMix of 7 x 100k x 384 float16 layers read from a bank
    (0.21 against 1.03 s, Intel Xeon, #75). `out` receives the sum in place (a caller holding a large array avoids
    a copy).
    """
    probs = torch.from_numpy(softmax(weights))  # [K] float32
    arrays = [np.asarray(v) for v in layers]
    n, width = arrays[0].shape
    total = torch.from_numpy(out) if out is not None else torch.empty(n, width)  # [n, H]
    step = max(1, MIX_BLOCK // max(width, 1))
    converted, term = torch.empty(min(step, n), width), torch.empty(min(step, n), width)  # [b, H] scratch
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")  # read, never written
        for start in range(0, n, step):
            part = total[start : start + step]  # [b, H]
            rows = part.shape[0]
            for k, array in enumerate(arrays):
                v = converted[:rows].copy_(torch.from_numpy(array[start : start + step]))  # float16 -> 32: exact
                if k == 0:
                    torch.mul(v, probs[k], out=part)
                else:
                    part.add_(torch.mul(v, probs[k], out=term[:rows]))
    return total.numpy()


def _single(chosen: torch.Tensor, scalar_mix: ScalarMix | None) -> torch.Tensor:
    if len(chosen) != 1:
        raise BertlensError(f"mixer 'single' takes exactly one layer, got {len(chosen)}; use 'mean', 'sum' or 'concat'")
    return chosen[0]  # [..., H]


def _scalar_mix(chosen: torch.Tensor, scalar_mix: ScalarMix | None) -> torch.Tensor:
    if scalar_mix is None:
        raise ValueError("mixer 'scalar_mix' needs its ScalarMix module (build a Representation from the recipe)")
    return scalar_mix(chosen)  # [..., H]


# How each mixer combines its chosen layers [K, ..., H]; adding a mixer is one entry here and its name in
# choices.MIXERS (LINEAR_MIXERS when it is linear in the layers, so the bank scores it without a second pass).
MIXER_FUNCTIONS: dict[str, Callable[[torch.Tensor, ScalarMix | None], torch.Tensor]] = {
    "single": _single,
    "mean": lambda chosen, _: chosen.mean(dim=0),  # [..., H]
    "first_last": lambda chosen, _: chosen.mean(dim=0),  # [..., H]: layers 1 and L (mixed_layers picks them)
    "sum": lambda chosen, _: chosen.sum(dim=0),  # [..., H]
    "concat": lambda chosen, _: torch.cat(list(chosen), dim=-1),  # [..., K*H]
    "scalar_mix": _scalar_mix,
}


def mix_layers(
    stack: torch.Tensor, mixer: str, layers: Sequence[int], scalar_mix: ScalarMix | None = None
) -> torch.Tensor:
    """Combine the chosen layers of `stack` [L+1, ...] into one tensor [..., H or K*H].

    `layers` index `stack` directly (negative allowed); 'first_last' ignores them and
    averages layer 1 (the first transformer layer) with the last, as SimCSE's evaluation does.
    'scalar_mix' needs the ScalarMix module to apply (see representation/apply.py).
    """
    picked = mixed_layers(mixer, layers, stack.shape[0] - 1)
    if not picked:
        raise BertlensError(f"mixer '{mixer}' needs at least one layer")
    if mixer == "single" and len(picked) == 1:
        return stack[picked[0]]  # [..., H]: a view, no copy of the layer
    return MIXER_FUNCTIONS[mixer](stack[list(picked)], scalar_mix)  # [K, ..., H] -> [..., H or K*H]
