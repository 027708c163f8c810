"""The classification probe at user scale: a closed-form screen of every candidate, logistic fits for the contenders.

Fitting an L2 logistic probe for every candidate x C x fold costs classes x C values x candidates
x folds L-BFGS runs; on 10k texts with 77 classes that was 60-70x the encoding pass. A ridge
classifier (one-hot least squares, sec. 4.2 of Hastie et al., *Elements of Statistical Learning*)
is fitted for every candidate, fold and strength from sufficient statistics instead
(probing/fold_ridge.py: one Gram pass for all folds, one Cholesky per strength, the cost
independent of the number of classes). Its dev accuracy ranks the candidates; only those that can
still tie with the best (a paired test on their dev predictions, with slack for the gap between
ridge and logistic rankings) get the full logistic probe. A candidate
keeps the screen's figure otherwise, and every row says which probe produced it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import torch

from bertlens.probing.cores import JobRunner, in_turn, map_on_cores, runner_for
from bertlens.probing.fold_ridge import ridge_over_folds
from bertlens.probing.logistic import C_GRID
from bertlens.probing.selection import Selected, logistic_on_dev
from bertlens.progress import Progress, counting, silent
from bertlens.tasks.splits import Fold

SCREEN_ALPHAS = (1e-4, 1e-3, 1e-2, 1e-1)  # ridge strengths x training rows: relative, so they mean the same at any n
CONTENDER_Z = 2.5  # a candidate whose dev deficit to the best is within this many standard errors ...
CONTENDER_SLACK = 0.01  # ... plus one point (ridge and logistic can rank close candidates differently) is fitted
MAX_CONTENDERS = 8  # logistic fits at most this many (best screen scores first); the report says when it bit
LOGISTIC_UNITS = 320_000  # and at most this much feature width x outputs (C values x classes) beyond the best:
# two 384-wide candidates at 100 classes, any 8 contenders of a binary task. Logistic cost grows with it (about
# 3 s per fold for 8k training rows x 1536 x 100 classes x 4 C on 2 Xeon cores, along the C path), the screen's does not
SCREEN_BYTES = 1024 * 2**20  # working memory of one batch of screened candidates: features, Gram matrices, solves
LOGISTIC_BYTES = 1536 * 2**20  # working memory of one batch of logistic fits (features, logits, gradients)

SCREEN, LOGISTIC = "ridge screen", "logistic"

FeatureSource = Callable[[list[int], np.ndarray | None, int], torch.Tensor]
"""(candidate ids of one width, example rows or None for all, fold index) -> new float32 tensor [C, n, D]."""


@dataclass(frozen=True)
class ProbeScores:
    predictions: np.ndarray  # [C, n_test_total] out-of-fold test predictions
    per_fold: np.ndarray  # [F, C] dev accuracy at each fold's chosen strength
    scored_by: tuple[str, ...]  # per candidate: LOGISTIC or SCREEN
    capped: int = 0  # contenders left to the screen by MAX_CONTENDERS / LOGISTIC_UNITS
    seconds: tuple[float, float] = (0.0, 0.0)  # (screen, logistic) wall time
    dev_predictions: np.ndarray | None = None  # [C, sum of dev rows]: each fold's dev rows, by the probe that scored


@dataclass(frozen=True)
class _Screen:
    predictions: np.ndarray  # [C, n_test_total]
    per_fold: np.ndarray  # [F, C]
    dev_correct: np.ndarray  # [C, sum of dev rows] bool: right or wrong on every dev row of every fold
    dev_predictions: np.ndarray  # [C, sum of dev rows] class ids


def _offsets(folds: list[Fold]) -> list[int]:
    return list(np.cumsum([0] + [len(f.test) for f in folds]))


def screen_job(features, folds: list[Fold], targets: np.ndarray, classes: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The ridge screen of one group of candidates (features [C, N, D], a tensor or array this job may change):
    per fold, (dev predictions [C, n_dev] at each candidate's strength chosen on dev, test predictions [C, n_test]).
    A job of its own so that it runs here or as a Ray task (probing/ray_jobs.py) with the same result."""
    x = features if isinstance(features, torch.Tensor) else torch.from_numpy(np.array(features))  # [C, N, D], own copy

    def choose(dev: torch.Tensor, rows: np.ndarray) -> np.ndarray:
        return (dev.argmax(-1).cpu().numpy() == targets[rows]).mean(-1).argmax(-1)  # [C]; ties: the weakest strength

    out = []
    for fold_out in ridge_over_folds(x, targets, folds, SCREEN_ALPHAS, choose, classes, True):
        on = fold_out.dev.device
        picks = torch.arange(len(fold_out.chosen), device=on), torch.as_tensor(fold_out.chosen, device=on)
        out.append(
            (fold_out.dev[picks].argmax(-1).cpu().numpy(), fold_out.test.argmax(-1).cpu().numpy())
        )  # [C, n_dev], [C, n_test]
    return out


