"""int8 quantization of an exported recipe graph, with the sensitive parts kept in fp32.

Dynamic int8 (ONNX Runtime: int8 weights, activations quantized per batch at run time) or static int8
(activation ranges calibrated once on given texts, QDQ format) speeds up the matrix products but is
not uniformly safe: a few linear layers carry activations with outliers whose
rounding moves the final vector far more than the rest. Which modules stay fp32 is chosen in
embedding/int8_choice.py (ranked and searched under a PyTorch emulation of this rounding, confirmed
on the graph quantized here). Which node belongs to which module comes from the exporter's name
scopes (`model.encoder.layer.3.output.dense`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic, quantize_static

QUANTIZED_OPS = ("MatMul", "Gemm")
NAME_SCOPES = "pkg.torch.onnx.name_scopes"


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


def merge_shared_scalings(path: Path) -> int:
    """Merge Mul nodes that scale the same tensor by equal constants (smoothing's one scale for q, k and v, written
    once per module by the exporter) into one, in place; so the quantizer also quantizes that tensor once. Returns
    how many nodes were removed."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    constants = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    first: dict[tuple, str] = {}  # (input, constant's dtype, shape and bytes) -> the output that stays
    renamed: dict[str, str] = {}
    kept = []
    for node in model.graph.node:
        key = None
        if node.op_type == "Mul" and len(node.input) == 2 and node.input[1] in constants:
            value = constants[node.input[1]]
            key = (node.input[0], value.dtype.str, value.shape, value.tobytes())
        if key is not None and key in first:
            renamed[node.output[0]] = first[key]
            continue
        if key is not None:
            first[key] = node.output[0]
        kept.append(node)
    if not renamed:
        return 0
    for node in kept:
        for i, name in enumerate(node.input):
            if name in renamed:
                node.input[i] = renamed[name]
    del model.graph.node[:]
    model.graph.node.extend(kept)
    used = {name for node in kept for name in node.input}
    unused = [init for init in model.graph.initializer if init.name not in used]
    for init in unused:
        model.graph.initializer.remove(init)
    onnx.save(model, str(path))
    return len(renamed)


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
