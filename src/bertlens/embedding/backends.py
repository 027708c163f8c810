"""One factory for whatever turns texts into vectors: the CLI's embed, the server and recommend's latency step build
their encoder here, from a `BackendSpec`, and nowhere else choose a backend by name.

A new backend (a GPU pool, a remote server) is one class implementing `protocol.TextEncoder` and one entry in
`BUILDERS`; everything built here is then embedded, served, resumed and timed alike.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bertlens.embedding.protocol import TextEncoder
from bertlens.errors import BertlensError, did_you_mean
from bertlens.extras import require
from bertlens.representation.choices import BACKENDS
from bertlens.representation.recipe import Recipe


@dataclass(frozen=True)
class BackendSpec:
    """What to build: the backend's name and the settings it reads (the others are ignored by it)."""

    backend: str = "torch"  # one of BACKENDS
    recipe: Recipe | None = None  # torch, ray: what to embed (default: the default model, precision auto)
    model_dir: str | os.PathLike | None = None  # onnx, openvino: a `bertlens export` directory (recipe inside)
    threads: int | None = None  # intra-op threads (None: the library's default)
    device: str = "cpu"  # torch: auto | cpu | cuda[:N]
    trust_remote_code: bool = False
    ray_address: str | None = None  # ray: join this cluster (None: a local Ray instance)
    ray_workers: int = 2  # ray: actors, each with its own model
    encoder: object | None = None  # torch: an Encoder to share (several recipes of one model load its weights once)


def _torch(spec: BackendSpec) -> TextEncoder:
    import torch

    from bertlens.embedding.embedder import Embedder

    if spec.threads is not None:
        torch.set_num_threads(spec.threads)
    recipe = spec.recipe or Recipe(precision="auto")
    return Embedder(recipe, encoder=spec.encoder, trust_remote_code=spec.trust_remote_code, device=spec.device)


def _onnx(spec: BackendSpec) -> TextEncoder:
    require("onnx", "the ONNX backend (--backend onnx)")
    from bertlens.embedding.onnx_backend import OnnxEmbedder

    if not spec.model_dir:
        raise BertlensError("--backend onnx needs --model DIR, a directory from `bertlens export --format onnx`")
    return OnnxEmbedder(Path(spec.model_dir), threads=spec.threads)


def _openvino(spec: BackendSpec) -> TextEncoder:
    require("openvino", "the OpenVINO backend (--backend openvino)")
    from bertlens.embedding.openvino_backend import OpenVinoEmbedder

    if not spec.model_dir:
        raise BertlensError("--backend openvino needs --model DIR, a directory from `bertlens export`")
    return OpenVinoEmbedder(Path(spec.model_dir), threads=spec.threads)


def _ray(spec: BackendSpec) -> TextEncoder:
    require("ray", "the Ray engine (--engine ray)")
    from bertlens.embedding.ray_engine import RayEmbedder

    return RayEmbedder(
        spec.recipe or Recipe(precision="auto"),
        address=spec.ray_address,
        workers=spec.ray_workers,
        trust_remote_code=spec.trust_remote_code,
    )


BUILDERS: dict[str, Callable[[BackendSpec], TextEncoder]] = {
    "torch": _torch,
    "onnx": _onnx,
    "openvino": _openvino,
    "ray": _ray,
}


def make_encoder(spec: BackendSpec) -> TextEncoder:
    """The encoder `spec` names, or one line naming the known backends."""
    if spec.backend not in BUILDERS:
        raise BertlensError(f"unknown backend '{spec.backend}': {did_you_mean(spec.backend, BACKENDS)}")
    if spec.backend == "ray" and spec.recipe is not None and spec.recipe.multi_vector:
        raise BertlensError(
            "a multi-vector recipe (pooler 'tokens') runs on the PyTorch backend; leave out --engine ray"
        )
    return BUILDERS[spec.backend](spec)
