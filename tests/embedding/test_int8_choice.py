"""Choosing what stays fp32: ranked alone, bisected with a margin in PyTorch, decided by the real graph."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bertlens.embedding import int8_choice
from bertlens.embedding.fake_quant import fake_quantized
from bertlens.embedding.gate import Gate
from bertlens.embedding.int8_choice import choose_kept, passes_with_margin


def test_the_margin_tightens_mean_and_minimum():
    gate = Gate(0.99, 0.98)
    at_minimum = np.full(100, 0.999)
    at_minimum[0] = 0.98  # passes the gate, but its minimum has no margin
    assert gate.passes(at_minimum.mean(), at_minimum.min()) and not passes_with_margin(gate, at_minimum)
    at_minimum[0] = 0.9851  # 0.98 + a quarter of the allowed 0.02, and a little more
    assert passes_with_margin(gate, at_minimum)
    at_mean = np.full(100, 0.9901)
    at_mean[::2] = 0.9999  # mean 0.995, standard error 0.0005
    assert passes_with_margin(Gate(0.9935, 0.98), at_mean) and not passes_with_margin(Gate(0.994, 0.98), at_mean)
    noisy = np.concatenate([np.full(50, 0.9905), np.full(50, 0.9995)])  # mean 0.995, but few texts and wide spread
    assert passes_with_margin(gate, np.tile(noisy, 40)) and not passes_with_margin(Gate(0.9945, 0.98), noisy[::5])


def _toy(width: int = 16, depth: int = 6, seed: int = 0):
    """A residual stack of Linear layers with one outlier-heavy layer (its input has a huge channel)."""
    torch.manual_seed(seed)
    layers = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(depth))

    class Toy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = layers

        def forward(self, x):
            for i, layer in enumerate(self.layers):
                h = x * torch.tensor([40.0] + [1.0] * (width - 1)) if i == 2 else x
                x = x + 0.3 * torch.tanh(layer(h))
            return x

    inputs = torch.randn(64, width)
    model = Toy().eval()

    def runner(texts):
        rows = [int(t) for t in texts]

        def run():
            with torch.no_grad():
                return model(inputs[rows]).numpy()

        return run

    groups = {f"layers.{i}": (f"node{i}",) for i in range(depth)}
    return model, runner, groups, [str(i) for i in range(64)]


def test_the_choice_is_the_fewest_modules_in_rank_order_that_pass_and_the_real_graph_confirms_it():
    model, runner, groups, texts = _toy()
    seen = []

    def onnx_vectors(exclude):  # a faithful "ONNX Runtime": the emulation itself
        seen.append(exclude)
        keep = {f"layers.{n[4:]}" for n in exclude}
        with fake_quantized(model, [m for m in groups if m not in keep]):
            return runner(texts)()

    gate = Gate(0.9999, 0.999)
    choice = choose_kept(model, groups, runner, texts, gate, onnx_vectors)
    ranked = [s.module for s in choice.ranked]
    assert ranked[0] == "layers.2"  # the outlier layer is the most sensitive alone
    assert [s.mean_cosine for s in choice.ranked] == sorted(s.mean_cosine for s in choice.ranked)
    assert 0 < choice.kept < len(groups) and choice.trials[-1].where == "onnx" and choice.trials[-1].passed
    assert len(seen) == 1 and seen[0] == choice.excluded_nodes  # one real graph when the emulation is right
    fewer = [t for t in choice.trials if t.kept == choice.kept - 1]
    assert fewer and not fewer[0].passed  # one module fewer fails: the fewest that pass
    assert sum(t.where == "pytorch" for t in choice.trials) <= 1 + int(
        np.ceil(np.log2(len(groups)))
    )  # all, then bisection


def test_where_onnx_runtime_disagrees_more_modules_stay_fp32():
    model, runner, groups, texts = _toy()
    reference = runner(texts)()

    def worse_onnx(exclude):  # a CPU whose int8 kernels lose more: only passes with 4 modules kept
        noise = 0.0 if len(exclude) >= 4 else 0.2
        return reference + noise * np.random.default_rng(len(exclude)).standard_normal(reference.shape)

    choice = choose_kept(model, groups, runner, texts, Gate(0.999, 0.99), worse_onnx)
    onnx_trials = [t for t in choice.trials if t.where == "onnx"]
    assert choice.kept == 4 and not onnx_trials[0].passed  # the fewest the real graph passes with, not all six
    assert [t.kept for t in onnx_trials if t.passed][-1] == 4 and all(not t.passed for t in onnx_trials if t.kept < 4)


def test_a_gate_nothing_meets_keeps_everything_fp32_without_a_real_graph():
    model, runner, groups, texts = _toy()

    def never(exclude):
        raise AssertionError("no graph to confirm when every module stays fp32")

    choice = choose_kept(model, groups, runner, texts, Gate(1.0, 1.0), never)
    assert choice.quantized == 0 and choice.kept == len(groups)


def test_ranking_uses_only_a_few_texts(monkeypatch):
    model, runner, groups, texts = _toy()
    sizes = []

    def counting(subset):
        sizes.append(len(subset))
        return runner(subset)

    monkeypatch.setattr(int8_choice, "SENSITIVITY_TEXTS", 8)
    choice = choose_kept(model, groups, counting, texts, Gate(0.9999, 0.999), lambda exclude: runner(texts)())
    assert sizes == [64, 8] and choice.ranked[0].mean_cosine is not None  # the search's texts, then the ranking's
    assert choice.ranking_texts == 8
    sizes.clear()
    few = choose_kept(model, groups, counting, texts, Gate(0.9999, 0.999), lambda e: runner(texts)(), ranking=2)
    assert sizes == [64, 2] and few.ranking_texts == 2  # documents: as many texts as reach the ranking's tokens
    sizes.clear()
    easy = choose_kept(model, groups, counting, texts, Gate(0.5, 0.5), lambda exclude: runner(texts)())
    assert sizes == [64] and easy.kept == 0 and easy.ranking_texts == 0  # every module int8 passes: nothing ranked
    assert [t.kept for t in easy.trials] == [0, 0] and [t.where for t in easy.trials] == ["pytorch", "onnx"]
    with pytest.raises(KeyError):
        choose_kept(model, {"missing": ("n",)}, runner, texts, Gate(0.5, 0.5), lambda e: None)


def test_smoothing_is_chosen_on_texts_its_scales_were_not_measured_on():
    from bertlens.embedding.int8_choice import choose_smoothing
    from bertlens.embedding.smoothing import ALPHAS
    from tests.embedding.test_smoothing import Attention

    model = Attention().eval()
    inputs = torch.randn(64, 8)
    seen = []

    def run(rows):
        def call():
            seen.append(rows)
            with torch.no_grad():
                return model(inputs[rows]).numpy()

        return call

    fit, check = run(slice(0, 32)), run(slice(32, 64))
    choice = choose_smoothing(model, ["q", "k", "v", "out"], fit, check)
    assert set(choice.tried) == set(ALPHAS) and choice.tried[choice.alpha] == max(choice.tried.values())
    assert choice.alpha > 0 and choice.tried[choice.alpha] > choice.tried[0.0]  # the outlier channel: smoothing helps
    assert seen.count(slice(0, 32)) == 1  # the scales' texts are read once, for the maxima; every score is on the rest
    assert isinstance(model.q, torch.nn.Linear)  # nothing left smoothed
