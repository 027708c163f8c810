"""When a sweep has seen enough rows: growing stages, looks planned before any data, a stopping rule on paired gaps.

The rule (a race in the sense of Maron & Moore 1994, with a union bound over a fixed number of looks as in
Bonferroni-adjusted group-sequential designs, Jennison & Turnbull 2000, ch. 2): the stage sizes are fixed by the data's
size alone (`stage_sizes`), so the number of looks K is known before the first one. Every interval at every look is
computed at level 1 - alpha / K (`look_confidence`). Then the chance that any interval of any look misses its
candidate's true score is at most K * alpha / K = alpha, whatever rule decides when to stop, so the intervals of the
look that stops keep at least 1 - alpha coverage under the repeated looks. The price is width: at K = 6 looks a 95%
statement needs 99.2% intervals (about 1.3x as wide for a normal statistic).

A look settles the choice (`settles`) when no candidate can be ahead of the pick by more than `tolerance`: the upper
end of every candidate's paired gap to the pick is at most `tolerance`. Candidates behind it for sure (the gap's
interval below 0) and candidates tied within the tolerance both satisfy it; more rows could still reorder those within
the tolerance, but not by more than the tolerance: the decision is settled. Why no "same pick at two looks" on top:
the union bound already covers every look, so with probability at least 1 - alpha no candidate beats the pick by more
than the tolerance at whichever look stops; a second look with the same pick adds nothing to that statement and costs
a stage of twice the rows (measured on the 20,000-text cloze: the gap rule held at 10,000 rows, with the pick changed
from 5,000, and the second condition sent the sweep to every row at 1.66x the time of `--rows all`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bertlens.metrics.bootstrap import gaps_to

ALPHA = 0.05  # the reported intervals' miss rate over all looks together (95% intervals)
FIRST_STAGE = 10_000  # rows in the first look: at 5,000 a stage's probes cost 1.8x as much a row as at 20,000-100,000
# (12.8 against 7 ms on the 100-class cloze: the ScalarMix fits and the logistic contenders do not shrink with the rows)
SETTLE_TOLERANCE = 0.005  # how far ahead of the pick another candidate may still be when the choice is settled


LAST_STEP = 1.5  # the look before all rows has at most total / 1.5 of them: a look at 10,000 of 10,001 rows is waste


def stage_sizes(total: int, first: int = FIRST_STAGE) -> tuple[int, ...]:
    """Rows at each look: first, 2 x first, 4 x first, ... while at most total / LAST_STEP, then `total` (one look
    when `total` is under LAST_STEP x first)."""
    if total < 1 or first < 1:
        raise ValueError(f"stage sizes need total >= 1 and first >= 1, got {total} and {first}")
    sizes = []
    size = first
    while size * LAST_STEP <= total:
        sizes.append(size)
        size *= 2
    return (*sizes, total)


def look_confidence(looks: int, alpha: float = ALPHA) -> float:
    """Each look's interval level, so that all `looks` together miss with probability at most `alpha`."""
    if looks < 1:
        raise ValueError(f"looks must be at least 1, got {looks}")
    return 1.0 - alpha / looks


@dataclass(frozen=True)
class Look:
    """One look at the rows so far: how many, the pick, whether the choice settled there, and the gap that decided."""

    rows: int
    pick: str
    settled: bool
    largest_gap: float  # the upper end of the largest paired gap (candidate - pick) at the look's level
    ahead: str  # the candidate with that gap ("" when the pick stands alone)
    seconds: float = 0.0


def settles(
    outputs: np.ndarray,
    gold: np.ndarray | None,
    metric: str,
    pick: int,
    eligible: np.ndarray,
    *,
    tolerance: float,
    confidence: float,
    resamples: int,
    seed: int,
) -> tuple[bool, float, int]:
    """(whether no eligible candidate can be ahead of `pick` by more than `tolerance`, the largest upper end of the
    paired gaps, the candidate with it or -1). `outputs` [C, n]; `eligible` [C] bool: the candidates the rule reads
    (those with a defined score)."""
    _, upper = gaps_to(outputs, gold, metric, pick, resamples=resamples, seed=seed, confidence=confidence)
    others = eligible.copy()
    others[pick] = False
    others &= np.isfinite(upper)
    if not others.any():
        return True, float("-inf"), -1
    ahead = int(np.flatnonzero(others)[np.argmax(upper[others])])
    return bool(upper[ahead] <= tolerance), float(upper[ahead]), ahead


@dataclass(frozen=True)
class Rule:
    """How looks are judged: the tolerance, every interval's level, and the paired bootstrap's draws and seed."""

    tolerance: float
    confidence: float
    resamples: int = 1000
    seed: int = 0


def judge(
    outputs: np.ndarray, gold: np.ndarray | None, metric: str, names: list[str], pick: int, rows: int, rule: Rule
) -> Look:
    """One look at `rows` rows: `settles` for the pick `names[pick]` among the candidates with defined outputs."""
    eligible = np.isfinite(np.asarray(outputs, dtype=np.float64).reshape(len(names), -1)).all(axis=1)
    ok, gap, ahead = settles(
        outputs, gold, metric, pick, eligible, tolerance=rule.tolerance, confidence=rule.confidence,
        resamples=rule.resamples, seed=rule.seed,
    )  # fmt: skip
    return Look(rows, names[pick], ok, gap, names[ahead] if ahead >= 0 else "")


def looks_until_settled(planned: tuple[int, ...], look_at: Callable[[int], Look]) -> tuple[Look, ...]:
    """Look at each planned stage in turn (`look_at(rows)`) until one settles or the last is read."""
    looks: list[Look] = []
    for rows in planned:
        looks.append(look_at(rows))
        if looks[-1].settled:
            break
    return tuple(looks)
