"""The sweep end to end on small slices: structure, determinism, recipes that reproduce vectors."""

import json

import numpy as np
import pytest

from bertlens.embedding.embedder import Embedder
from bertlens.encoding.encoder import Encoder
from bertlens.experiments.sweep import SweepConfig, run_sweep
from bertlens.probing.candidates import candidate_features
from bertlens.probing.logistic import product_precision
from bertlens.representation.recipe import Recipe
from bertlens.tasks.catalog import get_task
from bertlens.tasks.loaders import load_catalog_task
from tests.conftest import DATA

CONFIG = SweepConfig(resamples=200, bank_dtype="float32")


@pytest.fixture(scope="module")
def tiny_encoder(tiny_bert_dir):
    return Encoder(str(tiny_bert_dir), attentions="cls")


@pytest.fixture(scope="module")
def sst2_result(tiny_encoder, tmp_path_factory):
    task = load_catalog_task(get_task("sst2"), DATA, max_examples=150)
    return run_sweep(task, tiny_encoder, Recipe(model=tiny_encoder.ref.name), tmp_path_factory.mktemp("c"), CONFIG)


def test_classification_sweep_scores_every_candidate(sst2_result):
    probe = sst2_result.protocols["probe"]
    assert set(sst2_result.protocols) == {"probe"} and probe.n_test == 150
    # 2-layer model: 3 singles and 3 named mixes (no mean_last4) per pooler, concat, ScalarMix for linear poolers
    assert len(probe.candidates) == 4 * 3 + 4 * 3 + 4 + 3
    t = probe.test
    assert np.isfinite(t.value).all() and (t.low <= t.value + 1e-12).all() and (t.value <= t.high + 1e-12).all()
    assert t.tied_with_best[t.best]
    assert set(probe.mix_weights) == {"cls/scalar_mix", "mean/scalar_mix", "attention/scalar_mix"}


def test_same_seed_same_numbers(sst2_result, tiny_encoder, tmp_path):
    task = load_catalog_task(get_task("sst2"), DATA, max_examples=150)
    again = run_sweep(task, tiny_encoder, Recipe(model=tiny_encoder.ref.name), tmp_path, CONFIG)
    a, b = sst2_result.protocols["probe"], again.protocols["probe"]
    assert np.array_equal(a.test.value, b.test.value) and np.array_equal(a.test.low, b.test.low)
    assert again.recipe == sst2_result.recipe


def test_similarity_sweep_has_both_protocols_and_recipe_reproduces_vectors(tiny_encoder, tmp_path):
    task = load_catalog_task(get_task("stsb"), DATA, max_examples=120)
    result = run_sweep(task, tiny_encoder, Recipe(model=tiny_encoder.ref.name), tmp_path, CONFIG)
    assert set(result.protocols) == {"cosine", "probe"}
    assert [w for w, _ in result.recipe.dimension_loss] == [16]  # measured below the full width (32), for serving
    cosine = result.protocols["cosine"]
    assert "mean/scalar_mix" in cosine.mix_weights
    # the recommended recipe, and the learned ScalarMix recipe, embed exactly as the sweep scored them
    from bertlens.features.bank import build_bank

    texts = task.all_texts()
    bank = build_bank(tiny_encoder, texts, tmp_path, dtype="float32")
    for name in (result.recommended.name, "mean/scalar_mix"):
        candidate = next(c for c in cosine.candidates if c.name == name)
        weights = cosine.mix_weights.get(name)
        recipe = candidate.recipe(Recipe(model=tiny_encoder.ref.name), weights)
        direct = Embedder(recipe).encode(texts[:40])
        assert np.abs(candidate_features(bank, candidate, np.arange(40), weights) - direct).max() <= 1e-4


def test_cross_validated_task_scores_every_example(tiny_encoder, tmp_path):
    task = load_catalog_task(get_task("subj"), DATA, max_examples=200)
    result = run_sweep(
        task,
        tiny_encoder,
        Recipe(model=tiny_encoder.ref.name),
        tmp_path,
        SweepConfig(resamples=100, poolers=("mean", "cls")),
    )
    assert result.protocols["probe"].n_test == 200
    assert "inner" in result.basis
    assert f"the logistic probes' {product_precision('cpu')}" in result.basis  # what this machine computed them in


