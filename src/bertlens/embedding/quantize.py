"""int8 quantization of an exported recipe graph, with the sensitive parts kept in fp32.

Dynamic int8 (ONNX Runtime: int8 weights, activations quantized per batch at run time) or static int8
(activation ranges calibrated once on given texts, QDQ format) speeds up the matrix products but is
not uniformly safe: a few linear layers carry activations with outliers whose
rounding moves the final vector far more than the rest. So each linear module of the encoder is
scored alone (quantize only it, measure the mean cosine to fp32 on calibration texts), and the
modules are then quantized from the least to the most damaging while the whole stays above the
fidelity gate. Which module is which comes from the exporter's name scopes (`model.encoder.layer.3
.output.dense`).
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic, quantize_static

from bertlens.metrics.geometry import row_cosine

QUANTIZED_OPS = ("MatMul", "Gemm")
NAME_SCOPES = "pkg.torch.onnx.name_scopes"


@dataclass(frozen=True)
class Sensitivity:
    module: str  # e.g. model.encoder.layer.3.output.dense
    nodes: tuple[str, ...]
    mean_cosine: float  # with only this module quantized


def linear_modules(model_path: Path) -> dict[str, tuple[str, ...]]:
    """Module path -> names of its weight-bearing MatMul/Gemm nodes (products of two activations are left out:
    dynamic quantization helps where one side is a constant weight)."""
    import onnx

    model = onnx.load(str(model_path), load_external_data=False)
    constants = {init.name for init in model.graph.initializer}
    groups: dict[str, list[str]] = {}
    for node in model.graph.node:
        if node.op_type not in QUANTIZED_OPS or not any(i in constants for i in node.input):
            continue
        scopes = next((p.value for p in node.metadata_props if p.key == NAME_SCOPES), "")
        module = _innermost(scopes) or node.name
        groups.setdefault(module, []).append(node.name)
    return {k: tuple(v) for k, v in groups.items()}


def _innermost(scopes: str) -> str:
    """The innermost module of a name-scope chain rendered as text:
    "['', 'model', 'model.encoder', 'model.encoder.layer.0', ..., 'model.encoder.layer.0.attention.self.query', 'linear']"
    -> 'model.encoder.layer.0.attention.self.query' (each module's path extends its parent's; the op name does not)."""
    parts = [p.strip().strip("'\"") for p in scopes.strip("[]").split(",")]
    module = ""
    for part in parts:
        if part and (not module or part.startswith(module + ".")):
            module = part
    return module


class _Feeds(CalibrationDataReader):
    """ONNX Runtime's calibration reader over prepared input batches."""

    def __init__(self, feeds: Sequence[dict[str, np.ndarray]]):
        self.feeds, self.position = list(feeds), 0

    def get_next(self) -> dict[str, np.ndarray] | None:
        if self.position >= len(self.feeds):
            return None
        self.position += 1
        return self.feeds[self.position - 1]


def quantize(
    source: Path,
    target: Path,
    exclude: tuple[str, ...] = (),
    calibration: Sequence[dict[str, np.ndarray]] | None = None,
    calibration_cache: Path | None = None,
) -> Path:
    """int8 of `source` into `target`, leaving the `exclude` nodes in fp32.

    Without `calibration`: dynamic (int8 weights per channel; activations scaled per batch at run time).
    With it: static QDQ (activation ranges measured once on the calibration batches by min/max and cached
    in `calibration_cache`, so choosing which modules stay fp32 calibrates only once).
    """

    with _quiet_root_logger():
        return _quantize(source, target, exclude, calibration, calibration_cache)


@contextlib.contextmanager
def _quiet_root_logger():
    """ONNX Runtime's quantizer logs a WARNING:root line per unsupported node (39 for the default model): noise."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


def _quantize(source, target, exclude, calibration, calibration_cache) -> Path:
    if calibration is None:
        quantize_dynamic(
            str(source),
            str(target),
            op_types_to_quantize=list(QUANTIZED_OPS),
            weight_type=QuantType.QInt8,
            per_channel=True,
            nodes_to_exclude=list(exclude),
        )
        return target
    reader = _Feeds(calibration)
    quantize_static(
        str(source),
        str(target),
        reader,
        quant_format=QuantFormat.QDQ,
        op_types_to_quantize=list(QUANTIZED_OPS),
        per_channel=True,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        nodes_to_exclude=list(exclude),
        calibration_cache_path=str(calibration_cache) if calibration_cache is not None else None,
    )
    return target


def sensitivities(
    source: Path,
    encode: Callable[[Path], np.ndarray],
    reference: np.ndarray,
    progress=None,
    calibration: Sequence[dict[str, np.ndarray]] | None = None,
    calibration_cache: Path | None = None,
) -> list[Sensitivity]:
    """Each linear module quantized alone: its mean cosine to fp32 (lowest = most sensitive first)."""
    groups = linear_modules(source)
    every = tuple(n for nodes in groups.values() for n in nodes)
    found = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (module, nodes) in enumerate(groups.items()):
            others = tuple(n for n in every if n not in nodes)
            path = quantize(source, Path(tmp) / "one.onnx", others, calibration, calibration_cache)
            found.append(Sensitivity(module, nodes, float(row_cosine(encode(path), reference).mean())))
            if progress is not None:
                progress("per-module sensitivity", i + 1, len(groups))
    return sorted(found, key=lambda s: s.mean_cosine)
