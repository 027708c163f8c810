"""Student-t intervals over seeds (runs are few, so a bootstrap over them would be meaningless)."""

from __future__ import annotations

import numpy as np
from scipy import stats


def t_interval(values: np.ndarray) -> tuple[float, float, float]:
    """Mean and 95% Student-t interval over seeds (the interval collapses to the mean for one seed)."""
    mean = float(np.mean(values))
    if len(values) < 2:
        return mean, mean, mean
    half = float(stats.t.ppf(0.975, len(values) - 1) * np.std(values, ddof=1) / np.sqrt(len(values)))
    return mean, mean - half, mean + half
