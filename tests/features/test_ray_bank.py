"""`sweep --engine ray` on a local Ray instance with 2 workers: the feature bank its actors encode is the local
bank (within float rounding), so the sweep gives the same rows and the same pick; a bank the actors do not mirror
(another encoder, a dropout view) is still encoded locally."""

from __future__ import annotations

import json
import os
import signal

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
    """The actors encode the local pass's own batches, so the bank is the local one (to float32's last bit) and every
    candidate scores the same within 1e-4, except the [CLS] rows of this random test model: its [CLS] vectors are
    nearly one vector (cosine ~1 between any two texts), so a last-bit change reorders their Spearman ranks. With a
    real model every row agrees (tests/probing/test_ray_jobs.py: the issue's acceptance sweep)."""
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
        engine.release()
    finally:
        ray.shutdown()
    here = build_bank(encoder, texts, tmp_path / "b2", poolers=poolers, dtype="float32")
    _same_banks(on_ray, here)

    assert main([*common, "--cache-dir", str(tmp_path / "lc"), "--out", str(tmp_path / "local")]) == 0
    ray_rows, local_rows = (json.loads((tmp_path / d / "results.json").read_text())["rows"] for d in ("ray", "local"))
    assert [r["candidate"] for r in ray_rows] == [r["candidate"] for r in local_rows]
    for mine, theirs in zip(ray_rows, local_rows, strict=True):
        if not mine["candidate"].startswith("cls/"):
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


def _texts(count: int, words: int = 7) -> list[str]:
    return [f"text {i}: " + "some other words " * (i % words) for i in range(count)]


def _same_banks(first, second) -> None:
    """Every layer x pooler and every mix of the non-linear pooler, within float32's last bit (the batches are the
    same; a reduction over tokens on one thread of an actor may round once differently from one on every core)."""
    for pooler in first.poolers:
        for layer in range(first.num_layers + 1):
            np.testing.assert_allclose(first.layer(pooler, layer), second.layer(pooler, layer), rtol=1e-6, atol=1e-7)
    for mix in first.mix_names:
        np.testing.assert_allclose(first.pooled_mix("max", mix), second.pooled_mix("max", mix), rtol=1e-6, atol=1e-7)


@pytest.mark.extended  # a two-node Ray cluster (tests/conftest.py: ray_cluster); an optional engine
def test_a_bank_on_two_nodes_survives_a_worker_killed_mid_bank(ray_cluster, tiny_bert_dir, tmp_path):
    """The driver joins the cluster by address and the actors sit on both nodes. One actor's process is killed
    (SIGKILL) once the first chunk is stored: Ray starts it again and its chunk is run again. Every row is written
    once, none is lost, and the bank is the local one."""
    from bertlens.features.ray_bank import RayBankEngine

    texts, encoder = _texts(160), Encoder(str(tiny_bert_dir))
    engine = RayBankEngine(encoder.ref, address=ray_cluster, workers=2, chunk=8)
    places = ray.get([actor.where.remote() for actor in engine.actors])  # [(node, pid)] per actor
    assert len({node for node, _ in places}) == 2
    written, killed, rows_of = [], [], engine.rows

    def rows(*args):
        for part in rows_of(*args):
            written.extend(part[0].tolist())
            yield part

    def progress(stage, done, total):
        if not killed:
            os.kill(places[1][1], signal.SIGKILL)
            killed.append(done)

    engine.rows = rows
    with encoded_by(engine):
        on_ray = build_bank(
            encoder, texts, tmp_path / "b1", poolers=("mean", "max"), dtype="float32", progress=progress
        )
    after = ray.get([actor.where.remote() for actor in engine.actors])
    engine.release()
    assert killed and after[1][1] != places[1][1]  # the killed actor was started again, in a new process
    assert sorted(written) == list(range(len(texts)))  # every row once
    _same_banks(on_ray, build_bank(encoder, texts, tmp_path / "b2", poolers=("mean", "max"), dtype="float32"))


@pytest.mark.extended  # a two-node Ray cluster; an optional engine
def test_long_texts_cut_into_pieces_on_ray_give_the_local_bank(ray_cluster, tiny_bert_dir, tmp_path):
    """Texts past the model's limit are cut into windows by the actors, a group of PIECE_GROUP texts each (two groups
    here), pooled and aggregated per text as the local build does."""
    from bertlens.encoding.chunking import parse_long_text
    from bertlens.features.ray_bank import RayBankEngine

    texts, encoder = _texts(300, words=11), Encoder(str(tiny_bert_dir), max_length=16)
    options = {"poolers": ("mean", "max"), "dtype": "float32", "long_text": parse_long_text("windows:8:max")}
    engine = RayBankEngine(encoder.ref, address=ray_cluster, workers=2)
    with encoded_by(engine):
        on_ray = build_bank(encoder, texts, tmp_path / "b1", **options)
    engine.release()
    _same_banks(on_ray, build_bank(encoder, texts, tmp_path / "b2", **options))


def test_a_ray_address_where_nothing_answers_is_one_line_at_once(tiny_bert_dir, tmp_path, capsys):
    """Not minutes of Ray's own connection retries and warnings: the flag, the address, and what to do."""
    argv = ["sweep", "--task", "stsb", "--data-dir", str(DATA), "--model", str(tiny_bert_dir), "--max-examples", "20",
            "--engine", "ray", "--ray-address", "127.0.0.1:1", "--out", str(tmp_path / "out")]  # fmt: skip
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--ray-address 127.0.0.1:1: no Ray cluster answers at that address" in err[0]
    assert "leave out --ray-address" in err[0]
    assert not (tmp_path / "out").exists()
