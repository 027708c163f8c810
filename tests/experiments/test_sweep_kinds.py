"""Regression and multi-label sweeps against an independent computation (issue #60).

On the model's own reading (the mean of the last layer), the sweep's row must equal a scikit-learn pipeline run on
the same vectors and the same rows: standardise, fit each strength on train, choose it on dev, score test (RidgeCV's
grid chosen by dev Spearman; OneVsRestClassifier(LogisticRegression) with each label's threshold chosen on dev by
F1, then f1_score(average='micro')).
"""

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import f1_score
from sklearn.multiclass import OneVsRestClassifier

from bertlens.encoding.encoder import Encoder
from bertlens.experiments.sweep import SweepConfig, run_sweep
from bertlens.features.bank import build_bank
from bertlens.probing.fold_ridge import REGRESSION_ALPHAS
from bertlens.probing.fused_curvature import describe as describe_curvature
from bertlens.probing.label_set_probe import label_set_probe
from bertlens.probing.logistic import C_GRID, product_dtype
from bertlens.representation.logits import THRESHOLDS
from bertlens.representation.recipe import Recipe
from bertlens.tasks.loaders import UserTable, load_user_task
from bertlens.tasks.splits import Fold
from tests.conftest import DATA

CONFIG = SweepConfig(resamples=200, bank_dtype="float32")


@pytest.fixture(scope="module")
def encoder():
    return Encoder("default", attentions="cls")


def own_vectors(encoder, task, cache):
    """The own reading's vectors of each split, from a float32 bank of the task's texts."""
    texts = task.all_texts()
    bank = build_bank(encoder, texts, cache, dtype="float32")
    index = {t: i for i, t in enumerate(texts)}
    layer = encoder.num_layers
    return {
        name: bank.pooled("mean", (layer,), np.array([index[t] for t in split.texts_a]))[:, 0]
        for name, split in task.splits.items()
    }


def standardised(train: np.ndarray, *others: np.ndarray) -> list[np.ndarray]:
    """Standardised on the training rows, with the unbiased deviation the probes use."""
    mean, scale = train.mean(axis=0), np.maximum(train.std(axis=0, ddof=1), 1e-6)
    return [(x - mean) / scale for x in (train, *others)]


def own_row(result, encoder):
    """The main protocol and the index of the model's own reading (mean of the last layer) in it."""
    main = result.main
    return main, [c.name for c in main.candidates].index(f"mean/L{encoder.num_layers}")


def test_regression_own_reading_equals_sklearn_ridge(encoder, tmp_path):
    table = UserTable(None, ("text",), "V", split_col="split")
    task = load_user_task(DATA / "emobank" / "emobank.csv", table, max_examples=400, seed=0)
    assert task.kind.name == "regression" and "read as a regression target" in task.notes[0]
    result = run_sweep(task, encoder, Recipe(), tmp_path, CONFIG)
    main, own = own_row(result, encoder)
    vectors = own_vectors(encoder, task, tmp_path)
    x_train, x_dev, x_test = standardised(vectors["train"], vectors["dev"], vectors["test"])
    y = {name: split.targets for name, split in task.splits.items()}
    fits = [Ridge(alpha=a * len(x_train)).fit(x_train, y["train"]) for a in REGRESSION_ALPHAS]
    best = max(fits, key=lambda f: spearmanr(f.predict(x_dev), y["dev"]).statistic)
    expected = spearmanr(best.predict(x_test), y["test"]).statistic
    assert main.metric == "spearman" and abs(main.test.value[own] - expected) < 1e-3
    assert set(main.reported) == {"pearson", "kendall_tau", "r2", "rmse"}
    assert abs(main.reported["rmse"][own] - np.sqrt(np.mean((best.predict(x_test) - y["test"]) ** 2))) < 1e-3


