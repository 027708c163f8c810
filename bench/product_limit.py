"""The limit on documents: the model's matrix products alone, in int8, bf16 and f32, on both runtimes and PyTorch.

Usage: python bench/product_limit.py [--model DIR] [--length 256] [--batch 8] [--repeats 5]
       [--measured "path=docs/s" ...]  (whole paths measured by bench/document_paths.py in the same session)

Issue #62, item 3. A whole path cannot embed documents faster than the CPU runs the model's products at that
precision. This bench times exactly them: every linear module's weight shape in the encoder (bench/int8_ceiling.py's
`linear_shapes`) on a batch of `--batch` documents of `--length` tokens (rows M = batch x length), with nothing of the
model around them, on all cores (as the OpenVINO backend runs: one request on every core):
- OpenVINO int8: X and W through FakeQuantize (256 levels; OpenVINO's CPU plugin runs such a product as an int8
  kernel, as it runs NNCF's graphs);
- OpenVINO bf16 and f32: the same product in floating point, with INFERENCE_PRECISION_HINT bf16 or f32;
- ONNX Runtime int8: the product quantized as the ONNX export quantizes it (embedding/quantize.py: dynamic,
  per-channel), and f32;
- PyTorch bf16 and fp32: `linear` on bf16 or fp32 tensors.
Each reports the products' rate (GFLOP/s: 2 M in out per product) and the documents per second the linear products
alone would allow (their FLOPs per document: 2 x length x sum(in x out)); attention's own products (2 x length^2 x
hidden per layer, twice) are left out: at 256 tokens they are 1/9 of the base model's linear FLOPs. With
`--measured`, each whole path is shown as a fraction of its precision's limit. Runs alternate; each reports its median.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from bertlens.embedding.quantize import quantize
from bertlens.models import resolve_model
from common import lscpu_summary
from int8_ceiling import linear_shapes, product_graph


def openvino_product(fan_in: int, fan_out: int, precision: str, rows: int):
    """() -> runs X [rows, in] @ W [in, out] compiled by OpenVINO at `precision` (int8: through FakeQuantize)."""
    import openvino as ov
    from openvino import opset13 as ops

    rng = np.random.default_rng(0)
    x = ops.parameter([-1, fan_in], np.float32, name="X")
    w = ops.constant(rng.normal(0, 0.02, (fan_in, fan_out)).astype(np.float32))
    left, right = x, w
    if precision == "int8":

        def fq(node, bound: float, levels: int):
            low, high = ops.constant(np.float32(-bound)), ops.constant(np.float32(bound))
            return ops.fake_quantize(node, low, high, low, high, levels)

        left, right = fq(x, 4.0, 256), fq(w, 0.1, 255)
    model = ov.Model([ops.matmul(left, right, False, False)], [x])
    hint = "bf16" if precision == "bf16" else "f32"
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": hint, "PERFORMANCE_HINT": "LATENCY"})
    request = compiled.create_infer_request()
    feed = {"X": rng.normal(0, 1, (rows, fan_in)).astype(np.float32)}
    return lambda: request.infer(feed)


def onnx_product(fan_in: int, fan_out: int, int8: bool, rows: int, workdir: Path):
    from bertlens.embedding.onnx_backend import session

    source = product_graph(fan_in, fan_out, workdir / f"{fan_in}x{fan_out}.onnx")
    path = quantize(source, workdir / f"{fan_in}x{fan_out}.int8.onnx") if int8 else source
    run = session(path, None)
    feed = {"X": np.random.default_rng(1).normal(0, 1, (rows, fan_in)).astype(np.float32)}
    return lambda: run.run(None, feed)


def torch_product(fan_in: int, fan_out: int, dtype, rows: int):
    x = torch.randn(rows, fan_in, dtype=dtype)  # [M, in]
    w = (torch.randn(fan_out, fan_in) * 0.02).to(dtype)  # [out, in]

    def run():
        with torch.inference_mode():
            torch.nn.functional.linear(x, w)  # [M, out]

    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="default")
    parser.add_argument("--length", type=int, default=256)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--measured", nargs="*", default=[], help='whole paths, "name=docs/s" (precision in name)')
    args = parser.parse_args()
    from transformers import AutoModel

    ref = resolve_model(args.model)
    shapes = linear_shapes(AutoModel.from_pretrained(ref.path))
    rows = args.batch * args.length
    print(f"model {ref.name} ({ref.num_layers} x {ref.hidden_size}); products per pass {dict(shapes)}; rows M = "
          f"{args.batch} x {args.length}; torch {torch.__version__}; CPU: {lscpu_summary()}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        makers = {
            "OpenVINO int8 (FakeQuantize)": lambda s: openvino_product(*s, "int8", rows),
            "OpenVINO bf16": lambda s: openvino_product(*s, "bf16", rows),
            "OpenVINO f32": lambda s: openvino_product(*s, "f32", rows),
            "ONNX Runtime int8 (as exported)": lambda s: onnx_product(*s, True, rows, Path(tmp)),
            "ONNX Runtime f32": lambda s: onnx_product(*s, False, rows, Path(tmp)),
            "PyTorch bf16": lambda s: torch_product(*s, torch.bfloat16, rows),
            "PyTorch fp32": lambda s: torch_product(*s, torch.float32, rows),
        }
        products = {name: {shape: make(shape) for shape in shapes} for name, make in makers.items()}
        times: dict[str, list[float]] = {name: [] for name in products}
        for round_ in range(args.repeats + 1):  # the first round warms up
            for name, runs in products.items():
                start = time.perf_counter()
                for shape, count in shapes.items():
                    for _ in range(count):
                        runs[shape]()
                if round_:
                    times[name].append(time.perf_counter() - start)
    flops_per_doc = 2 * args.length * sum(count * i * o for (i, o), count in shapes.items())
    limits = {}
    print("| products alone | GFLOP/s | docs/s the linear products allow |")
    print("|---|---|---|")
    for name, seconds in times.items():
        rate = flops_per_doc * args.batch / statistics.median(seconds)
        limits[name] = rate / flops_per_doc
        print(f"| {name} | {rate / 1e9:,.0f} | {limits[name]:,.1f} |")
    for measured in args.measured:
        path, rate = measured.rsplit("=", 1)
        precision = next((p for p in ("int8", "bf16") if p in path), "f32")
        limit = max(v for k, v in limits.items() if precision in k or (precision == "f32" and "fp32" in k))
        print(f"{path}: {float(rate):.1f} docs/s = {float(rate) / limit:.0%} of the fastest {precision} products' limit "
              f"({limit:.1f})")  # fmt: skip


if __name__ == "__main__":
    main()
