"""SmoothQuant before int8: each linear module's activation outliers moved into its weights, exactly.

Dynamic int8 gives a whole activation tensor one scale, so a few outlier channels (after GELU, after some
LayerNorms) leave the other channels a handful of levels. SmoothQuant (Xiao et al. 2023, eq. 4) divides input
channel j by s_j = max|X_j|^alpha / max|W_j|^(1 - alpha) and multiplies the weight's column j by it:
X W^T = (X diag(s)^-1)(W diag(s))^T, the same function in exact arithmetic, but the activation's range is
flattened and the weight (quantized per output channel) absorbs the outliers. Measured with the int8 emulation:
all-mpnet-base-v2 passes the gate with every module int8 at alpha 0.75, where without smoothing 12 of its 72
modules had to stay fp32 (docs/results-log.md). The division is one elementwise Mul before each product in the graph
(one per input tensor: q, k and v share theirs).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import torch
from torch import nn

ALPHAS = (0.0, 0.5, 0.75, 0.9)  # tried on the choosing texts; 0 is no smoothing
FLOOR = 1e-5  # a channel that never fires keeps scale ~1 instead of dividing by zero


class SmoothedLinear(nn.Module):
    """forward(x) = linear(x / s) with linear's weight columns multiplied by s: the original Linear's function."""

    def __init__(self, linear: nn.Linear, scale: torch.Tensor, inverse: torch.Tensor):
        super().__init__()
        self.register_buffer("inverse_scale", inverse)  # [in]: shared by the modules that read the same input
        self.linear = nn.Linear(linear.in_features, linear.out_features, bias=linear.bias is not None)
        with torch.no_grad():
            self.linear.weight.copy_(linear.weight * scale)  # [out, in] * [in]
            if linear.bias is not None:
                self.linear.bias.copy_(linear.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x * self.inverse_scale)  # [..., in] -> [..., out]


@dataclass(frozen=True)
class Calibration:
    """What smoothing needs from one fp32 pass: each module's input channel maxima, and which modules read the same
    input tensor (q, k and v): those share one scale, so the graph divides that tensor once (merge_shared_scalings)
    and ONNX Runtime quantizes it once."""

    maxima: dict[str, torch.Tensor]  # module -> max |x_j| over its input channels [in]
    groups: tuple[tuple[str, ...], ...]  # modules reading one tensor, in call order


def calibrate(model: nn.Module, names: Iterable[str], run: Callable[[], object]) -> Calibration:
    """Channel maxima and shared inputs of the named Linears over one `run()` of the model."""
    modules = dict(model.named_modules())
    found: dict[str, torch.Tensor] = {}
    follows: dict[str, str] = {}  # module -> the module called just before it on the very same tensor
    last: list = [None, None]  # (name, input) of the previous call; holding the tensor keeps its identity unique

    def recorder(name: str):
        def hook(module: nn.Module, args: tuple) -> None:
            x = args[0].detach()
            peak = x.abs().reshape(-1, x.shape[-1]).amax(dim=0)  # [in]
            found[name] = torch.maximum(found[name], peak) if name in found else peak
            if last[1] is args[0] and last[0] != name:
                follows.setdefault(name, last[0])
            last[:] = [name, args[0]]

        return hook

    hooks = [modules[name].register_forward_pre_hook(recorder(name)) for name in names]
    try:
        run()
    finally:
        for hook in hooks:
            hook.remove()
    return Calibration(found, _groups(list(found), follows))


def _groups(names: list[str], follows: dict[str, str]) -> tuple[tuple[str, ...], ...]:
    head = {}
    for name in names:
        head[name] = head.get(follows[name], follows[name]) if name in follows else name
    grouped: dict[str, list[str]] = {}
    for name in names:
        grouped.setdefault(head[name], []).append(name)
    return tuple(tuple(g) for g in grouped.values())


def smoothing_scales(model: nn.Module, calibration: Calibration, alpha: float) -> dict[str, torch.Tensor]:
    """s per input channel of each module (SmoothQuant's eq. 4; one s, the same tensor, for modules that read the
    same input, from the largest of their weights), each channel's activation maximum floored at the module's
    median channel maximum: a channel the calibration texts rarely saw active is treated as typical, not
    amplified (unfloored, all-mpnet-base-v2 had post-GELU channels at 1/20 of the median on the choosing texts that
    fired 70x higher on others and blew the int8 range up 12x: judged mean cosine 0.987 instead of 0.9965)."""
    modules = dict(model.named_modules())
    scales = {}
    for group in calibration.groups:
        peak = calibration.maxima[group[0]]
        peak = torch.maximum(peak, peak.median())
        weight_peak = torch.stack([modules[n].weight.detach().abs().amax(dim=0) for n in group]).amax(dim=0)  # [in]
        scale = (peak.clamp(min=FLOOR) ** alpha / weight_peak.clamp(min=FLOOR) ** (1.0 - alpha)).clamp(min=FLOOR)
        inverse = 1.0 / scale
        for name in group:
            scales[name] = (scale, inverse)  # one inverse tensor per group: one initializer in the graph
    return scales


def smoothed_name(name: str) -> str:
    """Where a smoothed module's product lives: the Linear inside SmoothedLinear."""
    return f"{name}.linear"


@contextlib.contextmanager
def smoothed(model: nn.Module, scales: dict[str, tuple[torch.Tensor, torch.Tensor]]) -> Iterator[None]:
    """Within the block, each named Linear of `model` is a SmoothedLinear (its product at `smoothed_name`); the
    original modules are put back on exit, whatever happens inside."""
    swapped = []
    try:
        for name, scale in scales.items():
            parent_name, _, child = name.rpartition(".")
            parent = model.get_submodule(parent_name) if parent_name else model
            original = getattr(parent, child)
            setattr(parent, child, SmoothedLinear(original, *scale))
            swapped.append((parent, child, original))
        yield
    finally:
        for parent, child, original in reversed(swapped):
            setattr(parent, child, original)
