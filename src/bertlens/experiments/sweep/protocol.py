"""The one interface every sweep protocol implements, and the scoring step that fitted protocols share.

A protocol says which candidates it scores and how (`plan`), then scores them from the shared context
(`run`) into a ProtocolResult: the rows the reports write. Fitted protocols (the probe, cosine) produce
per-example outputs and per-fold validation scores (`Scored`) and hand them to `scored_result`, which puts
intervals on them (and, under cross-validation, cross-validates the choice itself). A new protocol is one
module with one such object, and its name in `registry.PROTOCOLS` and in its task kinds' `protocols`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from bertlens.metrics.bootstrap import bootstrap, bootstrap_with_extra, point_estimates
from bertlens.probing.candidates import Candidate
from bertlens.probing.screened_probe import MAX_CONTENDERS, ProbeScores

from .choice import mean_over_folds, nested_selection
from .context import SweepContext
from .results import ProtocolResult
from .stage_times import BOOTSTRAP


@dataclass(frozen=True)
class Plan:
    """Which candidates a protocol scores, and how it scores them (the report's description)."""

    protocol: str
    candidates: tuple[Candidate, ...]
    description: str


@dataclass(frozen=True)
class Scored:
    """A fitted protocol's raw figures, before intervals."""

    outputs: np.ndarray  # [C, n_test] per-example outputs (predictions, cosines, scores)
    per_fold: np.ndarray  # [F, C] validation score per fold
    mix_weights: dict[str, tuple[float, ...]] = field(default_factory=dict)  # ScalarMix weights, for the recipe
    screened: ProbeScores | None = None  # a screened probe: which probe scored each candidate, and its timings
    validation_outputs: np.ndarray | None = None  # [C, n_dev] each candidate's outputs on the choosing rows
    validation_gold: np.ndarray | None = None  # [n_dev] their targets
    reported: dict[str, np.ndarray] = field(default_factory=dict)  # figures beside the metric: name -> [C]
    seconds: dict[str, float] = field(default_factory=dict)  # wall time of the fit's stages (stage_times.py keys)


@dataclass(frozen=True)
class Outcome:
    """What running a protocol leaves: its rows, and what later steps read (label-free scores, for trust)."""

    result: ProtocolResult
    extra: object | None = None


class SweepProtocol(Protocol):
    name: str
    reads: str  # what it needs beyond the bank's pooled vectors ("" for nothing), for the docs and the report

    def plan(self, ctx: SweepContext) -> Plan: ...

    def run(self, ctx: SweepContext, plan: Plan) -> Outcome: ...


def scored_result(ctx: SweepContext, plan: Plan, scored: Scored) -> ProtocolResult:
    """Intervals on a fitted protocol's outputs (and, under cross-validation, the choice's own)."""
    task, config, gold = ctx.task, ctx.config, ctx.test_gold
    screened = scored.screened
    scored_by = screened.scored_by if screened else ()
    start = time.perf_counter()
    description = plan.description
    if screened and screened.capped:
        description += (
            f"; {screened.capped} more candidates were within the screen's tie margin but kept its figures "
            f"(at most {MAX_CONTENDERS} logistic fits)"
        )
    selection, selected = None, ()
    if task.uses_cv:  # the choice, cross-validated, on the candidates' own resamples
        scores = point_estimates(scored.outputs, gold, task.metric)
        own = (ctx.own_reading, scored.validation_outputs, scored.validation_gold, task.metric, config.seed)
        chosen_outputs, selected = nested_selection(
            scored.per_fold, scored.outputs, ctx.folds, plan.candidates, ctx.bank, scores, scored_by, own
        )
        intervals, selection = bootstrap_with_extra(
            scored.outputs, chosen_outputs[None], gold, task.metric, resamples=config.resamples, seed=config.seed,
            confidence=config.confidence,
        )  # fmt: skip
    else:
        intervals = bootstrap(
            scored.outputs, gold, task.metric, resamples=config.resamples, seed=config.seed,
            confidence=config.confidence,
        )  # fmt: skip
    timings = {**scored.seconds, f"{plan.protocol}{BOOTSTRAP}": time.perf_counter() - start}
    result = ProtocolResult(
        plan.protocol,
        task.metric,
        tuple(plan.candidates),
        mean_over_folds(scored.per_fold),
        intervals,
        len(gold),
        scored.mix_weights,
        description,
        len(ctx.folds),
        selection,
        selected,
        scored_by,
        timings,
    )
    return replace(
        result,
        reported=scored.reported,
        outputs=scored.outputs,
        gold=gold,
        validation_outputs=scored.validation_outputs,
        validation_gold=scored.validation_gold,
    )
