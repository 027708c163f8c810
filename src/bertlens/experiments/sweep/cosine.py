"""The cosine protocol for pair scores: cosine similarity of the two vectors against the gold score.

Nothing is trained for the plain candidates; a ScalarMix (to make cosine track the gold score) and a
post-processing (on the vectors of both sides of the training pairs) are fitted inside each fold on that fold's
training pairs only. The recipe then gets them fitted on all rows it may use: the training pairs with given
splits; every row under cross-validation (mix weights: the mean over folds).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bertlens.errors import BertlensError
from bertlens.features.bank import Bank
from bertlens.metrics.bootstrap import spearman
from bertlens.metrics.geometry import row_cosine
from bertlens.probing.candidates import Candidate, candidate_features
from bertlens.probing.cores import map_on_cores
from bertlens.probing.scalar_mix_fit import fit_similarity_mix
from bertlens.representation.postprocess import PostProcessor, parse_steps
from bertlens.tasks.splits import Fold

from .context import SweepContext, all_rows
from .protocol import Outcome, Plan, Scored, scored_result


class Cosine:
    name = "cosine"
    reads = ""

    def plan(self, ctx: SweepContext) -> Plan:
        candidates = ctx.candidates()
        post = [replace(c, post=ctx.config.postprocess) for c in ctx.candidates(scalar_mix=False)]
        per_fold = " of each fold" if ctx.task.uses_cv else ""
        return Plan(
            self.name,
            tuple(candidates + (post if ctx.config.postprocess else [])),
            "cosine similarity of the two vectors vs gold score (no training); ScalarMix weights and "
            "post-processing fitted on the training pairs" + per_fold,
        )

    def run(self, ctx: SweepContext, plan: Plan) -> Outcome:
        return Outcome(scored_result(ctx, plan, cosine_scores(ctx, list(plan.candidates))))


def cosine_scores(ctx: SweepContext, candidates: list[Candidate]) -> Scored:
    """Cosine similarity per test pair [C, n_test]; dev Spearman per fold [F, C]; ScalarMix learned on train pairs;
    the recipe's fitted post-processors left in ctx.fitted by name."""
    bank, ex, folds, config = ctx.bank, ctx.ex, ctx.folds, ctx.config
    scores = np.zeros((len(candidates), sum(len(f.test) for f in folds)))
    per_fold = np.zeros((len(folds), len(candidates)))
    dev_cosines = np.full((len(candidates), sum(len(f.dev) for f in folds)), np.nan)  # the choosing pairs' cosines
    mix_weights = {}
    for i, candidate in enumerate(candidates):
        offset, dev_offset, learned = 0, 0, []
        if candidate.mixer == "scalar_mix":  # one fit per fold, independent: run them on every core

            def fit(fold: Fold, c: Candidate = candidate) -> np.ndarray:
                u, v = (bank.pooled(c.pooler, c.layers, side[fold.train]) for side in (ex.a, ex.b))
                return fit_similarity_mix(u, v, ex.targets[fold.train], seed=config.seed)

            learned = map_on_cores(fit, folds)
        for k, fold in enumerate(folds):
            mix = learned[k] if learned else None
            transform = fit_post(bank, candidate, np.concatenate([ex.a[fold.train], ex.b[fold.train]]))
            if transform is None:  # e.g. constant vectors ([CLS] at layer 0): the candidate is undefined
                scores[i], per_fold[:, i] = np.nan, np.nan
                break

            def feats(rows, side, c=candidate, t=transform, m=mix):
                return t(candidate_features(bank, c, side[rows], m))

            scores[i, offset : offset + len(fold.test)] = row_cosine(feats(fold.test, ex.a), feats(fold.test, ex.b))
            dev = row_cosine(feats(fold.dev, ex.a), feats(fold.dev, ex.b))
            per_fold[k, i] = spearman(dev, ex.targets[fold.dev])
            dev_cosines[i, dev_offset : dev_offset + len(fold.dev)] = dev
            offset, dev_offset = offset + len(fold.test), dev_offset + len(fold.dev)
        if learned:
            mix_weights[candidate.name] = tuple(float(x) for x in np.mean(learned, axis=0))
        if candidate.post and np.isfinite(per_fold[:, i]).all():
            recipe_rows = folds[0].train if len(folds) == 1 else all_rows(folds)
            processor = fit_post(
                bank, candidate, np.concatenate([ex.a[recipe_rows], ex.b[recipe_rows]]), processor=True
            )
            if processor is not None:
                ctx.fitted[candidate.name] = processor
    dev_gold = ex.targets[np.concatenate([f.dev for f in folds])]
    return Scored(scores, per_fold, mix_weights, validation_outputs=dev_cosines, validation_gold=dev_gold)


def fit_post(bank: Bank, candidate: Candidate, text_rows: np.ndarray, processor: bool = False):
    """The candidate's post-processing fitted on the given texts' vectors: a transform (identity without
    post-processing), the PostProcessor itself when `processor`, or None when it cannot be fitted."""
    if not candidate.post:
        return (lambda x: x) if not processor else None
    try:
        fitted = PostProcessor.fit(
            parse_steps(candidate.post), candidate_features(bank, candidate, np.unique(text_rows))
        )
    except BertlensError:
        return None
    return fitted if processor else fitted.transform
