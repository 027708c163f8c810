"""The sweep's encoding pass alone (build_bank: every layer x pooler of every text, float16 on disk), in texts per
second, at a few corpus sizes: the per-worker cost that the scaling estimate of a Ray sweep (issue #51) multiplies.

    .venv/bin/python bench/bank_throughput.py --model DIR --data task.csv [--sizes 10000,100000] [--device cuda]
        [--precision bf16] [--random-weights] [--check 512]

--random-weights builds the model from DIR's config.json with random weights (DIR needs only the config and the
tokenizer): the speed of a forward pass does not depend on the weights' values, and a machine without the weights
(a GPU box that cannot reach the Hub) can still time the architecture. Texts come from the CSV's --text-col,
repeated with a numbered suffix when a size needs more. --check N first compares the bank of N texts (pooled where
the model runs) with the same texts' states moved to the host and pooled there (features/layers.layer_vectors), and
prints the largest difference. Run it alone: the figures are seconds.
"""

from __future__ import annotations

import argparse
import csv
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from bertlens.encoding.encoder import Encoder
from bertlens.features.bank import build_bank
from bertlens.representation.choices import DEFAULT_POOLERS, attentions_for


def _texts(path: Path, column: str, size: int) -> list[str]:
    with path.open(newline="", encoding="utf-8") as handle:
        base = [row[column] for row in csv.DictReader(handle)]
    return [base[i % len(base)] + ("" if i < len(base) else f" ({i // len(base)})") for i in range(size)]


def _random_model(folder: Path, into: Path) -> Path:
    """DIR's architecture with random weights, saved as a model folder (config, tokenizer, safetensors)."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    torch.manual_seed(0)
    model = AutoModel.from_config(AutoConfig.from_pretrained(folder))
    model.save_pretrained(into, safe_serialization=True)
    AutoTokenizer.from_pretrained(folder).save_pretrained(into)
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--text-col", default="text")
    parser.add_argument("--sizes", default="10000")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--random-weights", action="store_true")
    parser.add_argument("--check", type=int, default=0)
    args = parser.parse_args()
    device = torch.cuda.get_device_name() if args.device.startswith("cuda") else platform.processor() or "cpu"
    print(f"device: {device}; torch {torch.__version__}; {torch.get_num_threads()} threads")
    with tempfile.TemporaryDirectory() as folder:
        model = _random_model(Path(args.model), Path(folder) / "model") if args.random_weights else args.model
        encoder = Encoder(str(model), precision=args.precision, attentions=attentions_for(DEFAULT_POOLERS),
                          device=args.device)  # fmt: skip
        print(f"model: {args.model}{' (random weights)' if args.random_weights else ''}: {encoder.num_layers} layers "
              f"x {encoder.hidden_size}, max_length {encoder.max_length}, {args.precision}")  # fmt: skip
        build_bank(encoder, _texts(args.data, args.text_col, 256), Path(folder) / "warm")  # kernels, allocator
        if args.check:
            _check(encoder, _texts(args.data, args.text_col, args.check), Path(folder) / "check")
        print("| texts | bank seconds | texts/s |")
        print("|---|---|---|")
        for size in (int(s) for s in args.sizes.split(",")):
            texts = _texts(args.data, args.text_col, size)
            start = time.perf_counter()
            build_bank(encoder, texts, Path(folder) / f"cache-{size}", poolers=DEFAULT_POOLERS)
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()
            seconds = time.perf_counter() - start
            print(f"| {size:,} | {seconds:.1f} | {size / seconds:,.0f} |", flush=True)


def _check(encoder: Encoder, texts: list[str], cache: Path) -> None:
    """The bank (float32 here, pooled where the model runs) against the states pooled on the host."""
    from bertlens.features.layers import layer_vectors

    bank = build_bank(encoder, texts, cache, poolers=DEFAULT_POOLERS, dtype="float32")
    host = layer_vectors(encoder, texts, DEFAULT_POOLERS)  # pooler -> [L+1, N, H]
    gap = max(float(np.abs(bank.layer(p, layer) - host[p][layer]).max()) for p in host for layer in range(len(host[p])))
    scale = max(float(np.abs(host[p]).max()) for p in host)
    print(f"check: {len(texts)} texts, every layer x pooler: largest difference {gap:.2e} (largest value {scale:.1f})")


if __name__ == "__main__":
    main()
