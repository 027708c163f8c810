"""`export --format openvino`: the recipe's exported graph as OpenVINO IR, judged run by OpenVINO itself.

fp32: the ONNX graph converted as it is; in f32 it must compute the same function as bertlens. bf16: the same IR,
computed in bf16 by OpenVINO where the CPU has bf16 instructions, behind the fidelity gate. int8: NNCF's
post-training quantization of the IR (static: activation ranges from the calibration texts, weights symmetric per
channel; NNCF's `mixed` preset for transformers), with the linear modules whose int8 costs the most fidelity kept in
floating point until the choosing half of the calibration texts passes the gate with a margin
(embedding/openvino_int8.py); the gate is then judged on the other half, which chose nothing (as the ONNX path
splits them).
OpenVINO runs ONNX Runtime's own int8 graph too, but as fp32 with extra conversions: 1.1x its fp32 on 256-token
documents against NNCF's 2.6x (docs/results-log.md), so the OpenVINO export quantizes with NNCF instead.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from bertlens.embedding.export_record import (
    FP32_MIN_COSINE,
    Fidelity,
    measure,
    split_calibration,
    write_record,
)
from bertlens.embedding.gate import Gate, vouches_for
from bertlens.embedding.onnx_backend import MODEL_FILE
from bertlens.embedding.openvino_backend import IR_FILE, OpenVinoEmbedder
from bertlens.errors import BertlensError
from bertlens.progress import Progress


@dataclass(frozen=True)
class OpenVinoOptions:
    """The OpenVINO step of an export: the IR's inference precision (fp32, or bf16 behind `gate`)."""

    precision: str = "fp32"
    gate: Gate = Gate()
    force: bool = False


@dataclass(frozen=True)
class OpenVinoResult:
    parity: Fidelity  # the IR (as run: f32, bf16 or int8) against bertlens fp32 on the parity texts
    int8: Fidelity | None  # the int8 IR on the held-out calibration half
    passed: bool
    record: dict
    kept: tuple[str, ...] = ()  # int8: the linear modules kept in floating point
    quantized: int = 0  # int8: how many are int8


def nncf_int8(model, staging: Path, encoder, recipe, choose: list[str], gate: Gate, progress: Progress):
    """`model` (the recipe's IR) in int8 by NNCF, floating point kept where the choosing texts need it
    (embedding/openvino_int8.py): (the int8 model, its OvInt8Choice, the precision of the rest)."""
    from bertlens.extras import require

    require("openvino-int8", "export --format openvino --quantize int8")
    from bertlens.embedding.int8_choice import emulable_groups
    from bertlens.embedding.onnx_graph import recipe_graph
    from bertlens.embedding.openvino_int8 import choose_int8, rest_precision, restorable
    from bertlens.embedding.quantize import linear_modules

    graph = recipe_graph(encoder, recipe)
    groups = restorable(model, emulable_groups(graph, linear_modules(staging / MODEL_FILE)))
    precision = rest_precision()
    chosen = choose_int8(model, groups, graph, encoder.tokenizer, encoder.max_length, choose, gate, progress, precision)
    return (*chosen, precision)


