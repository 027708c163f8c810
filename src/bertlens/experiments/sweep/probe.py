"""The probe protocol: a linear model on each candidate's frozen vectors (or its pair features).

Class labels: L2 logistic regression, every candidate screened first by a ridge classifier, the logistic probe
fitted for the contenders and always for the last-layer default (probing/screened_probe.py). Scores of pairs:
ridge regression on the pair features, alpha chosen on dev Spearman (SentEval-style). A number per text: ridge
regression on the standardised vector, strength (relative to the training rows) chosen on dev Spearman. Label sets:
one-vs-rest logistic probes with per-label thresholds, screened by ridge (probing/label_set_probe.py). Which one runs
is the kind's target (PROBES); a ScalarMix is learned per fold for every single-text kind.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from bertlens.metrics.reported import label_set_figures, regression_figures
from bertlens.probing.candidates import Candidate
from bertlens.probing.cores import map_on_cores
from bertlens.probing.fold_ridge import REGRESSION_ALPHAS, ridge_over_folds, spearman_choice
from bertlens.probing.fused_curvature import describe as describe_curvature
from bertlens.probing.label_set_probe import label_set_probe
from bertlens.probing.label_trust import last_layer_default
from bertlens.probing.logistic import product_dtype, product_precision
from bertlens.probing.scalar_mix_fit import fit_classification_mix, fit_target_mix
from bertlens.probing.screened_probe import MAX_CONTENDERS, ProbeScores, screened_probe
from bertlens.representation.pairs import pair_width
from bertlens.tasks.kinds import CLASS, LABEL_SET, SCORE

from .context import SweepContext, width_groups
from .protocol import Outcome, Plan, Scored, scored_result

MIX_EXAMPLES = 1000  # training rows (a seeded sample) used to learn a classification ScalarMix
RIDGE_BYTES = 256 * 2**20  # pair features per batch of ridge fits; each fit is independent, so this only bounds memory
# the D x D systems a batch of fits holds at once, per entry of one candidate's system: the float32 sums, covariance
# and shifted copies and the float64 system and factor (measured with memray on STS-B at pair width 1536: 1.8 GB for
# a batch of 4). At base size these, not the features, bound the batch.
SYSTEM_BYTES_PER_ENTRY = 48


def ridge_batch(rows: int, width: int) -> int:
    """Candidates fitted together: their pair features [C, rows, width] (float32) and their [C, width, width]
    systems each within RIDGE_BYTES."""
    return max(1, min(RIDGE_BYTES // (rows * width * 4), RIDGE_BYTES // (width * width * SYSTEM_BYTES_PER_ENTRY)))


class Probe:
    name = "probe"
    reads = ""

    def plan(self, ctx: SweepContext) -> Plan:
        kind = ctx.task.kind
        pool = ctx.candidates(scalar_mix=not kind.pair)  # a ScalarMix is learned for single texts only
        basis = "an inner 10% dev split per fold" if ctx.task.uses_cv else "dev"
        described = DESCRIPTIONS[kind.target](kind.pair, basis)
        if kind.target != SCORE:  # the logistic probes: the precision of their products on this machine
            described += f"; the logistic probes' {product_precision(ctx.probe_device)}"
        if kind.target == LABEL_SET and product_dtype(ctx.probe_device) == torch.float32:  # and how their Newton
            # solves' curvature products ran (probing/fused_curvature.py)
            described += f"; {describe_curvature(ctx.probe_device)}"
        return Plan(self.name, tuple(pool), described)

    def run(self, ctx: SweepContext, plan: Plan) -> Outcome:
        scored = PROBES[ctx.task.kind.target](ctx, list(plan.candidates))
        return Outcome(scored_result(ctx, plan, scored))


def _class_description(pair: bool, basis: str) -> str:
    return (
        f"L2 logistic regression on standardised features, C chosen on {basis}; every candidate screened first by a "
        "ridge classifier (strength chosen on the same dev rows), the logistic probe fitted for the contenders that "
        f"can still tie with the best (up to {MAX_CONTENDERS}), the rest keep the screen's figures (each row names "
        "its probe)"
    )


def _score_description(pair: bool, basis: str) -> str:
    if pair:
        return "ridge regression on (|u-v|, u*v), alpha chosen on dev Spearman (SentEval-style pair features)"
    return (
        f"ridge regression on standardised features, strength (relative to the training rows) chosen on {basis} "
        "Spearman; Pearson, Kendall's tau, R2 and RMSE reported beside it"
    )


def _label_set_description(pair: bool, basis: str) -> str:
    return (
        f"one-vs-rest L2 logistic regression on standardised features, C and a threshold per label chosen on {basis} "
        f"(micro-F1, per-label F1); every candidate screened first by ridge onto the label matrix, the logistic probe "
        f"fitted for the best {MAX_CONTENDERS} and the model's own reading, the rest keep the screen's figures (each "
        "row names its probe); macro-F1, LRAP and subset accuracy reported beside it"
    )


DESCRIPTIONS = {CLASS: _class_description, SCORE: _score_description, LABEL_SET: _label_set_description}


@dataclass(frozen=True)
class _Mixes:
    """ScalarMix weights learned per fold: each fold's {name: weights}, their mean per name (for the recipe), and the
    wall seconds the fits took (a stage of the sweep's time)."""

    per_fold: list[dict]
    weights: dict[str, tuple[float, ...]]
    seconds: float


def _learned_mixes(ctx: SweepContext, candidates: list[Candidate], fit) -> _Mixes:
    """ScalarMix weights learned per fold on a seeded sample of its training rows (`fit(vectors [n, K, H], targets)`)."""
    start = time.perf_counter()
    bank, ex, folds = ctx.bank, ctx.ex, ctx.folds
    rng = np.random.default_rng(ctx.config.seed)
    samples = [np.sort(rng.choice(len(f.train), min(len(f.train), MIX_EXAMPLES), replace=False)) for f in folds]
    mixed = [c for c in candidates if c.mixer == "scalar_mix"]

    def learn(job: tuple[int, Candidate]) -> np.ndarray:
        k, c = job
        rows = folds[k].train[samples[k]]
        return fit(bank.pooled(c.pooler, c.layers, ex.a[rows]), ex.targets[rows])

    jobs = [(k, c) for k in range(len(folds)) for c in mixed]
    learned_weights = iter(map_on_cores(learn, jobs))
    per_fold = [{c.name: next(learned_weights) for c in mixed} for _ in folds]
    learned: dict[str, list] = {}
    for mixes in per_fold:
        for name, weights in mixes.items():
            learned.setdefault(name, []).append(weights)
    weights = {name: tuple(float(x) for x in np.mean(ws, axis=0)) for name, ws in learned.items()}
    return _Mixes(per_fold, weights, time.perf_counter() - start)


@dataclass(frozen=True)
class _ScreenedInputs:
    """What a screened probe of single texts (or pairs) is handed: features per fold, each candidate's width, the
    candidates whose features differ per fold, the one always fitted (the model's own reading), the mixes learned."""

    source: Callable[[list[int], np.ndarray | None, int], torch.Tensor]
    widths: list[int]
    fold_specific: set[int]
    always: tuple[int, ...]
    mixes: _Mixes

    def seconds(self, scores: ProbeScores) -> dict[str, float]:
        """The probe's stages: the mixes, then the screen and the logistic probes."""
        return {
            "mixes_seconds": self.mixes.seconds,
            **dict(zip(("screen_seconds", "logistic_seconds"), scores.seconds)),
        }


def _screened_inputs(ctx: SweepContext, candidates: list[Candidate], fit) -> _ScreenedInputs:
    """ScalarMix learned per fold by `fit`, then (ids, rows or None for all, fold) -> features [C, n, D] with each
    fold's mix applied, and what else the screened probes read."""
    bank, ex = ctx.bank, ctx.ex
    mixes = _learned_mixes(ctx, candidates, fit)
    every_row = np.arange(len(ex.targets))

    def source(ids: list[int], rows: np.ndarray | None, k: int) -> torch.Tensor:
        return ctx.stack(candidates, ids, every_row if rows is None else rows, mixes.per_fold[k])

    width = bank.width
    widths = [c.width(width) if ex.b is None else pair_width(c.width(width), ctx.task.kind) for c in candidates]
    default = last_layer_default([c.name for c in candidates], bank.num_layers)
    return _ScreenedInputs(
        source,
        widths,
        {i for i, c in enumerate(candidates) if c.mixer == "scalar_mix"},
        tuple(i for i, c in enumerate(candidates) if c.name == default),
        mixes,
    )


def classification_probe(ctx: SweepContext, candidates: list[Candidate]) -> Scored:
    """Out-of-fold test predictions [C, n_test], dev accuracy per fold [F, C], ScalarMix weights, and which
    probe scored each candidate (a ridge screen of all, logistic probes for the contenders: screened_probe).

    ScalarMix weights are learned first (per fold, on a sample of the training rows); the mixed
    vectors then join every other candidate.
    """
    ex, folds = ctx.ex, ctx.folds
    given = _screened_inputs(ctx, candidates, fit_classification_mix)
    scores = screened_probe(
        given.source, given.widths, given.fold_specific, folds, ex.targets, ctx.config.strengths, ctx.progress,
        given.always, ctx.probe_device,
    )  # fmt: skip
    dev_gold = ex.targets[np.concatenate([f.dev for f in folds])]
    return Scored(
        scores.predictions, scores.per_fold, given.mixes.weights, scores, scores.dev_predictions, dev_gold,
        seconds=given.seconds(scores),
    )  # fmt: skip


def label_set_probe_scored(ctx: SweepContext, candidates: list[Candidate]) -> Scored:
    """Label sets [n, L]: predicted sets [C, n_test, L] of one-vs-rest probes, dev micro-F1 per fold [F, C]."""
    ex, folds = ctx.ex, ctx.folds
    given = _screened_inputs(ctx, candidates, fit_target_mix)
    scores, cut_from = label_set_probe(
        given.source, given.widths, given.fold_specific, folds, ex.targets, ctx.config.strengths, ctx.progress,
        given.always, ctx.probe_device,
    )  # fmt: skip
    dev_gold = ex.targets[np.concatenate([f.dev for f in folds])]
    reported = label_set_figures(scores.predictions, cut_from, ctx.test_gold)
    return Scored(
        scores.predictions, scores.per_fold, given.mixes.weights, scores, scores.dev_predictions, dev_gold, reported,
        given.seconds(scores),
    )  # fmt: skip


def _ridge_jobs(ctx: SweepContext, candidates: list[Candidate], per_fold_mixes: list[dict]) -> list[tuple]:
    """(candidate ids, fold ids, mixes) of each ridge fit: shared candidates by width within the memory budget over
    every fold; a ScalarMix (learned per fold) fold by fold."""
    kind, rows, folds = ctx.task.kind, len(ctx.ex.targets), list(range(len(ctx.folds)))
    jobs = []
    for width, ids in width_groups(candidates, ctx.bank.width).items():
        shared = [i for i in ids if candidates[i].mixer != "scalar_mix"]
        size = ridge_batch(rows, pair_width(width, kind) if kind.pair else width)
        jobs += [(shared[s : s + size], folds, {}) for s in range(0, len(shared), size)]
        jobs += [([i], [k], per_fold_mixes[k]) for i in ids if i not in shared for k in folds]
    return jobs


def score_probe(ctx: SweepContext, candidates: list[Candidate]) -> Scored:
    """Ridge -> predicted score per test example [C, n_test]; dev Spearman per fold [F, C].

    Pairs (similarity): on (|u-v|, u*v), the strength from the kind's alpha grid. One text (regression): on its
    vector (and a per-fold ScalarMix), strengths relative to the training rows, with the dev predictions kept (the
    choice's own evidence) and Pearson, Kendall's tau, R2, RMSE reported. Every fold's fit comes from one pass over
    the rows (probing/fold_ridge.py: the training rows' sufficient statistics are the whole table's minus the
    held-out rows'), alpha chosen on dev Spearman.
    """
    ex, folds, regression = ctx.ex, ctx.folds, not ctx.task.kind.pair
    mixes = _learned_mixes(ctx, candidates, fit_target_mix)  # none for pairs: no ScalarMix
    alphas, relative = (REGRESSION_ALPHAS, True) if regression else (ctx.config.alphas, False)
    test_at = np.cumsum([0] + [len(f.test) for f in folds])
    dev_at = np.cumsum([0] + [len(f.dev) for f in folds])
    outputs = np.zeros((len(candidates), test_at[-1]))
    dev_outputs = np.zeros((len(candidates), dev_at[-1]))
    per_fold = np.zeros((len(folds), len(candidates)))
    every_row = np.arange(len(ex.targets))
    picked = {}  # the fold's chosen strength: dev Spearman [C] and dev predictions [C, n_dev], kept by choose()

    def choose(dev: torch.Tensor, rows: np.ndarray) -> np.ndarray:
        chosen, rho = spearman_choice(dev, ex.targets[rows])
        picked.update(rho=rho, dev=dev[np.arange(len(chosen)), chosen, :, 0].cpu().numpy())
        return chosen

    start = time.perf_counter()
    for ids, fold_ids, fold_mixes in _ridge_jobs(ctx, candidates, mixes.per_fold):
        features = ctx.stack(candidates, ids, every_row, fold_mixes).to(ctx.probe_device)  # [C, N, D], moved once
        fits = ridge_over_folds(features, ex.targets, [folds[k] for k in fold_ids], alphas, choose, relative=relative)
        for k, out in zip(fold_ids, fits, strict=True):
            outputs[ids, test_at[k] : test_at[k + 1]] = out.test[..., 0].cpu().numpy()
            per_fold[k, ids] = picked["rho"]
            dev_outputs[ids, dev_at[k] : dev_at[k + 1]] = picked["dev"]
    seconds = {"mixes_seconds": mixes.seconds} if mixes.per_fold[0] else {}
    seconds["ridge_seconds"] = time.perf_counter() - start
    if not regression:
        return Scored(outputs, per_fold, seconds=seconds)
    dev_gold = ex.targets[np.concatenate([f.dev for f in folds])]
    reported = regression_figures(outputs, ctx.test_gold)
    return Scored(outputs, per_fold, mixes.weights, None, dev_outputs, dev_gold, reported, seconds)


# The probe of each kind of target (tasks/kinds.py): a new kind of an existing target needs nothing here
PROBES = {CLASS: classification_probe, SCORE: score_probe, LABEL_SET: label_set_probe_scored}