def _noise_file(tmp_path, kind: str, rows: int = 240):
    """Texts with labels or scores that are pure noise: nothing learned may look better than chance out of fold."""
    rng = np.random.default_rng(7)
    words = "film plot actor scene music story camera light sound city river night".split()
    texts = [" ".join(rng.choice(words, 6)) for _ in range(rows * 2)]
    path = tmp_path / f"noise-{kind}.csv"
    if kind == "similarity":
        body = "".join(f"{texts[2 * i]},{texts[2 * i + 1]},{rng.uniform(0, 5):.3f}\n" for i in range(rows))
        path.write_text("a,b,score\n" + body)
    else:
        path.write_text("text,label\n" + "".join(f"{texts[i]},{rng.integers(0, 2)}\n" for i in range(rows)))
    return path


@pytest.mark.parametrize("kind", ["similarity", "classification"])
def test_cross_validated_scores_on_noise_stay_at_chance(tmp_path, tiny_bert_dir, kind):
    """Everything learned (mix weights, whitening, ridge, C, the choice itself) is fitted inside each fold, so on
    labels that are noise no candidate - and not the recommendation - scores above chance beyond its interval."""
    from bertlens.cli.main import main

    path = _noise_file(tmp_path, kind)
    cols = (
        ["--text-col", "a", "--text-col2", "b", "--label-col", "score"]
        if kind == "similarity"
        else ["--text-col", "text", "--label-col", "label"]
    )
    extra = ["--postprocess-steps", "whiten", "--protocols", "cosine,probe"] if kind == "similarity" else []
    out = tmp_path / "out"
    assert (
        main(
            [
                "sweep",
                "--data",
                str(path),
                *cols,
                "--model",
                str(tiny_bert_dir),
                "--folds",
                "5",
                "--poolers",
                "cls,mean",
                "--resamples",
                "200",
                "--out",
                str(out),
                "--cache-dir",
                str(tmp_path / "c"),
                "--quiet",
                *extra,
            ]
        )
        == 0
    )
    data = json.loads((out / "results.json").read_text())
    chance = 0.0 if kind == "similarity" else 0.5
    learned = [
        r
        for r in data["rows"]
        if r["value"] is not None
        and ("scalar_mix" in r["candidate"] or "whiten" in r["candidate"] or r["protocol"] == "probe")
    ]
    assert learned and all(r["split"] == "cv5" for r in data["rows"])
    for row in learned:
        assert row["ci_low"] <= chance + 0.02, row  # an in-sample fit would sit well above chance
    for protocol in data["protocols"].values():
        choice = protocol["choice_cross_validated"]
        assert choice["ci_low"] <= chance <= choice["ci_high"] + 0.02, choice


def test_under_cross_validation_every_fit_sees_only_its_folds_training_pairs(tmp_path, tiny_bert_dir, monkeypatch):
    """The leak this guards against: a ScalarMix or a whitening fitted once (on fold 0's training pairs, with
    their gold scores) and then used to score every fold, most of whose rows it was fitted on."""
    from bertlens.experiments.sweep import cosine as sweep_module
    from bertlens.representation.postprocess import PostProcessor
    from bertlens.tasks.loaders import UserTable, load_user_task
    from bertlens.tasks.splits import make_folds

    task = load_user_task(
        _noise_file(tmp_path, "similarity", rows=90), UserTable("similarity", ("a", "b"), "score"), folds=3
    )
    mix_fits, post_fits = [], []
    real_mix, real_fit = sweep_module.fit_similarity_mix, PostProcessor.fit

    def spy_mix(u, v, scores, **kw):
        mix_fits.append(np.sort(scores))
        return real_mix(u, v, scores, **kw)

    def spy_fit(steps, vectors):
        post_fits.append(len(vectors))
        return real_fit(steps, vectors)

    monkeypatch.setattr(sweep_module, "fit_similarity_mix", spy_mix)
    monkeypatch.setattr(PostProcessor, "fit", staticmethod(spy_fit))
    run_sweep(
        task,
        Encoder(str(tiny_bert_dir)),
        Recipe(model=str(tiny_bert_dir)),
        tmp_path / "c",
        SweepConfig(poolers=("mean",), resamples=20, postprocess="whiten"),
    )
    targets = task.splits["all"].targets
    folds = make_folds({"all": np.arange(len(targets))}, targets, stratify=False, cv_folds=3, seed=0)
    expected = [np.sort(targets[f.train]) for f in folds]
    key = lambda scores: tuple(np.round(scores, 6))  # noqa: E731 - the fits run on threads: compare as a multiset
    assert len(mix_fits) == 3 and sorted(map(key, mix_fits)) == sorted(map(key, expected))
    whitened = [
        c for c in range(1)
    ]  # one pooler: every whitened candidate fits once per fold, then once for the recipe
    assert whitened and len(post_fits) % 4 == 0 and len(post_fits) >= 4


