"""Layer mixers over a stack of layers [L+1, ...] (embedding output first, then each layer).

They act on the first axis only, so the same mixer works on token states [L+1, B, T, H]
and on pooled vectors [L+1, B, H]. For the linear mixers and linear poolers,
mix(pool(x)) == pool(mix(x)); max pooling and layer-normed ScalarMix do not commute.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import torch
from torch import nn

from bertlens.errors import BertlensError, did_you_mean

MIXERS = ("single", "mean", "sum", "concat", "first_last", "scalar_mix")
LINEAR_MIXERS = frozenset({"single", "mean", "sum", "concat", "first_last"})


def resolve_layers(layers: Sequence[int], num_layers: int) -> tuple[int, ...]:
    """Map (possibly negative) layer indices onto 0..num_layers (0 = embedding output)."""
    count = num_layers + 1
    resolved = []
    for layer in layers:
        if not -count <= layer < count:
            raise BertlensError(
                f"layer {layer} is out of range for a {num_layers}-layer model: valid are 0..{num_layers} "
                f"(0 = embeddings) or -{count}..-1"
            )
        resolved.append(layer % count)
    return tuple(resolved)


def parse_layers(spec: str, num_layers: int) -> tuple[int, ...]:
    """Parse '-1', '-4,-3,-2,-1', '-4:' or '1:7' (Python slice, over 0..num_layers) or 'all'."""
    count = num_layers + 1
    indices: list[int] = []
    for part in spec.replace(" ", "").split(","):
        if part == "all":
            indices.extend(range(count))
        elif ":" in part:
            start, _, stop = part.partition(":")
            try:
                window = slice(int(start) if start else None, int(stop) if stop else None)
            except ValueError:
                raise BertlensError(f"layer spec '{spec}': '{part}' is not a slice like '-4:' or '1:7'") from None
            picked = list(range(count))[window]
            if not picked:
                raise BertlensError(f"layer spec '{spec}': slice '{part}' selects no layer of 0..{num_layers}")
            indices.extend(picked)
        else:
            try:
                indices.append(int(part))
            except ValueError:
                raise BertlensError(
                    f"layer spec '{spec}': '{part}' is not an integer; use e.g. -1 or -4: or 0,6"
                ) from None
    return resolve_layers(indices, num_layers)


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
        probs = torch.softmax(self.scalar_weights, dim=0).to(stack.dtype)  # [K]
        shape = (-1,) + (1,) * (stack.dim() - 1)
        return self.gamma.to(stack.dtype) * (probs.view(shape) * stack).sum(dim=0)  # [..., H]

    def fitted(self) -> tuple[tuple[float, ...], float]:
        """(pre-softmax weights, gamma) as plain floats: float32 -> float -> JSON -> float32 is exact."""
        return tuple(float(x) for x in self.scalar_weights.detach()), float(self.gamma.detach())


def softmax(weights: Sequence[float] | np.ndarray) -> np.ndarray:
    """Softmax of ScalarMix weights [K] as float32 (computed in float64)."""
    shifted = np.exp(np.asarray(weights, dtype=np.float64) - np.max(weights))
    return (shifted / shifted.sum()).astype(np.float32)


def mix_pooled(
    layers: Iterable[np.ndarray], weights: Sequence[float] | np.ndarray, out: np.ndarray | None = None
) -> np.ndarray:
    """sum_k softmax(w)_k * v_k over already-pooled layer vectors (exact for linear poolers) [n, H] float32.

    `out` receives the sum in place, so a caller holding a large array avoids a copy.
    """
    probs = softmax(weights)
    for k, (p, vectors) in enumerate(zip(probs, layers)):
        if out is None:
            out = p * vectors
        elif k == 0:
            np.multiply(p, vectors, out=out)
        else:
            out += p * vectors
    return out


def output_blocks(mixer: str, layers: Sequence[int]) -> int:
    """How many hidden-size blocks a mix produces: one per layer for concat, else one."""
    return len(layers) if mixer == "concat" else 1


def check_mixer(name: str) -> str:
    if name not in MIXERS:
        raise BertlensError(f"unknown mixer '{name}': {did_you_mean(name, MIXERS)}")
    return name


def mix_layers(
    stack: torch.Tensor, mixer: str, layers: Sequence[int], scalar_mix: ScalarMix | None = None
) -> torch.Tensor:
    """Combine the chosen layers of `stack` [L+1, ...] into one tensor [..., H or K*H].

    `layers` index `stack` directly (negative allowed); 'first_last' ignores them and
    averages layer 1 (the first transformer layer) with the last, as SimCSE's evaluation does.
    'scalar_mix' needs the ScalarMix module to apply (see representation/apply.py).
    """
    check_mixer(mixer)
    num_layers = stack.shape[0] - 1
    if mixer == "first_last":
        layers = (1, -1)
    picked = resolve_layers(layers, num_layers)
    if not picked:
        raise BertlensError(f"mixer '{mixer}' needs at least one layer")
    if mixer == "single":
        if len(picked) != 1:
            raise BertlensError(
                f"mixer 'single' takes exactly one layer, got {len(picked)}; use 'mean', 'sum' or 'concat'"
            )
        return stack[picked[0]]  # [..., H]
    chosen = stack[list(picked)]  # [K, ..., H]
    if mixer in {"mean", "first_last"}:
        return chosen.mean(dim=0)  # [..., H]
    if mixer == "sum":
        return chosen.sum(dim=0)  # [..., H]
    if mixer == "concat":
        return torch.cat(list(chosen), dim=-1)  # [..., K*H]
    if scalar_mix is None:
        raise ValueError("mixer 'scalar_mix' needs its ScalarMix module (build a Representation from the recipe)")
    return scalar_mix(chosen)  # [..., H]
