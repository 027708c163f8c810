"""Several models in one sweep: every model's candidates scored on the same rows, folds, inner dev splits and
resamples, one leaderboard across models, and the choice of a (model, reading) by quality and price.

A candidate is a (model, reading) pair. The folds and dev splits are drawn from the task and the seed alone (never
from a model), and the bootstrap's resamples from the number of rows and the seed alone, so each model's sweep here is
its single-model sweep (its rows equal) and an interval between two models' candidates is paired: stacking their
per-example outputs and resampling rows once gives the differences' distribution (Efron & Tibshirani 1993; Dror et al.
2018). The choice is a pure function of the picks, the choosing data's outputs, the prices and the user's budget
(`choose_model`), stated beside the runner-up it passed over.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bertlens.errors import BertlensError, OptionError, literal
from bertlens.metrics.bootstrap import Intervals, bootstrap, paired_difference

from .price import Price
from .results import SweepResult

PREFER = ("speed", "quality")


@dataclass(frozen=True)
class Budget:
    """What the user asked of the price: a floor on texts/s, a ceiling on one text's latency, and what wins among
    the candidates tied with the best (speed: the cheapest; quality: the best, ties to the cheaper)."""

    min_texts_per_second: float | None = None
    max_latency_ms: float | None = None
    prefer: str = "speed"

    def meets(self, price: Price) -> bool:
        fast = self.min_texts_per_second is None or price.texts_per_s >= self.min_texts_per_second
        quick = self.max_latency_ms is None or price.ms_one_text <= self.max_latency_ms
        return fast and quick

    def describe(self) -> str:
        parts = [f"at least {self.min_texts_per_second:g} texts/s" if self.min_texts_per_second else "",
                 f"at most {self.max_latency_ms:g} ms for one text" if self.max_latency_ms else ""]  # fmt: skip
        return " and ".join(p for p in parts if p)


@dataclass(frozen=True)
class Pick:
    """One model's own pick (its sweep's recommendation), as the choice across models sees it."""

    model: str
    candidate: str
    validation: float  # its choosing score (dev, or the mean inner-dev score over the folds)
    own_reading: str  # the model's own reading (its trained pooling of its last layer)
    price: Price


@dataclass(frozen=True)
class ModelChoice:
    """Which pick the rule chose, which tied with the best, and the sentences the report states."""

    chosen: int
    tied: tuple[bool, ...]  # per pick: tied with the best eligible pick on the choosing data
    eligible: tuple[bool, ...]  # per pick: meets the budget
    passed_over: int | None  # the pick the rule passed over (the best when a cheaper tie won, or the cheaper tie)
    rule: str


def check_budget(budget: Budget) -> None:
    """The budget's own values, before any work: positive numbers and a known preference."""
    for name in ("min_texts_per_second", "max_latency_ms"):
        value = getattr(budget, name)
        if value is not None and not (np.isfinite(value) and value > 0):
            raise OptionError(f"{{{name}}} must be a positive number, got {value!r}", name)
    if budget.prefer not in PREFER:
        raise OptionError(f"{{prefer}} {budget.prefer!r} is not one of {', '.join(PREFER)}", "prefer")


def tied_with_best(best: int, outputs: np.ndarray | None, gold, metric: str, seed: int) -> np.ndarray:
    """[M] bool: whether each pick's score on the choosing data is within the paired 95% interval of the best's
    (the best's gain over it, resampled over the same rows, includes 0); without choosing outputs, only the best."""
    tied = np.zeros(0 if outputs is None else len(outputs), dtype=bool)
    if outputs is None:
        return tied
    for i in range(len(outputs)):
        if i == best:
            tied[i] = True
            continue
        pair = outputs[[i, best]]
        if not np.isfinite(pair.astype(float)).all():
            continue
        _, low, _ = paired_difference(pair, gold, metric, resamples=1000, seed=seed)
        tied[i] = low <= 0
    return tied


def meets_any(budget: Budget, prices: list[Price]) -> None:
    """One line when no model meets the budget (checked on the measured prices, before any sweep)."""
    if any(budget.meets(p) for p in prices):
        return
    fastest = max(prices, key=lambda p: p.texts_per_s)
    quickest = min(prices, key=lambda p: p.ms_one_text)
    raise OptionError(
        f"no model meets the budget ({budget.describe()}): the fastest, {literal(fastest.model)}, measured "
        f"{fastest.texts_per_s:,.0f} texts/s and {literal(quickest.model)} {quickest.ms_one_text:.1f} ms for one "
        f"text on {literal(fastest.machine)}; relax {{min_texts_per_second}} / {{max_latency_ms}} or add a smaller "
        "model",
        "min_texts_per_second",
        "max_latency_ms",
    )


def choose_model(picks: list[Pick], outputs: np.ndarray | None, gold, metric: str, budget: Budget, seed: int):
    """The (model, reading) to use: among the picks that meet the budget, the best by its choosing score; with
    `prefer` speed (the default) the fastest of those tied with it on the choosing data (`outputs` [M, n_dev] of the
    picks, in the picks' order), with quality the best itself. A budget no pick meets is one line."""
    meets_any(budget, [p.price for p in picks])
    eligible = np.array([budget.meets(p.price) for p in picks])
    kept = [int(i) for i in np.flatnonzero(eligible)]  # the picks that meet the budget, in the picks' order
    best = min(kept, key=lambda i: (-picks[i].validation, -picks[i].price.texts_per_s))
    tied = np.zeros(len(picks), dtype=bool)
    if outputs is not None:
        tied[kept] = tied_with_best(kept.index(best), outputs[kept], gold, metric, seed)
    tied[best] = True
    fastest_tied = max(np.flatnonzero(tied), key=lambda i: picks[i].price.texts_per_s)
    budget_words = f" among those that meet the budget ({budget.describe()})" if budget.describe() else ""
    if budget.prefer == "quality":
        chosen = best
        others = [i for i in np.flatnonzero(tied) if i != best]
        passed = max(others, key=lambda i: picks[i].price.texts_per_s) if others else None
        rule = (f"the best by its choosing score{budget_words} (prefer quality); a cheaper model tied with it on the "
                "choosing data is named beside it")  # fmt: skip
    else:
        chosen = int(fastest_tied)
        passed = best if chosen != best else None
        rule = (f"the fastest (texts/s here) of the models tied with the best on the choosing data (a paired 95% "
                f"interval of their difference includes 0){budget_words}; quality beyond the tie is not bought with "
                "speed (--prefer quality takes the best)")  # fmt: skip
    return ModelChoice(int(chosen), tuple(bool(t) for t in tied), tuple(bool(e) for e in eligible), passed, rule)


