"""Matplotlib helpers shared by reports: headless backend, annotated grids, atomic saves."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bertlens.io.atomic import atomic_path


def pyplot():
    """matplotlib.pyplot (imported late: it is slow to import) on the headless Agg backend, unless the caller has
    pyplot already (a notebook's inline backend is kept, so a returned Figure shows there)."""
    import sys

    import matplotlib

    if "matplotlib.pyplot" not in sys.modules:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def annotated_grid(ax, grid: np.ndarray, fmt: str = "{:.3f}"):
    """imshow a [rows, cols] grid with each value written in its cell; NaN cells say 'undefined'."""
    image = ax.imshow(grid, cmap="viridis", aspect="auto")
    middle = np.nanmean(grid) if np.isfinite(grid).any() else 0.0
    for (r, c), value in np.ndenumerate(grid):
        colour = (
            "white" if np.isfinite(value) and value <= middle else "black"
        )  # readable on dark, light and empty cells
        ax.text(
            c,
            r,
            "undefined" if np.isnan(value) else fmt.format(value),
            ha="center",
            va="center",
            color=colour,
            fontsize=8,
        )
    return image


def save_figure(fig, path: Path, dpi: int = 110) -> Path:
    """Save via a temporary file and rename, then close the figure."""
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=dpi)
    finally:
        pyplot().close(fig)
    return path
