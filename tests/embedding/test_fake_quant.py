"""The PyTorch int8 emulation against ONNX Runtime itself: the same rounding of activations, weights and products."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from bertlens.embedding.fake_quant import (
    fake_quantize_activation,
    fake_quantize_weight,
    fake_quantized,
    input_ranges,
)
from bertlens.embedding.quantize import quantize


def _run(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def _onnx(nodes, inputs, outputs, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("shift", [0.0, 3.0, -3.0])  # a range across zero, all positive, all negative
def test_activation_rounding_is_dynamic_quantize_linear(shift):
    x = (np.random.default_rng(0).standard_normal((4, 7, 16)) * 2 + shift).astype(np.float32)
    inp = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, list(x.shape))
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"]),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"]),
    ]
    (expected,) = _run(_onnx(nodes, [inp], [out]), {"x": x})
    got = fake_quantize_activation(torch.from_numpy(x)).numpy()
    scale = (max(x.max(), 0) - min(x.min(), 0)) / 255
    assert np.abs(got - expected).max() <= 1e-6 * np.abs(x).max()  # identical levels (float rounding of the scale)
    assert np.abs(got - x).max() <= scale / 2 + 1e-6  # and a real rounding: at most half a level off


def test_weight_rounding_and_the_product_are_what_quantize_dynamic_writes(tmp_path):
    rng = np.random.default_rng(1)
    weight = (rng.standard_normal((12, 5)) * np.array([0.1, 1, 3, 0.01, 10])).astype(np.float32)  # [in, out]
    x = rng.standard_normal((3, 6, 12)).astype(np.float32)
    inp = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 6, 12])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 6, 5])
    model = _onnx([helper.make_node("MatMul", ["x", "w"], ["y"])], [inp], [out], [numpy_helper.from_array(weight, "w")])
    onnx.save(model, tmp_path / "fp32.onnx")
    quantize(tmp_path / "fp32.onnx", tmp_path / "int8.onnx")
    (expected,) = _run(onnx.load(tmp_path / "int8.onnx"), {"x": x})
    linear = torch.nn.Linear(12, 5, bias=False)
    with torch.no_grad():
        linear.weight.copy_(torch.from_numpy(weight.T))
    with torch.no_grad(), fake_quantized(torch.nn.Sequential(linear), ["0"]):
        got = linear(torch.from_numpy(x)).numpy()
    plain = x @ weight
    assert np.abs(got - expected).max() <= 1e-5 * np.abs(plain).max()  # the int8 graph's product, to float rounding
    assert np.abs(got - plain).max() > 1e-3 * np.abs(plain).max()  # which is not the fp32 product
    int8 = fake_quantize_weight(torch.from_numpy(weight.T))  # [out, in]
    levels = int8 / (torch.from_numpy(np.abs(weight).max(0))[:, None] / 127)
    assert torch.allclose(levels, levels.round(), atol=1e-4) and levels.abs().max() <= 127  # per output channel


def test_weights_and_hooks_are_restored_even_when_the_block_fails():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    before = [p.detach().clone() for p in model.parameters()]
    x = torch.randn(3, 4)
    plain = model(x)
    with pytest.raises(RuntimeError, match="inside"), fake_quantized(model, ["0", "2"]):
        assert not torch.equal(model(x), plain)
        raise RuntimeError("inside")
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert torch.equal(model(x), plain) and not model[0]._forward_pre_hooks
    with pytest.raises(TypeError, match="not an nn.Linear"), fake_quantized(model, ["1"]):
        pass


def test_static_ranges_are_the_min_and_max_over_every_pass():
    model = torch.nn.Sequential(torch.nn.Linear(3, 2))
    batches = [torch.tensor([[1.0, -2.0, 0.5]]), torch.tensor([[4.0, 0.0, -1.0]])]
    with torch.no_grad(), input_ranges(model, ["0"]) as ranges:
        for batch in batches:
            model(batch)
    assert ranges == {"0": (-2.0, 4.0)} and not model[0]._forward_pre_hooks
    x = torch.tensor([[3.0, 1.0, -0.5]])
    fixed = fake_quantize_activation(x, ranges["0"])
    assert torch.allclose(fixed / (6.0 / 255), (fixed / (6.0 / 255)).round(), atol=1e-4)  # levels of the fixed range
