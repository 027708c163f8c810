"""RecipeVectorizer in scikit-learn: a Pipeline with LogisticRegression matches fitting on Embedder vectors by hand,
clone() keeps the parameters, GridSearchCV searches recipe fields and C, and the grid re-encodes nothing."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from bertlens.adapters.sklearn import EncodingCache, RecipeVectorizer
from bertlens.embedding.embedder import Embedder
from bertlens.errors import BertlensError
from bertlens.representation.recipe import TOKEN_FIELDS, Recipe

GOOD = ["a wonderful film", "great acting and a moving story", "lovely, warm and funny", "a joy to watch"]
BAD = ["a dull mess", "boring and far too long", "terrible script, awful acting", "a waste of time"]
TEXTS = [f"{t} {i}" for i in range(6) for t in GOOD + BAD]
LABELS = np.array([1, 1, 1, 1, 0, 0, 0, 0] * 6)


def test_pipeline_matches_the_embedder_and_a_hand_fitted_classifier(tiny_bert_dir):
    pipeline = make_pipeline(RecipeVectorizer(model=str(tiny_bert_dir), pooler="max"), LogisticRegression(C=0.5))
    pipeline.fit(TEXTS, LABELS)
    vectors = Embedder(model=str(tiny_bert_dir), pooler="max").encode(TEXTS)
    np.testing.assert_allclose(pipeline[0].transform(TEXTS), vectors, atol=1e-6)
    by_hand = LogisticRegression(C=0.5).fit(vectors, LABELS)
    np.testing.assert_allclose(pipeline.predict_proba(TEXTS), by_hand.predict_proba(vectors))


def test_clone_keeps_parameters_and_bad_parameters_fail_at_fit(tiny_bert_dir):
    vectorizer = RecipeVectorizer(model=str(tiny_bert_dir), layers=(-2, -1), pooler="cls", normalize=True)
    copy = clone(vectorizer)
    assert copy.get_params() == vectorizer.get_params() and copy is not vectorizer
    assert copy.fit(TEXTS).recipe_.mixer == "mean"  # two layers without a mixer: averaged, as the CLI does
    assert not hasattr(vectorizer, "recipe_")  # fitting a clone leaves the original unfitted
    with pytest.raises(BertlensError, match="unknown pooler"):
        RecipeVectorizer(model=str(tiny_bert_dir), pooler="median").fit(TEXTS)


def test_grid_search_over_pooler_and_c_encodes_each_text_once_per_recipe(tiny_bert_dir, monkeypatch):
    calls = []
    original = Embedder.encode

    def counting(self, texts, progress=None):
        calls.append((self.recipe.pooler, len(texts)))
        return original(self, texts)

    monkeypatch.setattr(Embedder, "encode", counting)
    cache = EncodingCache()  # shared by the clones the grid makes: each text encoded once per recipe
    pipeline = make_pipeline(RecipeVectorizer(model=str(tiny_bert_dir), layers=(1,), cache=cache), LogisticRegression())
    grid = {"recipevectorizer__pooler": ["mean", "cls"], "logisticregression__C": [0.1, 1.0, 10.0]}
    search = GridSearchCV(pipeline, grid, cv=3).fit(TEXTS, LABELS)
    assert search.best_params_["recipevectorizer__pooler"] in ("mean", "cls")
    encoded = {}
    for pooler, count in calls:
        encoded[pooler] = encoded.get(pooler, 0) + count
    assert encoded == {"mean": len(TEXTS), "cls": len(TEXTS)}  # 2 poolers x 3 C x 3 folds, each text encoded once


def test_every_recipe_field_is_a_parameter_and_round_trips(tiny_bert_dir):
    names = {f.name for f in dataclasses.fields(Recipe)} - set(TOKEN_FIELDS)  # a multi-vector recipe's: not pooled
    vectorizer = RecipeVectorizer(model=str(tiny_bert_dir), long_text="windows:mean", attention_layer=-2)
    params = vectorizer.get_params()
    assert set(params) == names | {"cache"}  # every Recipe field (the constructor test keeps the list in step)
    again = RecipeVectorizer(**params).set_params(pooler="cls")
    assert again.get_params() == {**params, "pooler": "cls"}
    assert again.fit(TEXTS[:2]).recipe_ == Recipe(
        model=str(tiny_bert_dir), long_text="windows:mean", attention_layer=-2, pooler="cls"
    )
    with pytest.raises(TypeError, match="unexpected keyword argument 'poolr'"):
        RecipeVectorizer(poolr="cls")


def test_transform_needs_fit_and_the_cache_stays_within_its_bound(tiny_bert_dir):
    with pytest.raises(NotFittedError):
        RecipeVectorizer(model=str(tiny_bert_dir)).transform(TEXTS)
    cache = EncodingCache(max_vectors=5)
    vectorizer = RecipeVectorizer(model=str(tiny_bert_dir), cache=cache).fit(TEXTS)
    first = vectorizer.transform(TEXTS[:12])
    assert len(cache.vectors) == 5  # the least recently used were dropped
    np.testing.assert_allclose(vectorizer.transform(TEXTS[:12]), first, atol=1e-6)  # re-encoded, the same
    own = RecipeVectorizer(model=str(tiny_bert_dir)).fit(TEXTS)
    assert own.cache_ is not RecipeVectorizer(model=str(tiny_bert_dir)).fit(TEXTS).cache_  # no process-wide state


def test_the_constructor_lists_exactly_the_recipe_fields_with_their_defaults():
    """Written out as scikit-learn reads it (no generated signature): a Recipe field added must be added here too."""
    import dataclasses
    import inspect

    parameters = inspect.signature(RecipeVectorizer.__init__).parameters
    expected = {f.name: f.default for f in dataclasses.fields(Recipe) if f.name not in TOKEN_FIELDS} | {"cache": None}
    assert {n: p.default for n, p in parameters.items() if n != "self"} == expected
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for n, p in parameters.items() if n != "self")
    assert RecipeVectorizer(pooler="max").get_params()["pooler"] == "max"


def test_a_multi_vector_pooler_is_refused_in_one_line(tiny_bert_dir):
    """One vector per text is what a vectorizer gives: pooler 'tokens' (every token's vector) stops at transform."""
    from bertlens.errors import BertlensError

    fitted = RecipeVectorizer(model=str(tiny_bert_dir), pooler="tokens").fit(TEXTS[:2])
    with pytest.raises(BertlensError, match="keeps every token's vector"):
        fitted.transform(TEXTS[:2])
