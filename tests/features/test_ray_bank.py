"""`sweep --engine ray` on a local Ray instance with 2 workers: the feature bank its actors encode is the local
bank (within float rounding), so the sweep gives the same rows and the same pick; a bank the actors do not mirror
(another encoder, a dropout view) is still encoded locally."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bertlens.cli.main import main
from bertlens.encoding.encoder import Encoder
from bertlens.features.bank import build_bank, encoded_by
from tests.conftest import DATA

ray = pytest.importorskip("ray")


class _Refuse:
    """An engine that serves every encoder and must never be asked."""

    def serves(self, encoder) -> bool:
        return True

    def rows(self, *args):  # encoder, texts, rest, pooling
        raise AssertionError("a dropout view was sent to the engine")


def test_a_dropout_view_is_never_sent_to_an_engine(tiny_bert_dir, tmp_path):
    encoder = Encoder(str(tiny_bert_dir))
    with encoded_by(_Refuse()), encoder.dropout_active(seed=1):
        build_bank(encoder, ["a text", "another"], tmp_path, poolers=("mean",), variant="dropout-1")


@pytest.mark.extended  # starts a Ray cluster (about 20 s); an optional engine
def test_the_sweep_on_ray_gives_the_local_bank_rows_and_pick(tiny_bert_dir, tmp_path):
    """The bank the actors encode equals the local one within float32 rounding (batches differ), so every candidate
    scores the same, except the [CLS] rows of this random test model: its [CLS] vectors are nearly one vector (cosine
    ~1 between any two texts), so rounding reorders their Spearman ranks; every other row is within 1e-4."""
    from bertlens.features.ray_bank import RayBankEngine

    common = ["sweep", "--task", "stsb", "--data-dir", str(DATA), "--model", str(tiny_bert_dir), "--max-examples",
              "60", "--seed", "1", "--resamples", "50", "--bank-dtype", "float32", "--quiet"]  # fmt: skip
    texts = [f"text {i}: " + "some words " * (i % 7) for i in range(90)]
    encoder = Encoder(str(tiny_bert_dir), attentions="cls")
    poolers = ("cls", "mean", "max", "attention")
    try:
        remote = [*common, "--engine", "ray", "--ray-workers", "2", "--cache-dir", str(tmp_path / "rc")]
        assert main([*remote, "--out", str(tmp_path / "ray")]) == 0
        engine = RayBankEngine(encoder.ref, workers=2, chunk=16)
        with encoded_by(engine):
            on_ray = build_bank(encoder, texts, tmp_path / "b1", poolers=poolers, dtype="float32")
        engine.close()
    finally:
        ray.shutdown()
    here = build_bank(encoder, texts, tmp_path / "b2", poolers=poolers, dtype="float32")
    for pooler in poolers:
        for layer in range(here.num_layers + 1):
            np.testing.assert_allclose(on_ray.layer(pooler, layer), here.layer(pooler, layer), atol=2e-5)
    np.testing.assert_allclose(on_ray.pooled_mix("max", "mean_all"), here.pooled_mix("max", "mean_all"), atol=2e-5)

    assert main([*common, "--cache-dir", str(tmp_path / "lc"), "--out", str(tmp_path / "local")]) == 0
    ray_rows, local_rows = (json.loads((tmp_path / d / "results.json").read_text())["rows"] for d in ("ray", "local"))
    assert [r["candidate"] for r in ray_rows] == [r["candidate"] for r in local_rows]
    for mine, theirs in zip(ray_rows, local_rows, strict=True):
        if mine["value"] is not None and not mine["candidate"].startswith("cls/"):
            assert mine["value"] == pytest.approx(theirs["value"], abs=1e-4), mine["candidate"]
    picks = [json.loads((tmp_path / d / "recipe.json").read_text()) for d in ("ray", "local")]
    assert picks[0] == picks[1]


@pytest.mark.extended  # starts a Ray cluster; an optional engine
def test_recommend_on_ray_encodes_its_sweep_there_and_decides_as_here(tiny_bert_dir, tmp_path, capsys):
    from tests.cli.test_recommend import _labelled_csv

    data = _labelled_csv(tmp_path / "reviews.csv")
    argv = ["recommend", "--data", str(data), "--text-col", "review", "--label-col", "label", "--model",
            str(tiny_bert_dir), "--budget-minutes", "1", "--no-int8", "--quiet"]  # fmt: skip
    try:
        assert main([*argv, "--engine", "ray", "--out", str(tmp_path / "ray")]) == 0, capsys.readouterr().err
    finally:
        ray.shutdown()
    assert main([*argv, "--out", str(tmp_path / "local")]) == 0, capsys.readouterr().err
    decided = [json.loads((tmp_path / d / "results.json").read_text())["decisions"] for d in ("ray", "local")]
    step = next(i for i, d in enumerate(decided[1]) if d["step"] == "representation")
    assert decided[0][step]["decision"] == decided[1][step]["decision"]  # the same recipe chosen
