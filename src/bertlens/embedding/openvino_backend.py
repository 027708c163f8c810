"""Embedding with an exported directory through OpenVINO (`--backend openvino`).

The same directory as the ONNX backend's, the same graph (token ids -> the recipe's final vector, pooling inside),
the same tokenization, batches and row order (this class is `OnnxEmbedder` with another runtime): OpenVINO
compiles `openvino_model.xml` when the directory has one (`bertlens export --format openvino`), else reads
`model.onnx` itself (an ONNX Runtime int8 graph runs, but without int8's speed: the OpenVINO export quantizes
with NNCF instead, embedding/openvino_export.py).

OpenVINO's CPU plugin computes in bf16 by default on a CPU with bf16 instructions (AVX512-BF16, AMX): a graph
exported and gated in fp32 would silently run at another precision. bertlens asks for f32 unless told otherwise
(`precision`), so `--backend openvino` computes what the export's gate measured.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np

from bertlens.embedding.onnx_backend import MODEL_FILE, OnnxEmbedder
from bertlens.errors import BertlensError
from bertlens.io.cache import file_sha256

IR_FILE = "openvino_model.xml"  # with openvino_model.bin beside it; written by `export --format openvino`
IR_WEIGHTS = "openvino_model.bin"
PRECISIONS = {"fp32": "f32", "bf16": "bf16"}  # bertlens' names -> OpenVINO's INFERENCE_PRECISION_HINT


class OpenVinoSession:
    """A compiled model behind ONNX Runtime's run(None, feed) -> [output]: one infer request per calling thread
    (a request is not safe to share; the compiled model is)."""

    def __init__(self, path: Path, threads: int | None, precision: str = "fp32") -> None:
        import openvino as ov

        core = ov.Core()
        config = {"INFERENCE_PRECISION_HINT": PRECISIONS[precision], "PERFORMANCE_HINT": "LATENCY"}
        if threads:
            config["INFERENCE_NUM_THREADS"] = int(threads)
        try:
            self.compiled = core.compile_model(core.read_model(str(path)), "CPU", config)
        except Exception as exc:  # noqa: BLE001 - OpenVINO's own errors: one line for the user
            reason = " ".join(str(exc).split())[:200]
            raise BertlensError(
                f"{path} is not a model OpenVINO can compile ({type(exc).__name__}: {reason}); export it again"
            ) from None
        self._local = threading.local()

    def run(self, _outputs, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        request = getattr(self._local, "request", None)
        if request is None:
            request = self._local.request = self.compiled.create_infer_request()
        result = request.infer(feed)
        return [np.array(result[0], copy=True)]  # [B, D]; the request reuses its output buffer


def model_file(directory: Path, record: dict, verify: bool = True) -> Path:
    """The IR when the export wrote one (checked against its recorded sha256), else the ONNX graph."""
    if not (directory / IR_FILE).is_file():
        return directory / MODEL_FILE
    if not verify:
        return directory / IR_FILE
    recorded = record.get("sha256", {})
    for name in (IR_FILE, IR_WEIGHTS):
        if name not in recorded or file_sha256(directory / name) != recorded[name]:
            raise BertlensError(f"{directory / name} does not match the checksum in export.json; export again")
    return directory / IR_FILE


class OpenVinoEmbedder(OnnxEmbedder):
    """`OpenVinoEmbedder(DIR).encode(texts)` -> np.ndarray [N, D] float32, rows in input order. `precision`: the
    inference precision (default: what the export was gated at, `openvino_precision` in export.json, else fp32)."""

    # One request on every core, batch after batch: one-thread requests side by side, as ONNX Runtime runs them, were
    # half the documents/s here (default model, 256-token reviews, AMD EPYC 2 cores; docs/results-log.md).
    BATCH_PARALLEL = False

    def __init__(
        self,
        directory: str | os.PathLike,
        threads: int | None = None,
        verify: bool = True,
        precision: str | None = None,
    ):
        if precision is not None and precision not in PRECISIONS:
            raise BertlensError(f"OpenVINO precision '{precision}': use one of {', '.join(PRECISIONS)}")
        self.precision, self._verify, self.model_path = precision, verify, None
        super().__init__(directory, threads=threads, verify=verify)

    def _session(self, threads: int | None) -> OpenVinoSession:
        if self.model_path is None:  # the record is read (and model.onnx verified) by OnnxEmbedder first
            self.model_path = model_file(self.directory, self.record, self._verify)
            self.precision = self.precision or self.record.get("openvino_precision", "fp32")
        return OpenVinoSession(self.model_path, threads, self.precision)
