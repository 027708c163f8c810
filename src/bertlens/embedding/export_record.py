"""What an export's checks share: the fidelity of a graph's vectors to bertlens fp32, the record with each graph
file's sha256, the calibration feeds and the seeded split of calibration texts into choosing and judging halves
(experiments/export.py for ONNX, embedding/openvino_export.py for OpenVINO)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bertlens.embedding.onnx_backend import MODEL_FILE, RECORD_FILE
from bertlens.embedding.openvino_backend import IR_FILE, IR_WEIGHTS
from bertlens.io.atomic import write_json
from bertlens.io.cache import file_sha256
from bertlens.metrics.geometry import row_cosine

FP32_MIN_COSINE = 0.99999  # the fp32 graph computes the same function: anything below is a bug, not rounding


@dataclass(frozen=True)
class Fidelity:
    texts: int
    max_abs_diff: float
    mean_cosine: float
    min_cosine: float
    below_floor: int | None = None  # texts whose cosine is under the gate's minimum (when measured against one)


def measure(got: np.ndarray, reference: np.ndarray, floor: float | None = None) -> Fidelity:
    cos = row_cosine(got.astype(np.float64), reference.astype(np.float64))
    below = None if floor is None else int((cos < floor).sum())
    return Fidelity(len(got), float(np.abs(got - reference).max()), float(cos.mean()), float(cos.min()), below)


def write_record(staging: Path, record: dict) -> dict:
    """export.json with the sha256 of every graph file in `staging` (checked before each load)."""
    graphs = [name for name in (MODEL_FILE, IR_FILE, IR_WEIGHTS) if (staging / name).is_file()]
    record = {**record, "sha256": {name: file_sha256(staging / name) for name in graphs}}
    write_json(staging / RECORD_FILE, record)
    return record


def calibration_feeds(tokenizer, texts: Sequence[str], max_length: int, batch: int = 16) -> list[dict[str, np.ndarray]]:
    """The graph's inputs for `texts`, in padded batches: what static quantization measures ranges on."""
    feeds = []
    for start in range(0, len(texts), batch):
        encoded = tokenizer(
            list(texts[start : start + batch]),
            truncation=True,
            max_length=max_length,
            padding=True,
            return_tensors="np",
        )
        feeds.append({name: encoded[name].astype(np.int64) for name in ("input_ids", "attention_mask")})
    return feeds


def split_calibration(calibration: Sequence[str]) -> tuple[list[str], list[str]]:
    """Calibration texts in two seeded halves: the first chooses (what stays fp32), the second judges the gate."""
    order = np.random.default_rng(0).permutation(len(calibration))
    half = len(order) // 2
    return [calibration[i] for i in order[:half]], [calibration[i] for i in order[half:]]
