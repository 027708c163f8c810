"""The price of a model's reading, measured rather than looked up: texts/s and one-text latency on the user's own
texts on this machine, weights in memory, vector size and model size on disk.

A leaderboard measured on other people's data (MTEB) says nothing of what a model costs on your texts and your
machine, and the price is half the decision between two encoders (docs/guide.md, "Which encoder"). The speed is the
recipe's own, run by PyTorch at each precision that keeps its vectors (fp32, and bf16 where the CPU or GPU computes
it natively: min cosine to fp32 >= 0.9999, docs/results-log.md), the faster of a race on a quarter of the texts,
then timed on all of them: the measurement `recommend`'s latency step makes (embedding/speed.py: timing). An int8
export is not part of the price: it is gated per model by `export` (and timed by recommend's latency step).
"""

from __future__ import annotations

import platform
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bertlens.embedding.embedder import Embedder
from bertlens.embedding.speed import texts_per_second, timing
from bertlens.encoding.precision import native_bf16
from bertlens.representation.recipe import Recipe

PRICE_TEXTS = 256  # texts timed (a long-text recipe reads every window: 32)
RACE_MIN_TEXTS = 8  # the precisions race on a quarter of them, at least this many
WEIGHT_FILES = ("*.safetensors", "*.bin", "*.pt", "*.onnx")


@dataclass(frozen=True)
class Price:
    """What serving one model's reading costs here. `texts_per_s` and `ms_one_text` are of its fastest precision
    (`precision`); `dim` and `bytes_per_vector` are of the reading (float32 vectors: what an index stores)."""

    model: str
    texts_per_s: float
    ms_one_text: float
    precision: str
    weights_mb: float  # parameters in memory at that precision
    disk_mb: float  # the model directory's weight files
    dim: int
    texts: int  # how many of the user's texts were timed
    machine: str  # the CPU (threads) or GPU it was measured on

    @property
    def bytes_per_vector(self) -> int:
        return 4 * self.dim

    def as_dict(self) -> dict:
        return {**asdict(self), "bytes_per_vector": self.bytes_per_vector}


def machine_name(device: str | torch.device = "cpu") -> str:
    """'Intel(R) Xeon(R) Processor, 2 threads' or the GPU's name: what a speed figure is measured on."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            name = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), name)
    except OSError:
        pass
    return f"{name}, {torch.get_num_threads()} threads"


def disk_megabytes(path: Path) -> float:
    """The weight files of a model directory, in MB (config and tokenizer files are negligible)."""
    files = {f for pattern in WEIGHT_FILES for f in Path(path).glob(pattern)}
    return sum(f.stat().st_size for f in files) / 1e6


def price_sample(texts: list[str], seed: int, count: int = PRICE_TEXTS) -> list[str]:
    """The texts every model is timed on: a seeded draw of the user's distinct texts, the same for each model."""
    distinct = list(dict.fromkeys(texts))
    if len(distinct) <= count:
        return distinct
    rows = np.sort(np.random.default_rng(seed).choice(len(distinct), count, replace=False))
    return [distinct[i] for i in rows]


def measure_price(recipe: Recipe, texts: list[str], device: str = "cpu") -> Price:
    """Time `recipe` on `texts` at its faster precision. Where bf16 is native, fp32 and bf16 race on a quarter of
    the texts (alternating, the same texts for both); the winner alone is then timed on all of them.

    Timing the slower precision on every text too was 30-65% of the price's cost (docs/results-log.md, #74 second
    part); the figures reported are the winner's on the whole sample, as before."""
    sample = texts[:32] if recipe.long_text else texts
    precisions = ["fp32"] + (["bf16"] if native_bf16(device=str(device))[0] else [])
    embedders = {p: Embedder(recipe.replace(precision=p), device=device) for p in precisions}
    precision = faster(embedders, sample[: max(RACE_MIN_TEXTS, len(sample) // 4)])
    embedder = embedders.pop(precision)
    embedders.clear()  # the loser's weights go before the timing
    rate, ms = timing(embedder, sample)
    weights = sum(p.numel() * p.element_size() for p in embedder.encoder.model.parameters()) / 1e6
    disk = disk_megabytes(_model_dir(recipe.model))
    return Price(recipe.model, rate, ms, precision, weights, disk, embedder.dim, len(sample), machine_name(device))


def faster(embedders: dict[str, Any], texts: list[str]) -> str:
    """The name of the embedder (anything with `encode(texts)`) with the most texts/s on `texts`; the first of
    equals. One embedder is not timed."""
    if len(embedders) == 1:
        return next(iter(embedders))
    rates = texts_per_second(list(embedders.values()), texts)
    return list(embedders)[int(np.argmax(rates))]


def _model_dir(name: str) -> Path:
    from bertlens.models import resolve_model

    return resolve_model(name).path
