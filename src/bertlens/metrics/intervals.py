"""Student-t intervals over seeds (runs are few, so a bootstrap over them would be meaningless)."""

from __future__ import annotations

import numpy as np
from scipy import stats

# the values each metric can take: an interval is cut to them (a t-interval over two seeds can reach far outside)
METRIC_RANGES = {"accuracy": (0.0, 1.0), "spearman": (-1.0, 1.0), "v_measure": (0.0, 1.0)}


def t_interval(values: np.ndarray, bounds: tuple[float, float] | None = None) -> tuple[float, float, float]:
    """Mean and 95% Student-t interval over seeds (the interval collapses to the mean for one seed), cut to `bounds`
    (the metric's range, METRIC_RANGES) when given: [-0.15, 1.13] for an accuracy says only [0, 1]."""
    mean = float(np.mean(values))
    if len(values) < 2:
        return mean, mean, mean
    half = float(stats.t.ppf(0.975, len(values) - 1) * np.std(values, ddof=1) / np.sqrt(len(values)))
    low, high = mean - half, mean + half
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return mean, low, high
