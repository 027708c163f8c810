"""The clustering protocol: k-means V-measure of each candidate's vectors against the labels, as MTEB scores it.

Labels only score, never choose: the recommendation stays with the probe.
"""

from __future__ import annotations

import numpy as np

from bertlens.metrics.bootstrap import intervals_from_samples
from bertlens.probing.candidates import candidate_features
from bertlens.probing.clustering import SUBSAMPLE_SIZE, SUBSAMPLES, v_measures

from .context import SweepContext, all_rows
from .protocol import Outcome, Plan
from .results import ProtocolResult


class Clustering:
    name = "clustering"
    reads = ""

    def plan(self, ctx: SweepContext) -> Plan:
        rows = self._rows(ctx)
        labels = np.unique(ctx.ex.targets[rows])
        size = min(len(rows), SUBSAMPLE_SIZE)
        return Plan(
            self.name,
            tuple(ctx.candidates(scalar_mix=False)),  # ScalarMix is learned from labels
            f"k-means (MiniBatchKMeans, k = {len(labels)} labels) on the raw vectors, V-measure against the "
            f"labels, as MTEB; mean and 2.5-97.5th percentiles over {SUBSAMPLES} seeded subsamples of "
            f"{size} texts, the same for every candidate (ties: paired over subsamples); "
            "labels only score, never choose: the recommendation stays with the probe",
        )

    @staticmethod
    def _rows(ctx: SweepContext) -> np.ndarray:
        """The texts scored: the test split, or every row under cross-validation."""
        return ctx.folds[0].test if not ctx.task.uses_cv else all_rows(ctx.folds)

    def run(self, ctx: SweepContext, plan: Plan) -> Outcome:
        rows = self._rows(ctx)
        labels = ctx.ex.targets[rows]
        candidates = plan.candidates
        samples = v_measures(
            lambda i, sample: candidate_features(ctx.bank, candidates[i], ctx.ex.a[rows[sample]]),
            len(candidates),
            labels,
            ctx.config.seed,
            ctx.progress,
        )  # [C, B]
        value = samples.mean(axis=1)
        result = ProtocolResult(
            self.name,
            "v_measure",
            candidates,
            value,
            intervals_from_samples(value, samples, ctx.config.confidence),
            min(len(rows), SUBSAMPLE_SIZE),
            {},
            plan.description,
            split_name=f"{'test' if not ctx.task.uses_cv else 'all'} subsamples",
        )
        return Outcome(result)
