"""The label-free protocol end to end on small slices: a labelled task with its trust figures, texts alone."""

import numpy as np
import pytest

from bertlens.embedding.embedder import Embedder
from bertlens.encoding.encoder import Encoder
from bertlens.experiments.sweep import SweepConfig, run_sweep, run_texts_sweep
from bertlens.features.bank import build_bank
from bertlens.features.views import BankOptions, build_views
from bertlens.probing.candidates import candidate_features
from bertlens.probing.label_free import COMPONENTS
from bertlens.representation.recipe import Recipe
from bertlens.tasks.catalog import get_task
from bertlens.tasks.loaders import load_catalog_task
from tests.conftest import DATA

CONFIG = SweepConfig(resamples=100, bank_dtype="float32", protocols=("probe", "label_free"))


@pytest.fixture(scope="module")
def tiny_encoder(tiny_bert_dir):
    return Encoder(str(tiny_bert_dir), attentions="cls")


def test_dropout_views_differ_from_the_plain_pass_and_leave_the_model_in_eval(tiny_encoder, tmp_path):
    texts = [f"sentence number {i} about films and music" for i in range(20)]
    options = BankOptions(("mean",), dtype="float32")
    plain = build_bank(tiny_encoder, texts, tmp_path, poolers=("mean",), dtype="float32")
    views = build_views(tiny_encoder, texts, np.arange(0, 20, 2), tmp_path, options, seed=0)
    assert not tiny_encoder.model.training
    first, second = (v.layer("mean", 2) for v in views.dropout)
    clean = plain.layer("mean", 2, views.rows)
    assert not np.allclose(first, second) and not np.allclose(first, clean)  # dropout was on, differently seeded
    again = build_views(tiny_encoder, texts, np.arange(0, 20, 2), tmp_path, options, seed=0)
    assert np.array_equal(again.dropout[0].layer("mean", 2), first)  # cached under its own key
    assert np.array_equal(
        build_bank(tiny_encoder, texts, tmp_path, poolers=("mean",), dtype="float32").layer("mean", 2),
        plain.layer("mean", 2),
    )  # the plain bank is not replaced by a view


def test_label_free_protocol_on_a_labelled_task_reports_trust(tiny_encoder, tmp_path):
    task = load_catalog_task(get_task("sst2"), DATA, max_examples=150)
    result = run_sweep(task, tiny_encoder, Recipe(model=tiny_encoder.ref.name), tmp_path, CONFIG)
    free = result.protocols["label_free"]
    assert set(result.protocols) == {"probe", "label_free"}
    assert all(c.mixer != "scalar_mix" for c in free.candidates)
    scores = result.label_free
    assert set(scores.components) == set(COMPONENTS)
    defined = np.isfinite(scores.value("combined"))
    assert defined.sum() >= len(free.candidates) - 2  # only constant vectors ([CLS] of layer 0) are undefined
    trust = result.trust
    assert (
        trust.pick == free.candidates[free.test.best].name
        or free.test.tied_with_best[[c.name for c in free.candidates].index(trust.pick)]
    )
    assert [r.against for r in trust.regrets] == ["best", "last layer"] and trust.regrets[1].reference == "mean/L2"
    assert all(r.low <= r.value <= r.high for r in trust.regrets)
    assert trust.regrets[0].value <= 1e-12  # nothing beats the best on its own test
    assert [s.labels for s in trust.settling] == [25, 50, 100]  # 150 training rows: 200 and 500 cannot be drawn
    assert result.recommended.name == result.protocols["probe"].candidates[0].name or result.basis.startswith(
        "protocol 'probe'"
    )  # the labelled protocol still recommends
    again = run_sweep(task, tiny_encoder, Recipe(model=tiny_encoder.ref.name), tmp_path, CONFIG)
    assert np.array_equal(again.label_free.combined, scores.combined, equal_nan=True)  # seeded


def test_texts_alone_give_a_recipe_that_embeds_what_was_scored(tiny_encoder, tmp_path):
    task = load_catalog_task(get_task("trec"), DATA, max_examples=120)
    texts = task.all_texts()
    result = run_texts_sweep(
        texts,
        "questions",
        tiny_encoder,
        Recipe(model=tiny_encoder.ref.name),
        tmp_path,
        SweepConfig(bank_dtype="float32"),
    )
    assert result.kind.name == "texts" and set(result.protocols) == {"label_free"} and result.trust is None
    chosen = result.recommended
    assert chosen.name == result.main.candidates[result.label_free.pick(tiny_encoder.hidden_size)].name
    bank = build_bank(tiny_encoder, texts, tmp_path, dtype="float32")
    expected = candidate_features(bank, chosen, np.arange(10))
    vectors = Embedder(result.recipe, encoder=tiny_encoder).embed(texts[:10]).vectors
    assert np.allclose(vectors, expected, atol=1e-5)


def test_too_few_texts_is_a_clear_error(tiny_encoder, tmp_path):
    from bertlens.errors import BertlensError

    with pytest.raises(BertlensError, match="at least 8"):
        run_texts_sweep(["a", "b", "a"], "few", tiny_encoder, Recipe(model=tiny_encoder.ref.name), tmp_path)
