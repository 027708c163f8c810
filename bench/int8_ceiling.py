"""The ceiling of int8 on this CPU: the model's int8 matrix products alone, timed, against sentence-transformers fp32.

Usage: python bench/int8_ceiling.py [--model DIR] [--texts N] [--repeats R] [--export ONNX_DIR]

Why: issue #37 asks the gated int8 path for >= 6x sentence-transformers fp32 at base size. The int8 graph spends
most of its time in its int8 products (a profile of all-mpnet-base-v2: 82% of kernel time). Those products cannot
run faster than ONNX Runtime's int8 kernels run them here, so the products alone, with nothing else of the model
around them, bound what any int8 graph of this model can reach. This bench times exactly them: for the same N STS-B
sentences as bench/embed_speed.py, the same length batches as `bertlens embed --backend onnx` (onnx_backend's
MAX_BATCH and MAX_TOKENS: the padded rows each product really sees), each linear module's weight shape in the
encoder, quantized as the export quantizes (embedding/quantize.py: dynamic, per-channel int8) and run on one-thread
sessions, one batch per core, as the ONNX path runs calls of several batches. The same products in fp32 (PyTorch, one
thread a core) give the int8 : fp32 ratio of the kernels themselves. The baseline, sentence-transformers `encode`
fp32 (batch 32), is measured in the same run on the same texts, and with `--export` so is the whole int8 graph of
an export of the model (`bertlens export --format onnx --quantize int8`). Runs alternate; each reports its median.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import torch

from bertlens.embedding.onnx_backend import MAX_BATCH, MAX_TOKENS, cores, session
from bertlens.embedding.quantize import quantize
from bertlens.encoding.batching import length_batches
from bertlens.encoding.tokens import map_batches, tokenize
from bertlens.models import resolve_model
from common import lscpu_summary, sts_sentences


def linear_shapes(model: torch.nn.Module) -> Counter:
    """(in, out) -> how many linear modules of the encoder's layers have that weight shape."""
    return Counter(
        (m.in_features, m.out_features)
        for name, m in model.named_modules()
        if isinstance(m, torch.nn.Linear) and ".layer." in name
    )


