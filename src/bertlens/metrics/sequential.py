"""When a sweep has seen enough rows: growing stages, looks planned before any data, a stopping rule on paired gaps.

The rule (a race in the sense of Maron & Moore 1994, with a union bound over a fixed number of looks as in
Bonferroni-adjusted group-sequential designs, Jennison & Turnbull 2000, ch. 2): the stage sizes are fixed by the data's
size alone (`stage_sizes`), so the number of looks K is known before the first one. Every interval at every look is
computed at level 1 - alpha / K (`look_confidence`). Then the chance that any interval of any look misses its
candidate's true score is at most K * alpha / K = alpha, whatever rule decides when to stop, so the intervals of the
look that stops keep at least 1 - alpha coverage under the repeated looks. The price is width: at K = 6 looks a 95%
statement needs 99.2% intervals (about 1.3x as wide for a normal statistic).

A look settles the choice (`judge`) when no candidate can be ahead of the pick by more than `tolerance`: the upper
end of every candidate's paired gap to the pick is at most `tolerance`. Candidates behind it for sure (the gap's
interval below 0) and candidates tied within the tolerance both satisfy it; more rows could still reorder those within
the tolerance, but not by more than the tolerance: the decision is settled. Why no "same pick at two looks" on top:
the union bound already covers every look, so with probability at least 1 - alpha no candidate beats the pick by more
than the tolerance at whichever look stops; a second look with the same pick adds nothing to that statement and costs
a stage of twice the rows (measured on the 20,000-text cloze: the gap rule held at 10,000 rows, with the pick changed
from 5,000, and the second condition sent the sweep to every row at 1.66x the time of `--rows all`).

That statement is about the scores at the rows read, and learning curves cross: a wider candidate gains more from
more training rows. So a look also projects each gap to every row (`projected_gaps`): the candidate's gain on the pick
per doubling of the rows since the previous look, carried on linearly in log(rows) to the total, is added to the
gap's upper end (a gain only: a candidate falling behind is not extrapolated away), and a first look, with no trend
to read, settles only when it holds every row. That catches curves that are already converging at the looks read
(tested on synthetic curves crossing at 7x the first look). It cannot see a gain that starts later: measured on the
100-class cloze with all-mpnet-base-v2, mean/concat_last4 (3,072 wide) trailed mean/mean_all (768 wide) by 0.022 at
20,000 rows and did not gain on it from 10,000, then won on all 100,000 rows by 0.080 (0.3654 against 0.2858). That
is why `--rows all` is the sweep's default and this rule is opt-in.
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
    projected_gap: float = float("nan")  # the largest gap's upper end projected to every row (`projected_gaps`)
    reaching: str = ""  # the candidate with that projected gap
    # each candidate's gap to the pick (point estimates): where the next look reads its trend from
    gaps: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Rule:
    """How looks are judged: the tolerance, every interval's level, and the paired bootstrap's draws and seed."""

    tolerance: float
    confidence: float
    resamples: int = 1000
    seed: int = 0
    total: int = 0  # the rows the choice is for (every row): gaps are projected there; 0 judges the rows read only


def projected_gaps(
    upper: np.ndarray, gaps: np.ndarray, names: list[str], pick: int, rows: int, previous: Look | None, total: int
) -> np.ndarray:
    """Each candidate's gap upper end [C] at `total` rows: `upper` plus its gain on the pick per doubling of the rows
    since `previous` (from the point gaps `gaps`), carried linearly in log2(rows) to `total`. Infinite where no trend
    can be read (no earlier look, or a candidate it did not score) while rows remain; `upper` once every row is read."""
    remaining = np.log2(total / rows) if total > rows else 0.0
    if remaining == 0.0:
        return upper
    before = dict(previous.gaps) if previous is not None else {}
    if names[pick] not in before or previous.rows >= rows:
        return np.full_like(upper, np.inf)
    trend = np.array([(g - (before[n] - before[names[pick]])) if n in before else np.inf for n, g in zip(names, gaps)])
    trend /= np.log2(rows / previous.rows)  # [C] gain on the pick per doubling
    return upper + np.maximum(trend, 0.0) * remaining


def judge(
    outputs: np.ndarray,
    gold: np.ndarray | None,
    metric: str,
    names: list[str],
    pick: int,
    rows: int,
    rule: Rule,
    previous: Look | None = None,
) -> Look:
    """One look at `rows` rows: settled when no candidate with defined outputs can be ahead of `names[pick]` by more
    than the tolerance, at the rows read and, with `rule.total`, projected to every row from the trend since
    `previous`."""
    eligible = np.isfinite(np.asarray(outputs, dtype=np.float64).reshape(len(names), -1)).all(axis=1)
    gaps, upper = gaps_to(
        outputs, gold, metric, pick, resamples=rule.resamples, seed=rule.seed, confidence=rule.confidence
    )
    known = tuple((names[i], float(gaps[i])) for i in np.flatnonzero(eligible & np.isfinite(gaps)))
    others = eligible & np.isfinite(upper)
    others[pick] = False
    if not others.any():
        return Look(rows, names[pick], True, float("-inf"), "", gaps=known)
    reach = projected_gaps(upper, gaps, names, pick, rows, previous, rule.total)  # [C]
    ahead = int(np.flatnonzero(others)[np.argmax(upper[others])])
    far = int(np.flatnonzero(others)[np.argmax(reach[others])])
    settled = bool(upper[ahead] <= rule.tolerance and reach[far] <= rule.tolerance)
    return Look(
        rows, names[pick], settled, float(upper[ahead]), names[ahead], projected_gap=float(reach[far]),
        reaching=names[far], gaps=known,
    )  # fmt: skip


def looks_until_settled(planned: tuple[int, ...], look_at: Callable[[int, Look | None], Look]) -> tuple[Look, ...]:
    """Look at each planned stage in turn (`look_at(rows, previous look)`) until one settles or the last is read."""
    looks: list[Look] = []
    for rows in planned:
        looks.append(look_at(rows, looks[-1] if looks else None))
        if looks[-1].settled:
            break
    return tuple(looks)
