"""sentence-transformers' ONNX and OpenVINO backends, timed round by round for bench/document_paths.py.

They need `optimum-onnx` and `optimum-intel`, which resolve to other transformers (and, unpinned, a CUDA torch) than
bertlens' stack, so they run in a venv of their own (docs/results-log.md says how to make it) as a worker process: the
bench starts it with that venv's Python, and asks for one timed pass of every backend per round, interleaved with its
own paths. Protocol (stdin, and stdout lines that start with REPLY; the libraries print other lines there too): `round`
-> {"path": seconds, ...}; `vectors FILE` -> writes the last pass's vectors (.npz) and answers "ok"; `quit`.

Usage (by the bench): python st_backends_worker.py MODEL_DIR LENGTH TEXTS.json CALIBRATION.json WORK_DIR
Backends, as their guide makes them (sbert.net, "Speeding up Inference"): ONNX fp32; ONNX dynamic int8
(`export_dynamic_quantized_onnx_model`, the avx512_vnni config); OpenVINO fp32; OpenVINO static int8
(`export_static_quantized_openvino_model`, NNCF, calibrated on CALIBRATION's texts instead of GLUE/SST-2, which is
offline here, padded to 384 tokens as the function does).
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

REPLY = "@@worker "


def main() -> None:
    model_dir, length, texts_file, calibration_file, work = sys.argv[1:6]
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.backend import (
        export_dynamic_quantized_onnx_model,
        export_static_quantized_openvino_model,
    )

    texts = json.loads(Path(texts_file).read_text())
    calibration = json.loads(Path(calibration_file).read_text())
    copy = Path(work) / "model"  # the exports write beside the model: a copy, not the user's directory
    shutil.rmtree(copy, ignore_errors=True)  # fresh: its exports are timed and must not be an earlier run's
    shutil.copytree(model_dir, copy)
    started = {}

    def load(backend: str, file_name: str | None = None):
        kwargs = {"model_kwargs": {"file_name": file_name}} if file_name else {}
        model = SentenceTransformer(str(copy), device="cpu", backend=backend, **kwargs)
        model.max_seq_length = int(length)
        return model

    start = time.perf_counter()
    onnx = load("onnx")
    onnx.save_pretrained(str(copy))  # writes onnx/model.onnx, which the quantizer reads
    export_dynamic_quantized_onnx_model(onnx, "avx512_vnni", str(copy))
    started["onnx exports"] = time.perf_counter() - start
    start = time.perf_counter()
    openvino = load("openvino")
    openvino.save_pretrained(str(copy))
    _static_openvino(openvino, calibration, str(copy), export_static_quantized_openvino_model)
    started["openvino exports"] = time.perf_counter() - start
    openvino = load("openvino", "openvino/openvino_model.xml")  # the quantizer changed the loaded model in place
    paths = {
        "sentence-transformers onnx": onnx,
        "sentence-transformers onnx qint8 (avx512_vnni)": load("onnx", "onnx/model_qint8_avx512_vnni.onnx"),
        "sentence-transformers openvino": openvino,
        "sentence-transformers openvino int8 static": load("openvino", "openvino/openvino_model_qint8_quantized.xml"),
    }
    vectors = {name: model.encode(texts[:16], batch_size=32) for name, model in paths.items()}  # warm-up
    reply({"ready": started})
    for line in sys.stdin:
        command = line.split()
        if command[0] == "round":
            seconds = {}
            for name, model in paths.items():
                start = time.perf_counter()
                vectors[name] = model.encode(texts, batch_size=32)
                seconds[name] = time.perf_counter() - start
            reply(seconds)
        elif command[0] == "vectors":
            np.savez(command[1], **{name: np.asarray(v, dtype=np.float32) for name, v in vectors.items()})
            reply("ok")
        else:
            break


def reply(value) -> None:
    print(REPLY + json.dumps(value), flush=True)


def _static_openvino(model, calibration: list[str], target: str, export) -> None:
    """sentence-transformers' own static int8 export, its calibration texts ours (its default is GLUE, online)."""
    import datasets
    from optimum.intel.openvino import OVQuantizationConfig, OVQuantizer

    own = OVQuantizer.get_calibration_dataset

    def local(self, dataset_name, num_samples=300, dataset_config_name=None, dataset_split=None,
              preprocess_function=None, **kwargs):  # fmt: skip
        rows = datasets.Dataset.from_dict({"sentence": calibration[:num_samples]})
        return rows.map(lambda batch: preprocess_function({"sentence": batch["sentence"]}), batched=True,
                        remove_columns=["sentence"])  # fmt: skip

    OVQuantizer.get_calibration_dataset = local
    try:
        export(model, OVQuantizationConfig(num_samples=len(calibration)), target)
    finally:
        OVQuantizer.get_calibration_dataset = own


if __name__ == "__main__":
    main()