@dataclass(frozen=True)
class CrossModelResult:
    """Every model's sweep, their prices, the leaderboard across models, and the choice."""

    results: tuple[SweepResult, ...]
    prices: tuple[Price, ...]
    names: tuple[tuple[str, str], ...]  # (model, candidate) of every leaderboard row, model by model
    board: Intervals  # the test (or out-of-fold) intervals of every row, paired across models
    picks: tuple[Pick, ...]
    choice: ModelChoice
    runner_up: str  # the passed-over pick's gain or loss against the chosen one, at what speed
    notes: tuple[str, ...]

    @property
    def chosen(self) -> SweepResult:
        return self.results[self.choice.chosen]

    @property
    def metric(self) -> str:
        return self.results[0].main.metric


def _stacked(results: list[SweepResult], field: str) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Every model's main-protocol outputs of `field` ('outputs' or 'validation_outputs') stacked, and their gold
    (the same rows for every model, or an internal error: pairing would be broken)."""
    mains = [r.main for r in results]
    arrays = [getattr(m, field) for m in mains]
    if any(a is None for a in arrays):
        return None, None
    gold_field = "gold" if field == "outputs" else "validation_gold"
    golds = [getattr(m, gold_field) for m in mains]
    if golds[0] is not None and any(g is None or not np.array_equal(g, golds[0]) for g in golds):
        raise BertlensError("the models' sweeps scored different rows; the pairing across models is broken (a bug)")
    return np.concatenate(arrays, axis=0), golds[0]


def cross_leaderboard(results: list[SweepResult], resamples: int, seed: int) -> tuple[tuple, Intervals]:
    """(model, candidate) names and the intervals of every model's main-protocol rows, from one set of resamples."""
    outputs, gold = _stacked(results, "outputs")
    if outputs is None:
        raise BertlensError(f"protocol '{results[0].main.protocol}' keeps no per-example outputs to pair across models")
    names = tuple((r.model, c.name) for r in results for c in r.main.candidates)
    return names, bootstrap(outputs, gold, results[0].main.metric, resamples=resamples, seed=seed)


def runner_up_words(results, picks, choice: ModelChoice, resamples: int, seed: int) -> str:
    """'all-mpnet-base-v2 mean/mean_all: +0.0380 [+0.0210, +0.0540] spearman at 0.17x the speed of ...': the
    passed-over pick against the chosen one on the test (or out-of-fold) rows, paired."""
    if choice.passed_over is None:
        return ""
    chosen, other = choice.chosen, choice.passed_over
    rows = []
    for i in (chosen, other):
        main = results[i].main
        rows.append(main.outputs[[c.name for c in main.candidates].index(picks[i].candidate)])
    gold, metric = results[chosen].main.gold, results[chosen].main.metric
    gain, low, high = paired_difference(np.stack(rows), gold, metric, resamples=resamples, seed=seed)
    speed = picks[other].price.texts_per_s / picks[chosen].price.texts_per_s
    return (f"{picks[other].model} {picks[other].candidate}: {gain:+.4f} [{low:+.4f}, {high:+.4f}] {metric} at "
            f"{speed:.2f}x the speed of {picks[chosen].model} {picks[chosen].candidate}")  # fmt: skip


def combine(results: list[SweepResult], prices: list[Price], budget: Budget, resamples: int, seed: int):
    """The leaderboard across models and the choice, from each model's finished sweep and its measured price."""
    names, board = cross_leaderboard(results, resamples, seed)
    picks = [Pick(r.model, r.recommended.name, float(r.main.validation[_row(r)]), _own(r), p)
             for r, p in zip(results, prices, strict=True)]  # fmt: skip
    validation, gold = _stacked(results, "validation_outputs")
    pick_rows = None
    if validation is not None:
        offsets = np.cumsum([0] + [len(r.main.candidates) for r in results])
        pick_rows = validation[[offsets[m] + _row(r) for m, r in enumerate(results)]]
    choice = choose_model(picks, pick_rows, gold, results[0].main.metric, budget, seed)
    notes = ()
    if validation is None:
        notes = ("the choosing data keeps no per-example outputs here: ties across models are not tested, the best "
                 "choosing score wins",)  # fmt: skip
    words = runner_up_words(results, picks, choice, resamples, seed)
    return CrossModelResult(tuple(results), tuple(prices), names, board, tuple(picks), choice, words, notes)


def _row(result: SweepResult) -> int:
    """The recommended candidate's row in the main protocol."""
    return [c.name for c in result.main.candidates].index(result.recommended.name)


def _own(result: SweepResult) -> str:
    """The model's own reading (its trained pooling of the last layer)."""
    from bertlens.models import own_pooler, resolve_model

    ref = resolve_model(result.model)
    return f"{own_pooler(ref)}/L{ref.num_layers}"
