"""The probe protocol: a linear model on each candidate's frozen vectors (or its pair features).

Class labels: L2 logistic regression, every candidate screened first by a ridge classifier, the logistic probe
fitted for the contenders and always for the last-layer default (probing/screened_probe.py). Scores: ridge
regression on the pair features, alpha chosen on dev Spearman (SentEval-style).
"""

from __future__ import annotations

import numpy as np
import torch

from bertlens.metrics.bootstrap import spearman
from bertlens.probing.candidates import Candidate
from bertlens.probing.cores import map_on_cores
from bertlens.probing.fold_ridge import ridge_over_folds
from bertlens.probing.label_trust import last_layer_default
from bertlens.probing.scalar_mix_fit import fit_classification_mix
from bertlens.probing.screened_probe import MAX_CONTENDERS, screened_probe
from bertlens.representation.pairs import pair_width

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
        if not kind.classes:
            return Plan(
                self.name,
                tuple(ctx.candidates(scalar_mix=False)),
                "ridge regression on (|u-v|, u*v), alpha chosen on dev Spearman (SentEval-style pair features)",
            )
        pool = ctx.candidates(scalar_mix=not kind.pair)  # a ScalarMix is learned for single texts only
        basis = "an inner 10% dev split per fold" if ctx.task.uses_cv else "dev"
        return Plan(
            self.name,
            tuple(pool),
            "L2 logistic regression on standardised features, C chosen on " + basis + "; every candidate "
            f"screened first by a ridge classifier (strength chosen on the same dev rows), the logistic probe fitted "
            f"for the contenders that can still tie with the best (up to {MAX_CONTENDERS}), the rest keep the "
            "screen's figures (each row names its probe)",
        )

    def run(self, ctx: SweepContext, plan: Plan) -> Outcome:
        candidates = list(plan.candidates)
        scored = classification_probe(ctx, candidates) if ctx.task.kind.classes else similarity_probe(ctx, candidates)
        return Outcome(scored_result(ctx, plan, scored))


def classification_probe(ctx: SweepContext, candidates: list[Candidate]) -> Scored:
    """Out-of-fold test predictions [C, n_test], dev accuracy per fold [F, C], ScalarMix weights, and which
    probe scored each candidate (a ridge screen of all, logistic probes for the contenders: screened_probe).

    ScalarMix weights are learned first (per fold, on a sample of the training rows); the mixed
    vectors then join every other candidate.
    """
    bank, ex, folds, config = ctx.bank, ctx.ex, ctx.folds, ctx.config
    rng = np.random.default_rng(config.seed)
    samples = [np.sort(rng.choice(len(f.train), min(len(f.train), MIX_EXAMPLES), replace=False)) for f in folds]
    mixed = [c for c in candidates if c.mixer == "scalar_mix"]

    def fit(job: tuple[int, Candidate]) -> np.ndarray:
        k, c = job
        rows = folds[k].train[samples[k]]
        return fit_classification_mix(bank.pooled(c.pooler, c.layers, ex.a[rows]), ex.targets[rows])

    jobs = [(k, c) for k in range(len(folds)) for c in mixed]
    learned_weights = iter(map_on_cores(fit, jobs))
    per_fold_mixes = [{c.name: next(learned_weights) for c in mixed} for _ in folds]
    every_row = np.arange(len(ex.targets))

    def source(ids: list[int], rows: np.ndarray | None, k: int) -> torch.Tensor:
        return ctx.stack(candidates, ids, every_row if rows is None else rows, per_fold_mixes[k])

    default = last_layer_default([c.name for c in candidates], bank.num_layers)
    width = bank.width
    scores = screened_probe(
        source,
        [c.width(width) if ex.b is None else pair_width(c.width(width), ctx.task.kind) for c in candidates],
        {i for i, c in enumerate(candidates) if c.mixer == "scalar_mix"},
        folds,
        ex.targets,
        config.strengths,
        ctx.progress,
        always=tuple(i for i, c in enumerate(candidates) if c.name == default),
    )
    learned: dict[str, list] = {}
    for mixes in per_fold_mixes:
        for name, weights in mixes.items():
            learned.setdefault(name, []).append(weights)
    mix_weights = {name: tuple(float(x) for x in np.mean(ws, axis=0)) for name, ws in learned.items()}
    dev_gold = ex.targets[np.concatenate([f.dev for f in folds])]
    return Scored(scores.predictions, scores.per_fold, mix_weights, scores, scores.dev_predictions, dev_gold)


def similarity_probe(ctx: SweepContext, candidates: list[Candidate]) -> Scored:
    """Ridge on (|u-v|, u*v) -> predicted score per test pair [C, n_test]; dev Spearman per fold [F, C].

    Every fold's fit comes from one pass over the pairs (probing/fold_ridge.py: the training rows'
    sufficient statistics are the whole table's minus the held-out rows'), alpha chosen on dev Spearman.
    """
    ex, folds = ctx.ex, ctx.folds
    outputs = np.zeros((len(candidates), sum(len(f.test) for f in folds)))
    per_fold = np.zeros((len(folds), len(candidates)))
    every_row = np.arange(len(ex.targets))
    chunks = []
    for width, ids in width_groups(candidates, ctx.bank.width).items():
        size = ridge_batch(len(every_row), pair_width(width, ctx.task.kind))
        chunks += [ids[s : s + size] for s in range(0, len(ids), size)]
    dev_rho = {}  # the last fold's dev Spearman [C, A], kept by choose()

    def choose(dev: torch.Tensor, rows: np.ndarray) -> np.ndarray:
        dev_rho["last"] = spearman(dev[..., 0].numpy(), ex.targets[rows][None, None])  # [C, A]
        return np.nanargmax(np.nan_to_num(dev_rho["last"], nan=-2), axis=1)

    for ids in chunks:
        features = ctx.stack(candidates, ids, every_row)  # [C, N, 2H]
        offset = 0
        for k, (fold, out) in enumerate(
            zip(folds, ridge_over_folds(features, ex.targets, folds, ctx.config.alphas, choose))
        ):
            picks = dev_rho["last"][np.arange(len(ids)), out.chosen]  # [C]
            outputs[ids, offset : offset + len(fold.test)] = out.test[..., 0].numpy()
            per_fold[k, ids] = picks
            offset += len(fold.test)
    return Scored(outputs, per_fold)