@dataclass(frozen=True)
class ScreenJob:
    """One screen job: candidates `ids` over the folds `fold_ids`, with the features of fold `features_of`."""

    ids: list[int]
    fold_ids: tuple[int, ...]
    features_of: int


def screen_jobs(groups: list[list[int]], fold_specific: set[int], folds: int) -> list[ScreenJob]:
    """A group's shared candidates over all folds in one job; a fold-specific candidate (a ScalarMix learned per
    fold: its features differ) fold by fold."""
    jobs = []
    for ids in groups:
        shared = [i for i in ids if i not in fold_specific]
        if shared:
            jobs.append(ScreenJob(shared, tuple(range(folds)), 0))
        jobs += [ScreenJob([i], (k,), k) for i in ids if i in fold_specific for k in range(folds)]
    return jobs


def _screen(
    source: FeatureSource, groups: list[list[int]], fold_specific: set[int], folds, targets, classes, progress
) -> _Screen:
    count = sum(len(g) for g in groups)
    offsets, dev_offsets = _offsets(folds), list(np.cumsum([0] + [len(f.dev) for f in folds]))
    predictions = np.zeros((count, offsets[-1]), dtype=np.int64)
    per_fold = np.zeros((len(folds), count))
    dev_correct = np.zeros((count, dev_offsets[-1]), dtype=bool)
    dev_predictions = np.zeros((count, dev_offsets[-1]), dtype=np.int64)
    jobs = screen_jobs(groups, fold_specific, len(folds))
    runner = runner_for(max(len(f.train) + len(f.dev) + len(f.test) for f in folds))
    calls = (
        (
            _shipped(source(job.ids, None, job.features_of), runner),
            [folds[k] for k in job.fold_ids],
            targets,
            classes,
        )
        for job in jobs
    )  # features read when their job is reached: one group's at a time here, a few in flight on a runner

    def done(finished: int, total: int) -> None:
        progress(counting("screening (ridge)", "jobs"), finished, total)

    outcomes = (runner.ordered if runner else in_turn)(screen_job, calls, len(jobs), done)
    for job, outcome in zip(jobs, outcomes, strict=True):
        for k, (predicted, test) in zip(job.fold_ids, outcome, strict=True):
            right = predicted == targets[folds[k].dev]
            dev_correct[job.ids, dev_offsets[k] : dev_offsets[k + 1]] = right
            dev_predictions[job.ids, dev_offsets[k] : dev_offsets[k + 1]] = predicted
            per_fold[k, job.ids] = right.mean(-1)
            predictions[job.ids, offsets[k] : offsets[k + 1]] = test
    return _Screen(predictions, per_fold, dev_correct, dev_predictions)


def _moved(source: FeatureSource, device: torch.device) -> FeatureSource:
    """The same features, each call's moved once to `device` (nothing moves on the CPU)."""
    if device.type == "cpu":
        return source
    return lambda ids, rows, k: source(ids, rows, k).to(device)


def _shipped(features: torch.Tensor, runner: JobRunner | None):
    """Features as a job receives them: the tensor here (on the probes' device); its array (zero-copy in Ray's
    object store) on a runner, whose workers fit on their own CPUs."""
    return features if runner is None else features.cpu().numpy()


