"""int8 of the OpenVINO IR (embedding/openvino_int8.py): products kept in floating point compute exactly what the fp32
IR computes, the search keeps the fewest the gate needs (bisection over the emulated ranking, decided by OpenVINO),
and an export's parity check stops at its token budget."""

from __future__ import annotations

import numpy as np
import pytest

from bertlens.embedding.gate import Gate
from bertlens.encoding.tokens import token_prefix
from bertlens.metrics.geometry import row_cosine
from bertlens.progress import silent

TEXTS = [f"text number {i}, " + "with some more words " * (i % 7) for i in range(48)]


def test_token_prefix_counts_texts_until_the_budget():
    assert token_prefix([10, 10, 10, 10], 25) == 3  # 10 + 10 < 25 <= 30
    assert token_prefix([10, 10, 10, 10], 20) == 2
    assert token_prefix([10, 10, 10, 10], 1000) == 4  # at most all
    assert token_prefix([500, 10], 100) == 1
    assert token_prefix([500, 10], 100, minimum=2) == 2


@pytest.fixture(scope="module")
def ir(default_model_dir, tmp_path_factory):
    """The default model's recipe graph as OpenVINO IR (fp32), its module groups, PyTorch graph and calibrated int8
    (a random tiny model's int8 is within 1e-5 of its fp32: nothing to choose)."""
    pytest.importorskip("nncf")
    import openvino as ov

    from bertlens.api.export import export
    from bertlens.embedding.export_record import calibration_feeds
    from bertlens.embedding.int8_choice import emulable_groups
    from bertlens.embedding.onnx_graph import recipe_graph
    from bertlens.embedding.openvino_int8 import _calibrated, restorable
    from bertlens.embedding.quantize import linear_modules
    from bertlens.encoding.encoder import Encoder
    from bertlens.representation.recipe import Recipe

    root = tmp_path_factory.mktemp("ov-int8")
    model_dir = default_model_dir
    texts = root / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n")
    export(model=str(model_dir), pooler="mean", texts=texts, format="openvino", out=root / "ov", quiet=True)
    fp32 = ov.Core().read_model(str(root / "ov" / "openvino_model.xml"))
    encoder = Encoder(str(model_dir))
    graph = recipe_graph(encoder, Recipe(model=str(model_dir), pooler="mean"))
    groups = restorable(fp32, emulable_groups(graph, linear_modules(root / "ov" / "model.onnx")))
    feeds = calibration_feeds(encoder.tokenizer, TEXTS, encoder.max_length, 8)
    return {"fp32": fp32, "groups": groups, "graph": graph, "encoder": encoder, "feeds": feeds,
            "quantized": _calibrated(fp32, feeds)}  # fmt: skip


def _run(model, feeds) -> np.ndarray:
    import openvino as ov

    request = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"}).create_infer_request()
    return np.concatenate([np.array(request.infer(feed)[0], copy=True) for feed in feeds])


def test_every_linear_module_of_the_graph_can_be_kept(ir):
    assert len(ir["groups"]) == 6 * 6  # 6 layers: q, k, v, attention output, intermediate, output


def test_kept_products_compute_as_the_fp32_graph(ir):
    from bertlens.embedding.openvino_int8 import keep_float

    fp32, quantized, groups, feeds = ir["fp32"], ir["quantized"], ir["groups"], ir["feeds"]
    reference = _run(fp32, feeds)
    int8 = row_cosine(_run(quantized, feeds), reference)
    every = [n for nodes in groups.values() for n in nodes]
    kept_all = row_cosine(_run(keep_float(quantized, fp32, every), feeds), reference)
    assert int8.mean() < 0.999  # int8 moved the vectors ...
    # ... keeping every linear product brings them back but for the attention's own products (int8 in NNCF's graph)
    assert kept_all.mean() > int8.mean() and 1 - kept_all.mean() < (1 - int8.mean()) / 2
    np.testing.assert_array_equal(_run(keep_float(quantized, fp32, []), feeds), _run(quantized, feeds))
    assert _run(quantized, feeds).shape == reference.shape  # the calibrated model itself is left as it was


def test_a_gate_all_int8_passes_ranks_nothing(ir):
    from bertlens.embedding.openvino_int8 import choose_int8

    e = ir["encoder"]
    _, choice = choose_int8(
        ir["fp32"], ir["groups"], ir["graph"], e.tokenizer, e.max_length, TEXTS, Gate(-1, -1), silent
    )
    assert choice.kept == 0 and choice.ranking_texts == 0 and len(choice.trials) == 1 and choice.passed
    assert choice.quantized == len(ir["groups"]) and set(choice.seconds) == {"reference", "calibration", "search"}
    assert choice.estimated_seconds > 0  # said up front, from the reference pass


def test_the_search_keeps_the_fewest_modules_the_gate_needs(ir):
    from bertlens.embedding.openvino_int8 import choose_int8

    e, fp32 = ir["encoder"], ir["fp32"]
    args = (ir["graph"], e.tokenizer, e.max_length, TEXTS)
    _, free = choose_int8(fp32, ir["groups"], *args, Gate(-1, -1), silent)
    all_int8 = free.trials[0].mean_cosine
    gate = Gate(1 - (1 - all_int8) / 4, -1)  # all int8 fails it by far; every module kept passes (above)
    model, choice = choose_int8(fp32, ir["groups"], *args, gate, silent)
    assert choice.passed and 0 < choice.kept < len(ir["groups"]) and choice.ranking_texts >= 1
    assert not choice.trials[0].passed and choice.trials[0].kept == 0
    by_kept = {t.kept: t.passed for t in choice.trials}
    assert by_kept[choice.kept] and all(not passed for kept, passed in by_kept.items() if kept < choice.kept)
    assert choice.kept - 1 in by_kept  # the one fewer was tried and failed: the fewest
    ranked = [s.mean_cosine for s in choice.ranked]
    assert ranked == sorted(ranked)  # most sensitive (lowest cosine alone) first
    # the model returned is the graph the search passed (the checks ran on these texts, in these batches)
    returned = row_cosine(_run(model, ir["feeds"]), _run(fp32, ir["feeds"]))
    passing = next(t for t in choice.trials if t.kept == choice.kept)
    assert abs(returned.mean() - passing.mean_cosine) < 1e-6 and abs(returned.min() - passing.min_cosine) < 1e-6


def test_the_graph_formats_check_parity_on_a_token_budget(tiny_bert_dir, tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    from bertlens.api import export as api_export
    from bertlens.api.export import drawn, export

    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n")
    monkeypatch.setattr(api_export, "PARITY_TOKENS", 100)
    run = export(model=str(tiny_bert_dir), pooler="mean", texts=texts, format="onnx", out=tmp_path / "a", quiet=True)
    in_order = drawn(list(dict.fromkeys(TEXTS)), len(TEXTS))  # the parity texts are drawn at random, then cut
    lengths = [len(ids) for ids in run_tokenizer(tiny_bert_dir)(in_order)["input_ids"]]
    assert run.texts == token_prefix(lengths, 100, 2) < len(TEXTS)
    given = export(model=str(tiny_bert_dir), pooler="mean", texts=texts, format="onnx", samples=40, out=tmp_path / "b",
                   quiet=True)  # fmt: skip
    assert given.texts == 40  # --samples given: exactly that many


def run_tokenizer(model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(model_dir))