def product_graph(fan_in: int, fan_out: int, path: Path) -> Path:
    """An ONNX graph of one linear product X [M, in] @ W [in, out] + b (seeded weights: speed ignores their values)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.normal(0, 0.02, (fan_in, fan_out)).astype(np.float32), "W")
    bias = numpy_helper.from_array(np.zeros(fan_out, dtype=np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["XW"]), helper.make_node("Add", ["XW", "b"], ["Y"])],
        "linear",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["M", fan_in])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["M", fan_out])],
        [weight, bias],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def seconds_on_cores(products, lengths: np.ndarray, workers: int) -> float:
    """Wall seconds to run `products(padded rows)` for every batch of the ONNX backend, through the same
    map_batches it uses (its batches, `workers` at a time, one per core)."""

    def run(rows: np.ndarray) -> np.ndarray:
        products(len(rows) * int(lengths[rows].max()))  # the padded rows [B x T] every product of the batch sees
        return np.zeros((len(rows), 1))

    start = time.perf_counter()
    map_batches(lengths, run, MAX_BATCH, MAX_TOKENS, workers=workers)
    return time.perf_counter() - start


def product_runs(shapes: Counter, inputs: dict, workdir: Path):
    """Per padded batch of M rows, every linear product of one pass: int8 as exported (dynamic), int8 with static
    activation scales (QDQ), and fp32 (PyTorch); each on one thread."""
    dynamic, static = {}, {}
    for fan_in, fan_out in shapes:
        source = product_graph(fan_in, fan_out, workdir / f"{fan_in}x{fan_out}.onnx")
        dynamic[fan_in, fan_out] = session(quantize(source, workdir / f"{fan_in}x{fan_out}.int8.onnx"), 1)
        calibration = [{"X": inputs[fan_in, fan_out][:256]}]
        static[fan_in, fan_out] = session(
            quantize(source, workdir / f"{fan_in}x{fan_out}.qdq.onnx", calibration=calibration), 1
        )
    weights = {k: torch.randn(k[1], k[0]) * 0.02 for k in shapes}

    def onnx_products(sessions):
        def run(rows: int) -> None:
            for shape, count in shapes.items():
                for _ in range(count):
                    sessions[shape].run(None, {"X": inputs[shape][:rows]})

        return run

    def fp32_products(rows: int) -> None:
        torch.set_num_threads(1)  # the caller restores it
        for shape, count in shapes.items():
            x = torch.from_numpy(inputs[shape][:rows])  # [M, in]
            for _ in range(count):
                torch.nn.functional.linear(x, weights[shape])  # [M, out]

    return onnx_products(dynamic), onnx_products(static), fp32_products


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="default", help="a sentence-transformers model directory (default model)")
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--export", type=Path, help="an int8 ONNX export of the model, timed end to end as a row")
    args = parser.parse_args()
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel, AutoTokenizer

    ref = resolve_model(args.model)
    texts = [t for t in sts_sentences() if t.strip()][: args.texts]
    lengths = tokenize(AutoTokenizer.from_pretrained(ref.path), texts, 512).lengths
    padded = [len(rows) * int(lengths[rows].max()) for rows in length_batches(lengths, MAX_BATCH, MAX_TOKENS)]
    shapes = linear_shapes(AutoModel.from_pretrained(ref.path))
    workers = cores()
    print(
        f"{len(texts)} STS-B sentences, model {ref.name} ({ref.num_layers} x {ref.hidden_size}); "
        f"{int(lengths.sum()):,} tokens, {sum(padded):,} padded rows in {len(padded)} batches; linear products per "
        f"pass: {dict(shapes)}; {workers} cores; CPU: {lscpu_summary()}"
    )
    st = SentenceTransformer(str(ref.path), device="cpu")
    threads = torch.get_num_threads()
    with tempfile.TemporaryDirectory() as tmp:
        inputs = {k: np.random.default_rng(1).normal(0, 1, (max(padded), k[0])).astype(np.float32) for k in shapes}
        dynamic, static, fp32 = product_runs(shapes, inputs, Path(tmp))
        runs = {
            "sentence-transformers encode, batch 32, fp32 (baseline)": lambda: timed_call(
                lambda: st.encode(texts, batch_size=32)
            ),
            f"fp32 linear products alone (PyTorch, {workers} x 1 thread)": lambda: seconds_on_cores(
                fp32, lengths, workers
            ),
            f"int8 linear products alone (ONNX Runtime, as exported, {workers} x 1 thread)": lambda: seconds_on_cores(
                dynamic, lengths, workers
            ),
            f"int8 linear products alone, static activation scales (QDQ, {workers} x 1 thread)": lambda: (
                seconds_on_cores(static, lengths, workers)
            ),
        }
        if args.export is not None:
            from bertlens.embedding.onnx_backend import OnnxEmbedder

            exported = OnnxEmbedder(args.export)
            runs[f"bertlens embed --backend onnx, the whole int8 graph ({args.export.name})"] = lambda: timed_call(
                lambda: exported.encode(texts)
            )
        times: dict[str, list[float]] = {name: [] for name in runs}
        for round_ in range(args.repeats + 1):  # the first round warms up and is not counted
            for name, run in runs.items():
                seconds = run()
                torch.set_num_threads(threads)
                if round_:
                    times[name].append(seconds)
    flops = 2 * sum(padded) * sum(count * fan_in * fan_out for (fan_in, fan_out), count in shapes.items())
    base = statistics.median(times["sentence-transformers encode, batch 32, fp32 (baseline)"])
    print("| run | seconds | texts/s | ratio | linear products, G multiply-adds x 2 / s |")
    print("|---|---|---|---|---|")
    for name, seconds in times.items():
        median = statistics.median(seconds)
        rate = "" if name.startswith("sentence") else f"{flops / median / 1e9:,.0f}"
        print(f"| {name} | {median:.2f} | {len(texts) / median:,.0f} | {base / median:.2f}x | {rate} |")


def timed_call(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