def contenders(dev_correct: np.ndarray, z: float = CONTENDER_Z, slack: float = CONTENDER_SLACK) -> list[int]:
    """Candidates that can still tie with the best on dev: best first, then by dev accuracy.

    A paired test over every dev row of every fold: keep candidate c when mean(best - c) <= z SE + slack,
    SE from the per-row differences (Dietterich 1998 on paired comparisons of classifiers).
    """
    accuracy = dev_correct.mean(axis=1)  # [C]
    best = int(np.argmax(accuracy))
    diff = dev_correct[best].astype(np.float64) - dev_correct  # [C, m]
    m = dev_correct.shape[1]
    se = diff.std(axis=1, ddof=1) / np.sqrt(m) if m > 1 else np.zeros(len(diff))
    keep = np.flatnonzero(diff.mean(axis=1) <= z * se + slack)
    return sorted(keep.tolist(), key=lambda i: (-accuracy[i], i))


def _affordable(ranked: list[int], widths: list[int], outputs: int, always: tuple[int, ...] = ()) -> list[int]:
    """The contenders the logistic probe fits: always the screen's best, then others (best first) within the caps;
    then `always` (outside the caps), whatever the screen said of them."""
    fitted, used = [], 0
    for i in ranked:
        cost = widths[i] * outputs
        if len(fitted) == MAX_CONTENDERS:
            break
        if not fitted or used + cost <= LOGISTIC_UNITS:
            fitted.append(i)
            used += cost if len(fitted) > 1 else 0
    return fitted + [i for i in always if i not in fitted]


def screen_bytes(width: int, rows: int, dev_rows: int, folds: int, classes: int) -> int:
    """Working memory (float32 bytes) of one candidate of `width` in the ridge screen (probing/fold_ridge.py).

    The features and one gathered copy of them (2 x rows x width); Gram-sized matrices (width^2 each): every
    test set's sums and their total (folds + 1), and about 7 more while a fold is solved (its training sums,
    the standardisation's outer product and covariance, the shifted system, its Cholesky factor, the
    difference's temporaries); weights and dev outputs at every strength. Without the Gram terms a batch sized
    by its features alone held 58 candidates at 3,000 rows and peaked at 4.0 GB (all-mpnet-base-v2, 100
    classes, 5 folds), 3 GB of it Gram matrices.
    """
    strengths = len(SCREEN_ALPHAS)
    return 4 * (2 * rows * width + (folds + 8) * width**2 + strengths * (width + dev_rows) * max(classes, 1))


