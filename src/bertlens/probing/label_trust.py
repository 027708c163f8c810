"""How far a label-free choice can be trusted on a labelled task, and how many labels would settle the choice.

- agreement: Spearman correlation, across candidates, between each label-free score (turned so higher
  is better) and the labelled score, with a bootstrap interval over candidates;
- regret: the labelled score of the label-free pick minus that of the best candidate and of the
  last-layer default, with paired-bootstrap intervals over the labelled task's test examples;
- settling: the labelled choice made from 25 ... 500 labels (seeded draws, several repeats), and how
  often it lands within the full-label best's interval (tied with it), next to the label-free pick.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bertlens.metrics.bootstrap import Intervals, paired_difference, spearman
from bertlens.probing.label_free import COMPONENTS, LabelFreeScores, oriented

LABEL_COUNTS = (25, 50, 100, 200, 500)
REPEATS = 5
CANDIDATE_RESAMPLES = 1000


@dataclass(frozen=True)
class Agreement:
    score: str
    rho: float  # Spearman across candidates, label-free (higher = better) vs labelled
    low: float
    high: float


@dataclass(frozen=True)
class Regret:
    against: str  # 'best' or 'last layer'
    reference: str  # that candidate's name
    value: float  # labelled(pick) - labelled(reference)
    low: float
    high: float


@dataclass(frozen=True)
class Settling:
    labels: int
    draws: int
    within_best: float  # share of draws whose labelled choice is tied with the full-label best
    mean_regret: float  # mean labelled(choice) - labelled(best)


@dataclass(frozen=True)
class Trust:
    pick: str
    pick_within_best: bool  # the label-free pick is tied with the full-label best
    pick_not_below_last: bool | None  # at least as good as the last-layer default (None: no last layer was scored)
    agreements: tuple[Agreement, ...]
    regrets: tuple[Regret, ...]
    settling: tuple[Settling, ...] = ()
    candidates: int = 0  # how many candidates both sides score


def agreement(name: str, free: np.ndarray, labelled: np.ndarray, seed: int) -> Agreement:
    """Spearman of free [C] with labelled [C] over candidates where both are defined; a percentile interval from
    resampling candidates."""
    keep = np.isfinite(free) & np.isfinite(labelled)
    x, y = free[keep], labelled[keep]
    rho = float(spearman(x, y)) if len(x) > 2 else float("nan")
    rng = np.random.default_rng(seed)
    draws = [rng.integers(0, len(x), len(x)) for _ in range(CANDIDATE_RESAMPLES)] if len(x) > 2 else []
    samples = np.array([spearman(x[d], y[d]) for d in draws])
    samples = samples[np.isfinite(samples)]
    low, high = np.percentile(samples, [2.5, 97.5]) if len(samples) else (np.nan, np.nan)
    return Agreement(name, rho, float(low), float(high))


def label_free_trust(
    scores: LabelFreeScores,
    names: list[str],
    test: Intervals,
    outputs: np.ndarray,
    gold: np.ndarray | None,
    metric: str,
    last: str | None,
    hidden_size: int,
    seed: int = 0,
) -> Trust:
    """Compare the label-free scores with a labelled protocol over the candidates both score.

    names [C_l], test and outputs [C_l, n] are the labelled protocol's candidates, intervals and per-example outputs;
    `last` is the last-layer default's name (None when the sweep scored no last layer: no regret against it)."""
    index = {n: i for i, n in enumerate(names)}
    common = [k for k, c in enumerate(scores.candidates) if c.name in index]
    labelled = np.array([test.value[index[scores.candidates[k].name]] for k in common])
    agreements = [agreement(name, oriented(name, scores.value(name))[common], labelled, seed) for name in COMPONENTS]
    agreements.append(agreement("combined", scores.value("combined")[common], labelled, seed))
    pick = scores.candidates[scores.pick(hidden_size)].name
    regrets = []
    references = (("best", names[test.best]), ("last layer", last)) if last else (("best", names[test.best]),)
    for against, reference in references:
        pair = outputs[[index[reference], index[pick]]]
        value, low, high = paired_difference(pair, gold, metric, seed=seed)
        regrets.append(Regret(against, reference, value, low, high))
    return Trust(
        pick,
        bool(test.tied_with_best[index[pick]]),
        regrets[1].high >= 0 if last else None,
        tuple(agreements),
        tuple(regrets),
        candidates=len(common),
    )


def last_layer_default(names: list[str], num_layers: int) -> str | None:
    """The default a label-free pick is judged against: mean pooling of the last layer, else the last layer under
    another pooler, else None (the sweep's --layers left it out)."""
    single = [n for n in names if n.endswith(f"/L{num_layers}")]
    return f"mean/L{num_layers}" if f"mean/L{num_layers}" in single else (single[0] if single else None)


Chooser = Callable[[np.ndarray], int]  # labelled rows -> index of the candidate chosen from them


def settle(
    choose: Chooser, pool: np.ndarray, test: Intervals, seed: int = 0, counts=LABEL_COUNTS, repeats=REPEATS
) -> tuple[Settling, ...]:
    """For each label count below the pool's size: `repeats` seeded draws of that many rows, the choice made from each,
    and how often it is tied with the full-label best (test: the labelled protocol's intervals)."""
    rng = np.random.default_rng(seed)
    out = []
    for count in counts:
        if count >= len(pool):
            break
        picks = [choose(np.sort(rng.choice(pool, count, replace=False))) for _ in range(repeats)]
        within = float(np.mean([bool(test.tied_with_best[p]) for p in picks]))
        regret = float(np.mean([test.value[p] - test.value[test.best] for p in picks]))
        out.append(Settling(count, repeats, within, regret))
    return tuple(out)