def sklearn_label_sets(x_train, y_train, x_dev, y_dev, x_test) -> tuple[np.ndarray, np.ndarray]:
    """One-vs-rest logistic at each C; thresholds per label by dev F1 (ties: the highest); C by dev micro-F1; (test
    label sets, the thresholds)."""
    best = None
    for c in C_GRID:
        model = OneVsRestClassifier(LogisticRegression(C=c, max_iter=2000, tol=1e-6)).fit(x_train, y_train)
        dev, test = model.predict_proba(x_dev), model.predict_proba(x_test)
        cuts = []
        for label in range(y_train.shape[1]):
            scores = [f1_score(y_dev[:, label], dev[:, label] >= t, zero_division=0) for t in THRESHOLDS]
            cuts.append(THRESHOLDS[len(scores) - 1 - int(np.argmax(scores[::-1]))])  # ties: the highest
        dev_f1 = f1_score(y_dev, dev >= np.array(cuts), average="micro", zero_division=0)
        if best is None or dev_f1 > best[0]:
            best = (dev_f1, test >= np.array(cuts), np.array(cuts))
    return best[1], best[2]


def test_multi_label_own_reading_equals_sklearn_one_vs_rest(encoder, tmp_path):
    root = DATA / "goemotions"
    splits = {"dev": root / "dev.tsv", "test": root / "test.tsv"}
    table = UserTable(None, (0,), 1, header=False, label_sep=",", split_files=splits)
    task = load_user_task(root / "train.tsv", table, max_examples=1200, seed=0)
    assert task.kind.name == "multi_label" and task.splits["train"].targets.dtype == bool
    result = run_sweep(task, encoder, Recipe(), tmp_path, CONFIG)
    main, own = own_row(result, encoder)
    assert main.scored_by[own] == "logistic" and main.metric == "micro_f1"
    vectors = own_vectors(encoder, task, tmp_path)
    x_train, x_dev, x_test = standardised(vectors["train"], vectors["dev"], vectors["test"])
    y = {name: split.targets.astype(int) for name, split in task.splits.items()}
    predicted, cuts = sklearn_label_sets(x_train, y["train"], x_dev, y["dev"], x_test)
    expected = f1_score(y["test"], predicted, average="micro")
    # the fit: the probe's own probabilities [n_test, L] for the same vectors and rows, cut at scikit-learn's
    # thresholds, give scikit-learn's micro-F1 within 1e-4
    n_train, n_dev, n_test = (len(vectors[s]) for s in ("train", "dev", "test"))
    fold = Fold(np.arange(n_train), n_train + np.arange(n_dev), n_train + n_dev + np.arange(n_test))
    x = torch.from_numpy(np.concatenate([vectors["train"], vectors["dev"], vectors["test"]])[None])  # [1, n, D]
    targets = np.concatenate([task.splits[s].targets for s in ("train", "dev", "test")])
    source = lambda ids, rows, k: x.clone() if rows is None else x[:, rows]  # noqa: E731
    _, probabilities = label_set_probe(source, [x.shape[-1]], set(), [fold], targets, always=(0,))
    assert abs(f1_score(y["test"], probabilities[0] >= cuts, average="micro") - expected) < 1e-4
    # the row: each side chooses its thresholds on its own dev F1 (every label's fit is solved to convergence, so a
    # near-tie there does not flip a threshold; measured: equal to the last digit)
    assert abs(main.test.value[own] - expected) < 1e-3
    assert set(main.reported) == {"macro_f1", "lrap", "subset_accuracy"}
    if product_dtype("cpu") == torch.float32:  # the report says how the Newton solves' curvature products ran
        assert describe_curvature("cpu") in result.basis


def test_regression_label_free_trust_is_judged_by_spearman(tiny_bert_dir, tmp_path):
    """The label-free pick of a regression task, judged by its labels; the few-label choice by a ridge's Spearman."""
    table = UserTable(None, ("text",), "V", split_col="split")
    task = load_user_task(DATA / "emobank" / "emobank.csv", table, max_examples=120, seed=0)
    tiny = Encoder(str(tiny_bert_dir), attentions="cls")
    config = SweepConfig(resamples=100, bank_dtype="float32", protocols=("probe", "label_free"))
    result = run_sweep(task, tiny, Recipe(model=tiny.ref.name), tmp_path, config)
    assert set(result.protocols) == {"probe", "label_free"} and result.trust is not None
    assert result.trust.settling and all(0 <= s.within_best <= 1 for s in result.trust.settling)
