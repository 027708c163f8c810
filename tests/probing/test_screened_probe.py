"""The screened probe: every candidate screened, contenders get the logistic probe, fold by fold from zero."""

import numpy as np
import torch

from bertlens.probing import screened_probe as sp
from bertlens.probing.screened_probe import LOGISTIC, SCREEN, contenders, screened_probe
from bertlens.probing.selection import logistic_on_dev
from bertlens.tasks.splits import make_folds


def _task(n=600, seed=0):
    """Candidate 0 sees the label's signal strongly, 1 weakly, 2 not at all (noise)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    centres = rng.normal(size=(3, 16))
    strong = centres[labels] * 1.5 + rng.normal(size=(n, 16))
    weak = centres[labels] * 0.3 + rng.normal(size=(n, 16))
    noise = rng.normal(size=(n, 16))
    features = np.stack([strong, weak, noise]).astype(np.float32)  # [3, n, 16]
    folds = make_folds({"all": np.arange(n)}, labels, stratify=True, cv_folds=5, seed=0, dev_fraction=0.1)
    return features, labels, folds


def _source(features):
    def source(ids, rows, k):
        chosen = features[ids]
        return torch.from_numpy(np.ascontiguousarray(chosen if rows is None else chosen[:, rows]))

    return source


def test_contenders_keep_candidates_that_can_still_tie_and_drop_clear_losers():
    rng = np.random.default_rng(0)
    best = rng.random(2000) < 0.80
    tied = best.copy()
    tied[rng.choice(2000, 10, replace=False)] ^= True  # differs from the best on 10 of 2000 rows
    loser = rng.random(2000) < 0.50
    assert set(contenders(np.stack([loser, best, tied]))) == {1, 2}


def _assert_logistic_figures(scores, candidate: int, fitted: list[int], features, labels, folds) -> None:
    """`candidate`'s figures in every fold are those of a logistic fit from zero on that fold's rows alone, fitted
    beside the candidates `fitted` (the batch it was fitted in)."""
    offset, position = 0, fitted.index(candidate)
    for k, fold in enumerate(folds):
        rows = np.concatenate([fold.train, fold.dev, fold.test])
        fit = logistic_on_dev(
            torch.from_numpy(features[fitted][:, rows]),
            len(fold.train),
            len(fold.dev),
            labels[fold.train],
            labels[fold.dev],
        )
        np.testing.assert_array_equal(
            scores.predictions[candidate, offset : offset + len(fold.test)], fit.predictions[position]
        )
        assert scores.per_fold[k, candidate] == fit.dev_accuracy[position]
        offset += len(fold.test)


def test_the_best_gets_the_logistic_probe_and_its_figures_equal_an_independent_fit_per_fold():
    features, labels, folds = _task()
    scores = screened_probe(_source(features), [16, 16, 16], set(), folds, labels)
    assert scores.scored_by[0] == LOGISTIC and scores.scored_by[2] == SCREEN
    _assert_logistic_figures(scores, 0, [0], features, labels, folds)  # no warm start: each fold from zero
    accuracy = (scores.predictions == labels[np.concatenate([f.test for f in folds])]).mean(axis=1)
    assert accuracy[0] > accuracy[1] > accuracy[2] - 0.05  # the screen still ranks the others sensibly
    assert abs(accuracy[2] - 1 / 3) < 0.1  # noise stays at chance: nothing leaks from test rows


def test_logistic_work_is_capped_beyond_the_best(monkeypatch):
    monkeypatch.setattr(sp, "LOGISTIC_UNITS", 10)
    assert sp._affordable([4, 1, 2], [100] * 5, outputs=4) == [4]  # the best always; the others exceed the cap
    monkeypatch.setattr(sp, "LOGISTIC_UNITS", 800)
    assert sp._affordable([4, 1, 2], [100] * 5, outputs=4) == [4, 1, 2]


def test_the_default_gets_the_logistic_probe_even_when_the_screen_rules_it_out(monkeypatch):
    features, labels, folds = _task()
    plain = screened_probe(_source(features), [16, 16, 16], set(), folds, labels)
    assert plain.scored_by[2] == SCREEN  # noise: the screen drops it
    monkeypatch.setattr(sp, "LOGISTIC_UNITS", 0)  # no room beyond the best: `always` is outside the caps
    scores = screened_probe(_source(features), [16, 16, 16], set(), folds, labels, always=(2,))
    assert scores.scored_by == (LOGISTIC, SCREEN, LOGISTIC)
    _assert_logistic_figures(scores, 2, [0, 2], features, labels, folds)  # the logistic fit's, beside the best
    assert not np.array_equal(scores.predictions[2], plain.predictions[2])  # the screen's figures were replaced


def test_fold_specific_candidates_are_screened_with_their_own_features_per_fold():
    features, labels, folds = _task()
    calls = []

    def source(ids, rows, k):
        calls.append((tuple(ids), rows is None, k))
        return _source(features)(ids, rows, k)

    screened_probe(source, [16, 16, 16], {1}, folds, labels)
    assert all(((1,), True, k) in calls for k in range(len(folds)))
    assert ((0, 2), True, 0) in calls  # the others share one pass over every fold


def test_screen_batches_count_the_gram_matrices_and_batching_leaves_the_figures_unchanged(monkeypatch):
    features, labels, folds = _task()
    whole = screened_probe(_source(features), [16, 16, 16], set(), folds, labels)
    one = sp.screen_bytes(16, rows=600, dev_rows=60, folds=5, classes=3)
    assert one > 4 * (2 * 600 * 16 + 13 * 16**2)  # features, a gathered copy and (folds + 8) Gram-sized matrices
    # At 3,000 rows and 768 wide, the Gram terms decide: without them 58 candidates fitted in 512 MiB
    assert sp.SCREEN_BYTES // sp.screen_bytes(768, rows=3000, dev_rows=240, folds=5, classes=100) < 25
    monkeypatch.setattr(sp, "SCREEN_BYTES", one)  # one candidate a batch
    calls = []

    def source(ids, rows, k):
        calls.append(tuple(ids))
        return _source(features)(ids, rows, k)

    alone = screened_probe(source, [16, 16, 16], set(), folds, labels)
    assert {len(ids) for ids in calls if len(ids) > 0} == {1}
    np.testing.assert_array_equal(alone.predictions, whole.predictions)
    np.testing.assert_array_equal(alone.per_fold, whole.per_fold)
