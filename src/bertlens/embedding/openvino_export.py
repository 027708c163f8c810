"""`export --format openvino`: the recipe's exported graph as OpenVINO IR, judged run by OpenVINO itself.

fp32: the ONNX graph converted as it is; in f32 it must compute the same function as bertlens. bf16: the same IR,
computed in bf16 by OpenVINO where the CPU has bf16 instructions, behind the fidelity gate. int8: NNCF's
post-training quantization of the IR (static: activation ranges from the calibration texts, weights symmetric per
channel; NNCF's `mixed` preset for transformers), with accuracy control: the operations whose int8 costs the most
fidelity are returned to floating point until the choosing half of the calibration texts passes the gate with a
margin, and the gate is then judged on the other half, which chose nothing (as the ONNX path splits them).
OpenVINO runs ONNX Runtime's own int8 graph too, but as fp32 with extra conversions: 1.1x its fp32 on 256-token
documents against NNCF's 2.6x (docs/results.md), so the OpenVINO export quantizes with NNCF instead.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from bertlens.embedding.export_record import (
    FP32_MIN_COSINE,
    Fidelity,
    calibration_feeds,
    measure,
    split_calibration,
    write_record,
)
from bertlens.embedding.gate import Gate
from bertlens.embedding.onnx_backend import MODEL_FILE
from bertlens.embedding.openvino_backend import IR_FILE, OpenVinoEmbedder
from bertlens.errors import BertlensError
from bertlens.metrics.geometry import row_cosine
from bertlens.progress import Progress

CHOICE_MARGIN = 0.8  # the choosing half must pass with 80% of the gate's allowed loss: the judging half has the rest
CALIBRATION_BATCH = 8  # texts a calibration batch: NNCF collects ranges per batch
# NNCF ranks each group of int8 operations by the score with that group back in floating point, on this many batches
# (items): on all of them, ranking all-mpnet-base-v2's groups on 150 reviews did not end within 14 minutes here.
RANKING_ITEMS = 3


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


def gate_score(vectors: np.ndarray, reference: np.ndarray, gate: Gate) -> float:
    """One number for the gate's two bounds (higher is better; 1 is exact): 1 less the larger of the mean cosine's
    loss and the minimum's loss scaled to the mean's allowance, so that the gate passes when the score is at least
    gate.mean_cosine."""
    cosines = row_cosine(vectors.astype(np.float64), reference.astype(np.float64))
    scale = (1 - gate.mean_cosine) / (1 - gate.min_cosine)
    return 1 - max(1 - float(cosines.mean()), (1 - float(cosines.min())) * scale)


def nncf_int8(model, encoder, reference_embedder, choose: list[str], gate: Gate, progress: Progress):
    """`model` (an OpenVINO model) in int8 by NNCF, floating point kept where the choosing texts need it."""
    from bertlens.extras import require

    require("openvino-int8", "export --format openvino --quantize int8")
    import logging

    import nncf
    from nncf.quantization.advanced_parameters import AdvancedAccuracyRestorerParameters

    nncf.set_log_level(logging.ERROR)  # its INFO lines and bars are not the user's; bertlens reports its own progress
    feeds = calibration_feeds(encoder.tokenizer, choose, encoder.max_length, CALIBRATION_BATCH)
    reference = reference_embedder.encode(choose)  # [n, D], in feed order
    offsets = np.cumsum([0] + [len(f["input_ids"]) for f in feeds])
    items = [(feed, reference[offsets[i] : offsets[i + 1]]) for i, feed in enumerate(feeds)]

    def validate(compiled, data) -> tuple[float, list[float]]:
        """The gate's score over the items, and each item's (a batch's) own: NNCF ranks by item."""
        request = compiled.create_infer_request()
        got, want = [], []
        for feed, expected in data:
            got.append(np.array(request.infer(feed)[0], copy=True))  # [B, D]
            want.append(expected)
        per_item = [gate_score(g, w, gate) for g, w in zip(got, want, strict=True)]
        return gate_score(np.concatenate(got), np.concatenate(want), gate), per_item

    progress("int8 by NNCF (calibrating, then keeping what the gate needs)", 0, 1)
    quantized = nncf.quantize_with_accuracy_control(
        model,
        nncf.Dataset(items, lambda item: item[0]),
        nncf.Dataset(items),
        validate,
        max_drop=(1 - gate.mean_cosine) * CHOICE_MARGIN,
        drop_type=nncf.DropType.ABSOLUTE,
        model_type=nncf.ModelType.TRANSFORMER,
        subset_size=len(choose),
        advanced_accuracy_restorer_parameters=AdvancedAccuracyRestorerParameters(
            ranking_subset_size=RANKING_ITEMS, num_ranking_workers=1
        ),
    )
    progress("int8 by NNCF (calibrating, then keeping what the gate needs)", 1, 1)
    return quantized


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
        model = nncf_int8(model, encoder, reference_embedder, choose, int8.gate, progress)
        details = {"method": "NNCF post-training int8 with accuracy control (mixed preset)", "choosing": len(choose)}
    ov.save_model(model, str(staging / IR_FILE), compress_to_fp16=False)
    record = {**record, "format": "openvino", "openvino": ov.__version__, "openvino_precision": options.precision}
    record = write_record(staging, record)
    embedder = OpenVinoEmbedder(staging)
    parity = measure(embedder.encode(texts), reference)
    record = {**record, "openvino_parity": asdict(parity)}
    gate, force = (int8.gate, int8.force) if int8 is not None else (options.gate, options.force)
    if int8 is not None:
        judged = measure(embedder.encode(judge), reference_embedder.encode(judge))
        passed = gate.passes(judged.mean_cosine, judged.min_cosine)
        details = {**details, **asdict(judged), "judged_on": f"{len(judge)} held-out calibration texts",
                   "passed": passed, "forced": force and not passed,
                   "seconds": round(time.perf_counter() - started, 1)}  # fmt: skip
        record = {**record, "openvino_int8": details}
    else:
        passed = options.precision == "fp32" or gate.passes(parity.mean_cosine, parity.min_cosine)
    _check(parity, judged, passed, force, int8 is None and options.precision == "fp32", gate)
    return OpenVinoResult(parity, judged, passed, record)


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
