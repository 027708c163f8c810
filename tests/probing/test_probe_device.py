"""The probes run where their features are (the sweep moves each job's rows to the encoder's device once).

No GPU here, so the check is on what would break on one: a tensor a probe allocates without naming its device. Under
`torch.set_default_device("meta")` every such tensor lands on "meta", and mixing it with the CPU features fails; a
probe that runs there, giving the same figures as without, allocates only where its features are.
"""

from contextlib import contextmanager

import numpy as np
import torch

from bertlens.probing.fold_ridge import REGRESSION_ALPHAS, ridge_over_folds, spearman_choice
from bertlens.probing.label_set_probe import label_set_probe
from bertlens.probing.logistic import fit_logistic
from bertlens.probing.screened_probe import LOGISTIC, screened_probe
from bertlens.tasks.splits import make_folds
from tests.probing.test_screened_probe import _source, _task


@contextmanager
def allocations_elsewhere():
    torch.set_default_device("meta")
    try:
        yield
    finally:
        torch.set_default_device(None)


def test_the_screened_probe_allocates_only_where_its_features_are():
    features, labels, folds = _task()
    source = _source(features)
    widths = [features.shape[-1]] * len(features)
    here = screened_probe(source, widths, set(), folds, labels, device="cpu")
    with allocations_elsewhere():
        there = screened_probe(source, widths, set(), folds, labels, device="cpu")
    assert np.array_equal(here.predictions, there.predictions) and np.allclose(here.per_fold, there.per_fold, atol=1e-4)
    assert here.scored_by == there.scored_by and LOGISTIC in here.scored_by  # the logistic stage ran too


def test_ridge_on_numbers_and_the_logistic_path_allocate_only_where_their_features_are():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 300, 8)).astype(np.float32)
    y = x[0, :, 0] + 0.1 * rng.normal(size=300)
    folds = make_folds({"all": np.arange(300)}, y, stratify=False, cv_folds=3, seed=0)

    def run():
        choose = lambda dev, rows: spearman_choice(dev, y[rows])[0]  # noqa: E731
        fits = ridge_over_folds(torch.from_numpy(x.copy()), y, folds, REGRESSION_ALPHAS, choose, relative=True)
        return [out.test.cpu().numpy() for out in fits]

    here = run()
    with allocations_elsewhere():
        there = run()
    for a, b in zip(here, there, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-4)
    labels = rng.integers(0, 60, 300)  # 60 classes: the warm-started path
    features = torch.from_numpy(rng.normal(size=(1, 300, 8)).astype(np.float32))
    with allocations_elsewhere():
        fit = fit_logistic(features, labels, max_iter=5)
    np.testing.assert_allclose(fit.weight.numpy(), fit_logistic(features, labels, max_iter=5).weight.numpy(), atol=1e-4)


def test_the_label_set_probe_allocates_only_where_its_features_are():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 240, 6)).astype(np.float32)
    targets = np.stack([x[0, :, 0] > 0, x[1, :, 1] > 0.5, x[0, :, 2] < -0.3], axis=1)
    folds = make_folds({"all": np.arange(240)}, targets, stratify=False, cv_folds=3, seed=0)
    source = _source(x)
    here, _ = label_set_probe(source, [6, 6], set(), folds, targets, device="cpu")
    with allocations_elsewhere():
        there, _ = label_set_probe(source, [6, 6], set(), folds, targets, device="cpu")
    assert np.array_equal(here.predictions, there.predictions) and np.allclose(here.per_fold, there.per_fold)
