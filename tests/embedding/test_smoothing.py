"""SmoothQuant before int8: the same function in fp32, outliers moved into the weights, one scale per shared input."""

from __future__ import annotations

import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from bertlens.embedding.fake_quant import fake_quantized
from bertlens.embedding.quantize import merge_shared_scalings
from bertlens.embedding.smoothing import calibrate, smoothed, smoothed_name, smoothing_scales


class Attention(torch.nn.Module):
    """q, k and v read one tensor; an FFN-like product reads a tensor with one huge channel."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.q, self.k, self.v = (torch.nn.Linear(8, 8) for _ in range(3))
        self.out = torch.nn.Linear(8, 4)

    def forward(self, x):
        h = self.q(x) + self.k(x) * self.v(x)
        return self.out(h * torch.tensor([30.0] + [1.0] * 7))  # channel 0 is an outlier


def test_smoothing_keeps_the_function_and_shares_one_scale_for_one_input():
    model = Attention().eval()
    x = torch.randn(5, 8)
    with torch.no_grad():
        plain = model(x)
        calibration = calibrate(model, ["q", "k", "v", "out"], lambda: model(x))
    assert calibration.groups == (("q", "k", "v"), ("out",))
    scales = smoothing_scales(model, calibration, 0.75)
    assert scales["q"][1] is scales["k"][1] is scales["v"][1]  # one tensor: one initializer, one Mul in the graph
    with torch.no_grad(), smoothed(model, scales):
        assert isinstance(model.q.linear, torch.nn.Linear)
        torch.testing.assert_close(model(x), plain, atol=1e-5, rtol=1e-5)  # exact up to float rounding
    assert isinstance(model.q, torch.nn.Linear)  # put back
    torch.testing.assert_close(model(x), plain)


def test_smoothing_flattens_an_outlier_channel_and_int8_gets_closer():
    model = Attention().eval()
    x = torch.randn(64, 8)
    names = ["q", "k", "v", "out"]
    with torch.no_grad():
        plain = model(x)
        with fake_quantized(model, names):
            rough = (model(x) - plain).norm()
        calibration = calibrate(model, names, lambda: model(x))
        scales = smoothing_scales(model, calibration, 0.75)
        assert scales["out"][0][0] > 5 * scales["out"][0][1:].max()  # the outlier channel is divided down most
        with smoothed(model, scales), fake_quantized(model, [smoothed_name(n) for n in names]):
            smooth = (model(x) - plain).norm()
    assert smooth < 0.75 * rough  # clearly closer (about 0.55x here; q, k and v add rounding smoothing cannot remove)


def test_a_channel_silent_in_calibration_is_not_amplified():
    model = torch.nn.Sequential(torch.nn.Linear(4, 2))
    calm = torch.tensor([[1.0, 2.0, 1.5, 0.001]])  # channel 3 barely fires while calibrating
    with torch.no_grad():
        calibration = calibrate(model, ["0"], lambda: model(calm))
    scale, inverse = smoothing_scales(model, calibration, 0.75)["0"]
    assert torch.allclose(scale * inverse, torch.ones(4))
    weight = model[0].weight.detach().abs().amax(dim=0)  # [4]
    floored = calm.abs()[0].median()  # 1.0: channel 3 counts as a median channel, not as 0.001
    torch.testing.assert_close(scale[3], floored**0.75 / weight[3] ** 0.25)
    assert scale[3] > 50 * 0.001**0.75 / weight[3] ** 0.25  # unfloored it would be ~180x smaller


def test_duplicate_scalings_of_one_tensor_merge_into_one_node(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    outs = [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [2, 3]) for i in range(3)]
    scale = numpy_helper.from_array(torch.tensor([1.0, 2.0, 3.0]).numpy(), "s1")
    twin = numpy_helper.from_array(torch.tensor([1.0, 2.0, 3.0]).numpy(), "s2")  # equal values, another name
    other = numpy_helper.from_array(torch.tensor([1.0, 2.0, 4.0]).numpy(), "s3")
    nodes = [
        helper.make_node("Mul", ["x", "s1"], ["m1"]),
        helper.make_node("Mul", ["x", "s2"], ["m2"]),
        helper.make_node("Mul", ["x", "s3"], ["m3"]),
        *(helper.make_node("Relu", [f"m{i + 1}"], [f"y{i}"]) for i in range(3)),
    ]
    graph = helper.make_graph(nodes, "g", [x], outs, [scale, twin, other])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "m.onnx")
    assert merge_shared_scalings(tmp_path / "m.onnx") == 1
    merged = onnx.load(tmp_path / "m.onnx")
    onnx.checker.check_model(merged)
    assert [n.op_type for n in merged.graph.node].count("Mul") == 2
    assert {i.name for i in merged.graph.initializer} == {"s1", "s3"}
    relu_inputs = [n.input[0] for n in merged.graph.node if n.op_type == "Relu"]
    assert relu_inputs == ["m1", "m1", "m3"]
    assert merge_shared_scalings(tmp_path / "m.onnx") == 0


@pytest.mark.parametrize("alpha", [0.5, 0.9])
def test_scales_follow_smoothquant_eq_4(alpha):
    model = torch.nn.Sequential(torch.nn.Linear(3, 2))
    with torch.no_grad():
        model[0].weight.copy_(torch.tensor([[1.0, -4.0, 0.5], [2.0, 1.0, -0.25]]))
    x = torch.tensor([[2.0, -3.0, 8.0]])
    with torch.no_grad():
        calibration = calibrate(model, ["0"], lambda: model(x))
    scale, _ = smoothing_scales(model, calibration, alpha)["0"]
    activation = torch.maximum(x.abs()[0], x.abs()[0].median())  # [3, 3, 8]: floored at the median
    weight = torch.tensor([2.0, 4.0, 0.5])
    torch.testing.assert_close(scale, activation**alpha / weight ** (1 - alpha))