def openvino_ir(staging: Path, encoder, reference_embedder, parity_texts, record: dict, int8, options, progress):
    """Convert the staged fp32 graph (int8 by NNCF with `int8`), write the IR beside it and judge it; raises (nothing
    published) when it fails its bar and `force` is not given. `parity_texts`: (texts, their bertlens fp32 vectors);
    `int8`: experiments/export.py:Int8Options."""
    import openvino as ov

    texts, reference = parity_texts

    started = time.perf_counter()
    progress("converting to OpenVINO IR", 0, 1)
    model = ov.convert_model(str(staging / MODEL_FILE))
    progress("converting to OpenVINO IR", 1, 1)
    judged, details = None, {}
    if int8 is not None:
        choose, judge = split_calibration(list(int8.calibration or texts))
        recipe = reference_embedder.recipe
        model, choice, precision = nncf_int8(model, staging, encoder, recipe, choose, int8.gate, progress)
        options = OpenVinoOptions(precision, options.gate, options.force)  # the backend runs what was judged
        details = _int8_details(choice, len(choose))
    ov.save_model(model, str(staging / IR_FILE), compress_to_fp16=False)
    record = {**record, "format": "openvino", "openvino": ov.__version__, "openvino_precision": options.precision}
    record = write_record(staging, record)
    embedder = OpenVinoEmbedder(staging)
    parity = measure(embedder.encode(texts), reference)
    record = {**record, "openvino_parity": asdict(parity)}
    gate, force = (int8.gate, int8.force) if int8 is not None else (options.gate, options.force)
    if int8 is not None:
        known = dict(zip(texts, reference, strict=True))  # the parity texts' vectors, computed once
        missing = [t for t in dict.fromkeys(judge) if t not in known]
        known |= dict(zip(missing, reference_embedder.encode(missing), strict=True)) if missing else {}
        judged = measure(embedder.encode(judge), np.stack([known[t] for t in judge]), gate.min_cosine)  # [n, D]
        passed = gate.passes(judged.mean_cosine, judged.min_cosine)
        details = {**details, **asdict(judged), "judged_on": f"{len(judge)} held-out calibration texts",
                   "vouches_for": vouches_for(gate, judged.texts, judged.below_floor),
                   "passed": passed, "forced": force and not passed,
                   "seconds": round(time.perf_counter() - started, 1)}  # fmt: skip
        record = {**record, "openvino_int8": details}
    else:
        passed = options.precision == "fp32" or gate.passes(parity.mean_cosine, parity.min_cosine)
    _check(parity, judged, passed, force, int8 is None and options.precision == "fp32", gate)
    if int8 is None:
        return OpenVinoResult(parity, judged, passed, record)
    return OpenVinoResult(parity, judged, passed, record, choice.kept_modules, choice.quantized)


def _int8_details(choice, choosing: int) -> dict:
    ranked = [s for s in choice.ranked if s.mean_cosine is not None]
    return {
        "method": "NNCF post-training int8 (transformer: SmoothQuant, mixed preset), modules kept in floating point "
        "chosen by bertlens (embedding/openvino_int8.py)",
        "choosing": choosing,
        "calibrated_on": f"the first {choice.calibration_texts} choosing texts",
        "modules_quantized": choice.quantized,
        "modules_kept_float": list(choice.kept_modules),
        "sensitivity_mean_cosine_alone": {s.module: round(s.mean_cosine, 6) for s in ranked},
        "sensitivity_texts": (
            f"{choice.ranking_texts} choosing texts, int8 emulated in PyTorch"
            if ranked
            else "not ranked: every module in int8 passed"
            if choice.trials[0].passed
            else "not ranked: no linear module can be kept in floating point"
        ),
        "search": [asdict(t) for t in choice.trials],
        "choice_seconds": choice.seconds,
        "choice_estimated_seconds": choice.estimated_seconds,
    }


def _check(parity, judged, passed: bool, force: bool, exact: bool, gate: Gate) -> None:
    if exact and parity.min_cosine < FP32_MIN_COSINE:
        raise BertlensError(
            f"the OpenVINO IR disagrees with bertlens (min cosine {parity.min_cosine:.6f} < {FP32_MIN_COSINE}); "
            "nothing was written. Please report this recipe"
        )
    if not passed and not force:
        shown, what = (judged, "int8") if judged is not None else (parity, "bf16")
        raise BertlensError(
            f"{what} run by OpenVINO fails the fidelity gate: mean cosine {shown.mean_cosine:.4f} (gate "
            f"{gate.mean_cosine}), min {shown.min_cosine:.4f} (gate {gate.min_cosine}); nothing was written (use "
            "--force to write it with these figures)"
        )
