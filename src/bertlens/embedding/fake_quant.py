"""ONNX Runtime's dynamic int8 emulated in PyTorch, so the int8 gate can rank modules without re-quantizing.

`quantize_dynamic` (embedding/quantize.py) rewrites each weight-bearing MatMul as: activation -> uint8 with a
scale and zero point taken from that tensor's own min and max (DynamicQuantizeLinear, 0 always in range),
weight -> int8 per output channel, symmetric in [-127, 127]; the integer product is rescaled to float.
Rounding is round-half-to-even in both. Applying the same rounding to a PyTorch module's input and weight
("fake quantization", Jacob et al. 2018, sect. 3) gives the int8 graph's function up to the order of the
float sums, without writing, quantizing and loading a graph: a module's sensitivity costs one forward pass.
Where the emulation and ONNX Runtime differ (a CPU whose int8 kernels saturate, a fused kernel), the real
graph still decides: the gate is always scored on the quantized ONNX model.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

import torch
from torch import nn

UINT8_LEVELS = 255.0  # DynamicQuantizeLinear: uint8 [0, 255]
INT8_SYMMETRIC = 127.0  # weights: int8 in [-127, 127] (ONNX Runtime's symmetric int8 range)


def fake_quantize_activation(x: torch.Tensor, fixed: tuple[float, float] | None = None) -> torch.Tensor:
    """x rounded as DynamicQuantizeLinear rounds it: one uint8 scale and zero point for the whole tensor, from its
    own min and max, or (static int8) from a `fixed` (min, max) range calibrated beforehand."""
    low, high = (x.min(), x.max()) if fixed is None else (torch.tensor(fixed[0]), torch.tensor(fixed[1]))
    low = torch.clamp(low, max=0.0)
    high = torch.clamp(high, min=0.0)
    scale = (high - low) / UINT8_LEVELS
    if scale == 0:
        return x
    zero = torch.clamp(torch.round(-low / scale), 0, UINT8_LEVELS)
    q = torch.clamp(torch.round(x / scale) + zero, 0, UINT8_LEVELS)
    return (q - zero) * scale


def fake_quantize_weight(weight: torch.Tensor) -> torch.Tensor:
    """A Linear weight [out, in] rounded to int8 per output channel, symmetric (scale = max |w| / 127)."""
    scale = weight.abs().amax(dim=1, keepdim=True) / INT8_SYMMETRIC  # [out, 1]
    scale = torch.where(scale == 0, torch.ones_like(scale), scale)
    return torch.clamp(torch.round(weight / scale), -INT8_SYMMETRIC, INT8_SYMMETRIC) * scale


Ranges = dict[str, tuple[float, float]]  # module name -> (min, max) of its input over calibration texts


@contextlib.contextmanager
def fake_quantized(model: nn.Module, names: Iterable[str], ranges: Ranges | None = None) -> Iterator[None]:
    """Within the block, the named nn.Linear modules of `model` compute as their int8 ONNX nodes would: dynamic
    (each input scaled by its own range), or static with `ranges` (each module's calibrated input range); their
    weights and hooks are restored on exit, whatever happens inside."""
    modules = dict(model.named_modules())
    saved, hooks = [], []
    try:
        for name in names:
            module = modules[name]
            if not isinstance(module, nn.Linear):
                raise TypeError(f"{name} is a {type(module).__name__}, not an nn.Linear")
            saved.append((module, module.weight.data))
            module.weight.data = fake_quantize_weight(module.weight.data)
            fixed = None if ranges is None else ranges[name]
            hooks.append(module.register_forward_pre_hook(_input_quantizer(fixed)))
        yield
    finally:
        for hook in hooks:
            hook.remove()
        for module, weight in saved:
            module.weight.data = weight


def _input_quantizer(fixed: tuple[float, float] | None):
    def hook(module: nn.Module, args: tuple) -> tuple:
        return (fake_quantize_activation(args[0], fixed), *args[1:])

    return hook


@contextlib.contextmanager
def input_ranges(model: nn.Module, names: Iterable[str]) -> Iterator[Ranges]:
    """Within the block, every forward pass widens each named module's recorded input (min, max): the ranges a
    MinMax calibration (static int8) measures over the same inputs."""
    modules = dict(model.named_modules())
    found: Ranges = {}

    def recorder(name: str):
        def hook(module: nn.Module, args: tuple) -> None:
            low, high = float(args[0].min()), float(args[0].max())
            old = found.get(name, (low, high))
            found[name] = (min(old[0], low), max(old[1], high))

        return hook

    hooks = [modules[name].register_forward_pre_hook(recorder(name)) for name in names]
    try:
        yield found
    finally:
        for hook in hooks:
            hook.remove()