def width_batches(ids: list[int], widths: list[int], cost: Callable[[int], int], limit: int) -> list[list[int]]:
    """Candidates grouped by width (each group stacks into one tensor), cut so that a batch's summed
    cost(width) per candidate (bytes) stays within `limit`."""
    by_width: dict[int, list[int]] = {}
    for i in ids:
        by_width.setdefault(widths[i], []).append(i)
    batches = []
    for width, group in by_width.items():
        size = max(1, limit // cost(width))
        batches += [group[s : s + size] for s in range(0, len(group), size)]
    return batches


def logistic_job(features, rows, n_train: int, n_dev: int, y_train, y_dev, strengths) -> Selected:
    """One fold's logistic probes of a batch: features [C, n, D] of the fold's rows in train, dev, rest order (rows
    None), or [C, N, D] of every row and the fold's `rows` in that order (the bank shared by every fold's job on a
    runner). A job of its own so that it runs here or as a Ray task (probing/ray_jobs.py) with the same result."""
    x = features if rows is None else features[:, rows]  # [C, n, D]
    if not isinstance(x, torch.Tensor):
        x = torch.from_numpy(x if x.flags.writeable else x.copy())
    return logistic_on_dev(x, n_train, n_dev, y_train, y_dev, strengths)


def _logistic(source: FeatureSource, batch, folds, targets, strengths, scores: ProbeScores, progress, side, shared):
    """Fit the batch's logistic probes fold by fold, each from zero; write into scores' arrays.

    No warm start across folds: fold k-1 trained on fold k's test rows, and an early-stopped fit
    started there keeps what it memorised of them (measured: 0.90 instead of 0.17 accuracy on a
    100-class task), so every fold starts from zero. `side`: folds run side by side, one core each
    (1.3x faster at 10k rows, measured; the L-BFGS bookkeeping between the products does not use
    two cores), when two folds' working memory fits the batch budget. On a runner (sweep --engine ray) every fold
    is a task; the batch's features are shared by all of them when they are the same for every fold (`shared`).
    """
    offsets = _offsets(folds)
    dev_offsets = list(np.cumsum([0] + [len(f.dev) for f in folds]))
    order = [np.concatenate([fold.train, fold.dev, fold.test]) for fold in folds]
    runner = runner_for(max(len(rows) for rows in order))

    def done(count: int, total: int) -> None:
        progress(counting(f"logistic probes ({len(batch)} contenders)", "folds"), count, total)

    def fold_args(k: int, features, rows) -> tuple:
        fold = folds[k]
        return features, rows, len(fold.train), len(fold.dev), targets[fold.train], targets[fold.dev], strengths

    if runner is not None:
        everything = runner.share(source(batch, None, 0).cpu().numpy()) if shared else None  # [C, N, D], once
        calls = (
            fold_args(k, everything, order[k])
            if shared
            else fold_args(k, source(batch, order[k], k).cpu().numpy(), None)
            for k in range(len(folds))
        )
        fitted = runner.ordered(logistic_job, calls, len(folds), done)
    else:

        def fit(k: int) -> Selected:
            return logistic_job(*fold_args(k, source(batch, order[k], k), None))

        fitted = (
            map_on_cores(fit, list(range(len(folds))), done)
            if side
            else in_turn(fit, ((k,) for k in range(len(folds))), len(folds), done)
        )
    for k, selected in enumerate(fitted):
        scores.predictions[batch, offsets[k] : offsets[k + 1]] = selected.predictions
        scores.per_fold[k, batch] = selected.dev_accuracy
        scores.dev_predictions[batch, dev_offsets[k] : dev_offsets[k + 1]] = selected.dev_predictions


def screened_probe(
    source: FeatureSource,
    widths: list[int],
    fold_specific: set[int],
    folds: list[Fold],
    targets: np.ndarray,
    strengths: tuple[float, ...] = C_GRID,
    progress: Progress = silent,
    always: tuple[int, ...] = (),
    device: torch.device | str = "cpu",
) -> ProbeScores:
    """Screen every candidate, then logistic probes (C chosen on each fold's dev) for the contenders.

    widths [C]: each candidate's feature width; fold_specific: candidates whose features are
    learned per fold (ScalarMix). Targets are class ids 0..K-1. `always`: candidates the logistic probe
    fits even when the screen rules them out (the last-layer default: the pick's gain over it must compare
    two logistic figures, not a logistic figure with a screen figure). `device`: where the fits run (the encoder's:
    a GPU's when it has one), each job's features moved there once; a Ray runner's jobs stay on its workers' CPUs.
    """
    device = torch.device(device)
    source = _moved(source, device)
    classes = int(targets.max()) + 1
    rows = max(len(f.train) + len(f.dev) + len(f.test) for f in folds)
    dev_rows = max(len(f.dev) for f in folds)
    groups = width_batches(
        list(range(len(widths))), widths, lambda w: screen_bytes(w, rows, dev_rows, len(folds), classes), SCREEN_BYTES
    )
    start = time.perf_counter()
    screen = _screen(source, groups, fold_specific, folds, targets, classes, progress)
    screened = time.perf_counter() - start
    outputs = len(strengths) * (1 if classes == 2 else classes)
    ranked = contenders(screen.dev_correct)
    fitted = _affordable(ranked, widths, outputs, always)
    scored_by = tuple(LOGISTIC if i in fitted else SCREEN for i in range(len(widths)))
    scores = ProbeScores(
        screen.predictions,
        screen.per_fold,
        scored_by,
        len(set(ranked) - set(fitted)),
        dev_predictions=screen.dev_predictions,
    )
    start = time.perf_counter()
    # per candidate: float32 + two bf16 copies of the features (8 bytes x width), logits, softmax and gradients
    # (about 20 bytes x outputs)
    per_unit, extra = rows * 8, outputs * 20 // 8
    for batch in width_batches(fitted, widths, lambda w: per_unit * (w + extra), LOGISTIC_BYTES):
        side = 2 * per_unit * sum(widths[i] + extra for i in batch) <= LOGISTIC_BYTES and device.type == "cpu"
        # side by side on the CPU's cores; one fold at a time on one GPU
        shared = not fold_specific.intersection(batch)
        _logistic(source, batch, folds, targets, strengths, scores, progress, side, shared)
    return replace(scores, seconds=(screened, time.perf_counter() - start))
