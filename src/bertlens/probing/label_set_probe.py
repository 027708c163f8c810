"""The multi-label probe: a set of labels per text, read from frozen vectors.

Every candidate is screened by ridge regression onto the label indicator matrix (one solve for all L labels:
probing/fold_ridge.py, strengths relative to the training rows as the classification screen's); the contenders (best
dev micro-F1 first, up to MAX_CONTENDERS, and always the model's own reading) then get one-vs-rest L2 logistic
probes (one sigmoid per label, scikit-learn's objective, probing/logistic.py), C chosen on dev. A label is predicted
when its score reaches that label's threshold, chosen on the same dev rows to maximise the label's F1 (Fan & Lin
2007's SCut; the screen's scores are thresholded the same way; ties go to the highest threshold, so a label without
a positive dev row predicts as little as it can). The rows not used to choose score the candidate.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import torch

from bertlens.io.memory import release_freed_memory
from bertlens.metrics.bootstrap import set_counts
from bertlens.probing.fold_ridge import ridge_over_folds
from bertlens.probing.logistic import C_GRID, DevSearch, fit_logistic
from bertlens.probing.newton_cg import NEWTON_STEPS
from bertlens.probing.screened_probe import (
    LOGISTIC,
    MAX_CONTENDERS,
    SCREEN,
    SCREEN_ALPHAS,
    SCREEN_BYTES,
    ProbeScores,
    ScreenJob,
    screen_bytes,
    screen_jobs,
    width_batches,
)
from bertlens.progress import Progress, counting, silent
from bertlens.representation.logits import label_thresholds
from bertlens.tasks.splits import Fold

NEWTON_TOL = 1e-7  # each label's gradient (max norm) at the end: probabilities within 1e-4 of a tol-1e-9 solve on
# GoEmotions' concat_last4 (1e-6 left 6e-4 there; 200 joint L-BFGS steps left 1e-3 on its own reading)

FeatureSource = Callable[[list[int], np.ndarray | None, int], torch.Tensor]  # as screened_probe.FeatureSource


def _cut(scores: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """scores [..., n, L] at thresholds [..., L] -> label sets [..., n, L] bool."""
    return scores >= thresholds[..., None, :]


def _choose(
    dev_scores: np.ndarray, dev_gold: np.ndarray, fitted: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """dev_scores [C, R, n, L] at every strength -> (chosen strength [C], its thresholds [C, L], dev micro-F1 [C]);
    `fitted` [R] bool: the strengths that may be chosen (a searched grid leaves the last ones unfitted)."""
    thresholds = label_thresholds(dev_scores, dev_gold)  # [C, R, L]
    tp, fp, fn = set_counts(_cut(dev_scores, thresholds), dev_gold)  # [C, R, n]
    f1 = 2 * tp.sum(-1) / np.maximum(2 * tp.sum(-1) + fp.sum(-1) + fn.sum(-1), 1)  # [C, R]
    if fitted is not None:
        f1[:, ~fitted] = -1.0
    chosen = f1.argmax(axis=1)
    picks = np.arange(len(chosen))
    return chosen, thresholds[picks, chosen], f1[picks, chosen]


def _micro_f1_on(dev_gold: np.ndarray) -> Callable[[torch.Tensor], np.ndarray]:
    """The label-set search's dev score: logits of one strength [C, m, L] -> dev micro-F1 [C] at each label's
    threshold chosen on the same rows, as `_choose` scores the strengths."""

    def score(logits: torch.Tensor) -> np.ndarray:
        return _choose(torch.sigmoid(logits).cpu().numpy()[:, None], dev_gold)[2]

    return score


class _Board:
    """The arrays every fold's figures are written into."""

    def __init__(self, count: int, folds: list[Fold], labels: int):
        self.test_at = np.cumsum([0] + [len(f.test) for f in folds])
        self.dev_at = np.cumsum([0] + [len(f.dev) for f in folds])
        self.predictions = np.zeros((count, self.test_at[-1], labels), dtype=bool)
        self.scores = np.zeros((count, self.test_at[-1], labels), dtype=np.float32)
        self.per_fold = np.zeros((len(folds), count))
        self.dev_predictions = np.zeros((count, self.dev_at[-1], labels), dtype=bool)

    def write(self, ids: list[int], k: int, test_scores, thresholds, dev_scores, dev_f1) -> None:
        """One fold's figures of candidates `ids`: test scores [C, n, L], thresholds [C, L], chosen dev scores."""
        test, dev = slice(self.test_at[k], self.test_at[k + 1]), slice(self.dev_at[k], self.dev_at[k + 1])
        self.scores[ids, test] = test_scores
        self.predictions[ids, test] = _cut(test_scores, thresholds)
        self.dev_predictions[ids, dev] = _cut(dev_scores, thresholds)
        self.per_fold[k, ids] = dev_f1


