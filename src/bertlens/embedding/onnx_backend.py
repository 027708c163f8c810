"""Embedding with an exported ONNX directory (`bertlens export --format onnx`) through ONNX Runtime.

The directory is self-describing: model.onnx (the whole recipe, token ids -> final vector), the
tokenizer files, recipe.json and export.json (what was exported, its parity figures and the sha256
of model.onnx, checked before the model is loaded). `OnnxEmbedder` is a `TextEncoder`, so `bertlens embed
--backend onnx` gets the same shards, resume and row order as the PyTorch backend, and `serve` the same
server. It tokenizes, pads and batches through encoding/tokens.py, as the PyTorch encoder does.
"""

from __future__ import annotations

import copy
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bertlens.embedding.protocol import Embeddings, TextEncoder, TokenCounter, token_counter_of
from bertlens.encoding.batching import length_batches
from bertlens.encoding.tokens import map_batches, pad_ids, tokenize
from bertlens.errors import BertlensError
from bertlens.io.cache import file_sha256
from bertlens.progress import Progress, silent
from bertlens.representation.recipe import Recipe

MODEL_FILE = "model.onnx"
RECORD_FILE = "export.json"
MAX_BATCH, MAX_TOKENS = 64, 64 * 128


def read_export(directory: Path, verify: bool = True) -> dict:
    """export.json of an ONNX export directory, with model.onnx checked against its recorded sha256."""
    record_path = directory / RECORD_FILE
    if not record_path.is_file() or not (directory / MODEL_FILE).is_file():
        raise BertlensError(
            f"{directory} is not an ONNX export (no {RECORD_FILE} or {MODEL_FILE}); make one with "
            "`bertlens export --format onnx`"
        )
    try:
        record = json.loads(record_path.read_text())
        expected = record["sha256"][MODEL_FILE]
    except (ValueError, KeyError, TypeError):
        raise BertlensError(f"{record_path}: unreadable export record; export again") from None
    if verify and file_sha256(directory / MODEL_FILE) != expected:
        raise BertlensError(f"{directory / MODEL_FILE} does not match the checksum in {RECORD_FILE}; export again")
    return record


# ONNX Runtime's fused residual + LayerNorm kernel (com.microsoft.SkipLayerNormalization) took as long as all
# the int8 matrix products together in a profile of the default model (29% of kernel time); the unfused Add +
# LayerNormalization is 1.37x faster end to end for int8 and 1.16x for fp32 (docs/results-log.md, P1).
SLOW_FUSIONS = ("SkipLayerNormFusion",)


def cores(threads: int | None = None) -> int:
    """Threads to use: `threads`, else OMP_NUM_THREADS, else the cores this process may run on."""
    return threads or int(os.environ.get("OMP_NUM_THREADS", "0") or 0) or len(os.sched_getaffinity(0))


def session(path: Path, threads: int | None = None):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or int(os.environ.get("OMP_NUM_THREADS", "0") or 0)  # 0: ORT's own
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    try:
        return ort.InferenceSession(
            str(path), options, providers=["CPUExecutionProvider"], disabled_optimizers=list(SLOW_FUSIONS)
        )
    except Exception as exc:  # noqa: BLE001 - onnxruntime's InvalidProtobuf, Fail, ...: one line for the user
        reason = " ".join(str(exc).split())[:200]
        raise BertlensError(
            f"{path} is not a model ONNX Runtime can load ({type(exc).__name__}: {reason}); export it again"
        ) from None


class OnnxEmbedder(TextEncoder):
    """`OnnxEmbedder(DIR).encode(texts)` -> np.ndarray [N, D] float32, rows in input order."""

    BATCH_PARALLEL = True  # several batches one per core, each on a one-thread session (see __init__)

    def __init__(self, directory: str | os.PathLike, threads: int | None = None, verify: bool = True):
        from transformers import AutoTokenizer

        self.directory = Path(directory)
        self.export_dir = self.directory.resolve()
        self.record = read_export(self.directory, verify)  # verify=False only for candidates made in this process
        self.recipe = Recipe.from_dict(self.record["recipe"], where=str(self.directory / RECORD_FILE))
        self.max_length = int(self.record["max_length"])
        self.dim = int(self.record["dim"])
        self.fingerprint = self.record["sha256"][MODEL_FILE][:16]
        self.tokenizer = AutoTokenizer.from_pretrained(self.directory)
        self.threads = cores(threads)
        self.session = self._session(threads)
        self.pad_id = self.tokenizer.pad_token_id or 0
        # Calls of several batches run them `threads` at a time, each on one thread of a second session: on 2 cores
        # that is 1.37x the texts/s of one 2-thread session (all-mpnet-base-v2 int8, AMD EPYC; docs/results-log.md).
        # Made on first use and shared by for_thread() copies (run() is thread-safe).
        self._batch_parallel = {"session": None, "lock": threading.Lock()}

    def _session(self, threads: int | None):
        """What runs the graph: an object whose run(None, feed) returns [vectors] (an ONNX Runtime session here; the
        OpenVINO backend overrides this)."""
        return session(self.directory / MODEL_FILE, threads)

    def _one_thread_session(self):
        with self._batch_parallel["lock"]:
            if self._batch_parallel["session"] is None:
                self._batch_parallel["session"] = self._session(1)
            return self._batch_parallel["session"]

    def for_thread(self) -> OnnxEmbedder:
        """A copy for a concurrent worker thread: the same ONNX Runtime session (its run() is thread-safe) and
        its own tokenizer (see `Encoder.for_thread`)."""
        twin = copy.copy(self)
        twin.tokenizer = copy.deepcopy(self.tokenizer)
        return twin

    def token_counter(self) -> TokenCounter:
        return token_counter_of(self.tokenizer)

    def embed(self, texts: Sequence[str], progress: Progress = silent) -> Embeddings:
        if not texts:
            return Embeddings(np.zeros((0, self.dim), dtype=np.float32), 0)
        tokenized = tokenize(self.tokenizer, texts, self.max_length)
        batches = length_batches(tokenized.lengths, MAX_BATCH, MAX_TOKENS)
        several = self.BATCH_PARALLEL and self.threads > 1 and len(batches) > 1
        runner = self._one_thread_session() if several else self.session

        def run(rows: np.ndarray) -> np.ndarray:
            ids, mask = pad_ids([tokenized.input_ids[r] for r in rows], self.pad_id)  # [B, T] each
            return runner.run(None, {"input_ids": ids, "attention_mask": mask})[0]  # [B, D]

        workers = self.threads if several else 1
        vectors = map_batches(tokenized.lengths, run, MAX_BATCH, MAX_TOKENS, progress, "embedding", workers, batches)
        return Embeddings(vectors.astype(np.float32, copy=False), tokenized.truncated)
