"""ONNX export: every pooler, mixes, whitening and normalisation reproduce bertlens fp32 through ONNX Runtime;
the int8 gate refuses (writing nothing) or, forced, records the failure; sentence-transformers round trips."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bertlens.embedding.embedder import Embedder
from bertlens.embedding.onnx_backend import OnnxEmbedder
from bertlens.errors import BertlensError
from bertlens.experiments.export import Gate, Int8Options, run_export_onnx
from bertlens.representation.postprocess import PostProcessor, parse_steps
from bertlens.representation.recipe import Recipe

TEXTS = [
    "a",
    "a short one",
    "a considerably longer sentence, with punctuation, numbers like 42 and some rarer words: zygote, quasar",
    "the cat sat on the mat",
    "[UNK] tokens and odd spacing   here",
    "café naïve résumé",
] * 3


@pytest.fixture(scope="module")
def whitening(tiny_bert_dir, tmp_path_factory):
    corpus = [f"text {i} about {w}" for i, w in enumerate(["cats", "dogs", "rain", "tea", "code"] * 20)]
    vectors = Embedder(model=str(tiny_bert_dir)).encode(corpus)
    path = tmp_path_factory.mktemp("pp") / "whiten.safetensors"
    return PostProcessor.fit(parse_steps("whiten:16,normalize"), vectors).save(path)


@pytest.mark.parametrize(
    "changes",
    [  # mean and attention (the graph's own attention weights) by default; the other readings in the extended checks
        pytest.param({"pooler": "cls"}, marks=pytest.mark.extended),
        {"pooler": "mean"},
        pytest.param({"pooler": "max", "include_special": False}, marks=pytest.mark.extended),
        {"pooler": "attention"},
        pytest.param(
            {"layers": (0, 1, 2), "mixer": "scalar_mix", "mix_weights": (0.3, -0.2, 0.9), "mix_gamma": 1.4},
            marks=pytest.mark.extended,
        ),
        pytest.param({"layers": (-2, -1), "mixer": "concat", "normalize": True}, marks=pytest.mark.extended),
        pytest.param({"postprocess": "WHITEN"}, marks=pytest.mark.extended),
    ],
    ids=["cls", "mean", "max-no-special", "attention", "scalar_mix", "concat-normalized", "whitened"],
)
def test_onnx_graph_reproduces_bertlens(tiny_bert_dir, tmp_path, whitening, changes):
    if changes.get("postprocess") == "WHITEN":
        changes = {**changes, "postprocess": str(whitening)}
    recipe = Recipe(model=str(tiny_bert_dir), **changes)
    outcome = run_export_onnx(recipe, tmp_path / "onnx", TEXTS[:6], "test texts")
    got = OnnxEmbedder(tmp_path / "onnx").encode(TEXTS)  # other batches, other padding than the parity check
    expected = Embedder(recipe).encode(TEXTS)
    np.testing.assert_allclose(got, expected, atol=2e-5)
    assert outcome.parity.min_cosine > 0.99999
    record = json.loads((tmp_path / "onnx" / "export.json").read_text())
    assert record["dim"] == expected.shape[1] and record["parity"]["texts"] == 6


def test_the_int8_gate_refuses_and_writes_nothing_then_force_records_it(tiny_bert_dir, tmp_path):
    recipe = Recipe(model=str(tiny_bert_dir))
    impossible = Gate(mean_cosine=1.0, min_cosine=1.0)
    with pytest.raises(BertlensError, match="fails the fidelity gate.*nothing was written"):
        run_export_onnx(recipe, tmp_path / "q", TEXTS, "t", int8=Int8Options(gate=impossible))
    assert list(tmp_path.iterdir()) == []  # no directory, no staging left behind
    forced = run_export_onnx(recipe, tmp_path / "q", TEXTS, "t", int8=Int8Options(gate=impossible, force=True))
    record = json.loads((tmp_path / "q" / "export.json").read_text())
    assert not forced.passed and record["int8"]["forced"] and not record["int8"]["passed"]
    assert len(record["int8"]["sensitivity_mean_cosine_alone"]) == 12  # 2 layers x (q, k, v, out, ffn in, ffn out)
    judged = record["int8"]["texts"]
    assert record["int8"]["below_floor"] == judged  # the impossible gate's minimum 1.0: every judging text under it
    assert f"{judged} of the {judged} judging texts fell under" in record["int8"]["vouches_for"]
    vectors = OnnxEmbedder(tmp_path / "q").encode(TEXTS)
    assert np.isfinite(vectors).all() and vectors.shape == (len(TEXTS), 32)


def test_int8_that_passes_keeps_the_most_sensitive_modules_in_fp32_first(tiny_bert_dir, tmp_path):
    recipe = Recipe(model=str(tiny_bert_dir))
    outcome = run_export_onnx(recipe, tmp_path / "q", TEXTS, "t", int8=Int8Options(gate=Gate(0.9999, 0.999)))
    record = json.loads((tmp_path / "q" / "export.json").read_text())["int8"]
    ranked = sorted(record["sensitivity_mean_cosine_alone"], key=record["sensitivity_mean_cosine_alone"].get)
    assert list(outcome.kept_fp32) == ranked[: len(outcome.kept_fp32)]
    assert outcome.quantized_modules + len(outcome.kept_fp32) == 12
    if outcome.passed:
        assert outcome.int8.mean_cosine >= 0.9999 and outcome.int8.min_cosine >= 0.999


def test_the_choice_runs_on_a_token_budget_of_the_choosing_texts(tiny_bert_dir, tmp_path, monkeypatch):
    """Documents: the choice's passes run on the choosing texts up to CALIBRATION_TOKENS (at least
    MIN_CALIBRATION_TEXTS), not all of them; the judging half is judged whole."""
    import bertlens.experiments.export as export_module

    monkeypatch.setattr(export_module, "CALIBRATION_TOKENS", 20)
    monkeypatch.setattr(export_module, "MIN_CALIBRATION_TEXTS", 2)
    calibration = [f"{text} {i}" for i, text in enumerate(TEXTS * 2)]
    run_export_onnx(Recipe(model=str(tiny_bert_dir)), tmp_path / "q", TEXTS, "t",
                    int8=Int8Options(calibration=calibration, gate=Gate(0.5, 0.5)))  # fmt: skip
    record = json.loads((tmp_path / "q" / "export.json").read_text())["int8"]
    half = len(calibration) // 2
    chose = int(record["judged_on"].split("the other ")[1].split()[0])
    assert 2 <= chose < half and record["texts"] == len(calibration) - half


def test_a_damaged_export_is_refused(tiny_bert_dir, tmp_path):
    run_export_onnx(Recipe(model=str(tiny_bert_dir)), tmp_path / "e", TEXTS[:4], "t")
    with open(tmp_path / "e" / "model.onnx", "ab") as handle:
        handle.write(b"\x00")
    with pytest.raises(BertlensError, match="does not match the checksum"):
        OnnxEmbedder(tmp_path / "e")


@pytest.mark.extended  # the dynamic int8 tests above cover the gate by default
def test_static_int8_calibrates_activation_ranges_and_keeps_the_gate(tiny_bert_dir, tmp_path):
    import onnx

    recipe = Recipe(model=str(tiny_bert_dir))
    outcome = run_export_onnx(recipe, tmp_path / "s", TEXTS, "t", int8=Int8Options(static=True, gate=Gate(0.0, 0.0)))
    record = json.loads((tmp_path / "s" / "export.json").read_text())
    assert record["precision"].startswith("int8 (static QDQ") and outcome.passed and outcome.quantized_modules == 12
    ops = {node.op_type for node in onnx.load(str(tmp_path / "s" / "model.onnx")).graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops  # activations quantized with calibrated ranges
    vectors = OnnxEmbedder(tmp_path / "s").encode(TEXTS)
    expected = Embedder(recipe).encode(TEXTS)
    cos = (vectors * expected).sum(1) / np.linalg.norm(vectors, axis=1) / np.linalg.norm(expected, axis=1)
    assert cos.min() > 0.9  # close to fp32, though not equal