def test_every_probe_row_names_its_probe_and_only_a_logistic_one_is_recommended(sst2_result, tmp_path):
    from bertlens.reports.sweep import result_rows

    probe = sst2_result.protocols["probe"]
    assert len(probe.scored_by) == len(probe.candidates)
    assert set(probe.scored_by) <= {"logistic", "ridge screen"} and "logistic" in probe.scored_by
    names = [c.name for c in probe.candidates]
    assert probe.scored_by[names.index(sst2_result.recommended.name)] == "logistic"
    rows = result_rows(sst2_result)
    assert [r["scored_by"] for r in rows] == list(probe.scored_by)
    assert {"screen_seconds", "logistic_seconds"} <= set(sst2_result.timings)


def test_the_report_says_where_the_time_went_stage_by_stage(sst2_result):
    """The probe's recorded parts (mixes, screen, logistic, bootstrap) sit inside its whole, in the report's table and
    results.json's stages alike."""
    from bertlens.reports.sweep import time_lines, to_json

    timings = sst2_result.timings
    parts = ("mixes_seconds", "screen_seconds", "logistic_seconds", "probe_bootstrap_seconds")
    assert all(timings[k] > 0 for k in parts)
    assert sum(timings[k] for k in parts) <= timings["probe_seconds"]
    stages = {s["stage"]: s for s in to_json(sst2_result)["stages"]}
    assert {"bank", "probe", "probe: ridge screen", "probe: logistic probes", "probe: bootstrap"} <= set(stages)
    after = stages["after the bank"]
    protocols = sum(timings[f"{p}_seconds"] for p in sst2_result.protocols)
    assert after["seconds"] == pytest.approx(protocols, abs=1e-2)
    assert after["x_bank"] == pytest.approx(protocols / timings["bank_seconds"], rel=1e-2)
    text = "\n".join(time_lines(sst2_result))
    assert "## Where the time went" in text and "| probe: logistic probes |" in text


def test_a_whitening_a_small_corpus_cannot_take_is_said_not_silently_empty(tmp_path, tiny_bert_dir):
    """40 documents, 32 dimensions, mean pooling: whitening of some layers is rank-deficient."""
    from bertlens.tasks.loaders import retrieval_task
    from bertlens.tasks.retrieval import load_beir
    from tests.tasks.test_retrieval import write_beir

    docs = [(f"d{i}", "", f"doc {i % 3}") for i in range(12)]  # 3 distinct texts: whitening cannot be fitted
    queries = [(f"q{i}", f"query {i}") for i in range(8)]
    root = write_beir(tmp_path / "c", docs, queries, [(f"q{i}", f"d{i}", 1) for i in range(8)])
    task = retrieval_task("tiny", load_beir(root), str(root))
    result = run_sweep(
        task, str(tiny_bert_dir), cache_dir=tmp_path, config=SweepConfig(poolers=("mean",), resamples=20)
    )
    skipped = [n for n in result.notes if "have no score" in n]
    assert skipped and "could not be fitted on 12 documents of 32 dimensions" in skipped[0]
    assert "skipped for" in result.main.description