def _screen(source: FeatureSource, jobs: list[ScreenJob], folds, targets: np.ndarray, board: _Board, progress, device):
    """Ridge onto the indicator matrix for every candidate, strength and thresholds chosen on each fold's dev."""
    picked: dict[str, tuple] = {}  # the fold's choice, kept by choose() for the figures below

    def choose(dev: torch.Tensor, rows: np.ndarray) -> np.ndarray:
        dev = dev.cpu()
        chosen, thresholds, f1 = _choose(dev.numpy(), targets[rows])
        picked["fold"] = (thresholds, f1, dev.numpy()[np.arange(len(chosen)), chosen])
        return chosen

    for number, job in enumerate(jobs):
        progress(counting("screening (ridge, label sets)", "jobs"), number, len(jobs))
        chosen_folds = [folds[k] for k in job.fold_ids]
        features = source(job.ids, None, job.features_of).to(device)  # [C, N, D], centred in place by the fit
        outputs = ridge_over_folds(features, targets, chosen_folds, SCREEN_ALPHAS, choose, None, True)
        for k, out in zip(job.fold_ids, outputs, strict=True):
            thresholds, f1, dev_scores = picked["fold"]
            board.write(job.ids, k, out.test.cpu().numpy(), thresholds, dev_scores, f1)
    progress(counting("screening (ridge, label sets)", "jobs"), len(jobs), len(jobs))


def _logistic(source: FeatureSource, batch: list[int], folds: list[Fold], targets, strengths, board: _Board, device):
    """One-vs-rest logistic probes of a batch, fold by fold from zero: C and each label's threshold on dev."""
    for k, fold in enumerate(folds):
        order = np.concatenate([fold.train, fold.dev, fold.test])
        x = source(batch, order, k).to(device)  # [C, n, D]
        n_train, n_dev = len(fold.train), len(fold.dev)
        dev = DevSearch(x[:, n_train : n_train + n_dev], _micro_f1_on(targets[fold.dev]))  # searches the C grid
        fit = fit_logistic(
            x[:, :n_train], targets[fold.train], strengths, max_iter=NEWTON_STEPS, tol=NEWTON_TOL, dev=dev
        )
        held_out = torch.sigmoid(fit.decision(x[:, n_train:])).cpu().numpy()  # [C, R, n_dev + n_test, L]
        chosen, thresholds, f1 = _choose(held_out[:, :, :n_dev], targets[fold.dev], fit.fitted_mask())
        best = held_out[np.arange(len(chosen)), chosen]  # [C, n_dev + n_test, L]
        board.write(batch, k, best[:, n_dev:], thresholds, best[:, :n_dev], f1)


def label_set_probe(
    source: FeatureSource,
    widths: list[int],
    fold_specific: set[int],
    folds: list[Fold],
    targets: np.ndarray,
    strengths: tuple[float, ...] = C_GRID,
    progress: Progress = silent,
    always: tuple[int, ...] = (),
    device: torch.device | str = "cpu",
) -> tuple[ProbeScores, np.ndarray]:
    """Screen every candidate, then one-vs-rest logistic probes for the contenders. targets [N, L] bool.

    Returns the probe's figures (predictions [C, n_test_total, L] bool; dev predictions likewise) and the scores the
    test label sets were cut from [C, n_test_total, L] (probabilities where the logistic probe scored). `device`: where
    the fits run (each job's features moved there once)."""
    device = torch.device(device)
    rows = max(len(f.train) + len(f.dev) + len(f.test) for f in folds)
    labels = targets.shape[1]
    board = _Board(len(widths), folds, labels)
    start = time.perf_counter()
    dev_rows = max(len(f.dev) for f in folds)
    screen_cost = lambda w: screen_bytes(w, rows, dev_rows, len(folds), labels)  # noqa: E731
    groups = width_batches(list(range(len(widths))), widths, screen_cost, SCREEN_BYTES)
    _screen(source, screen_jobs(groups, fold_specific, len(folds)), folds, targets, board, progress, device)
    screened = time.perf_counter() - start
    ranked = np.argsort(-board.per_fold.mean(axis=0), kind="stable").tolist()
    fitted = ranked[:MAX_CONTENDERS] + [i for i in always if i not in ranked[:MAX_CONTENDERS]]
    start = time.perf_counter()
    # one candidate per fit: each fit holds its whitened features twice (x and x'), and a batch of contenders at
    # base size on the full GoEmotions would hold several GB; the columns' Newton solves are independent either way
    for number, i in enumerate(fitted):
        progress(counting(f"logistic probes ({len(fitted)} contenders)", "candidates"), number, len(fitted))
        _logistic(source, [i], folds, targets, strengths, board, device)
        release_freed_memory()  # each fit's copies of its features are freed: give the heap back before the next
    progress(counting(f"logistic probes ({len(fitted)} contenders)", "candidates"), len(fitted), len(fitted))
    scored_by = tuple(LOGISTIC if i in fitted else SCREEN for i in range(len(widths)))
    seconds = (screened, time.perf_counter() - start)
    return ProbeScores(board.predictions, board.per_fold, scored_by, 0, seconds, board.dev_predictions), board.scores
