"""Fit every candidate at every strength once, choose each candidate's strength on dev.

The one C grid and the one choose-on-dev rule of the package (sweep, compare, longdoc and the
linguistic suite all call this). Ties go to the first strength in the grid (the strongest
regularisation), as numpy's argmax does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from bertlens.probing.logistic import C_GRID, dev_accuracy_search, fit_logistic


@dataclass(frozen=True)
class Selected:
    """Per candidate: the chosen strength's index [C], its dev accuracy [C] and its predictions on the rest [C, n_rest]."""

    chosen: np.ndarray
    dev_accuracy: np.ndarray
    predictions: np.ndarray
    dev_predictions: np.ndarray | None = None  # [C, n_dev] at the chosen strength (the choice's own evidence)


def logistic_on_dev(
    features: torch.Tensor,
    n_train: int,
    n_dev: int,
    y_train: np.ndarray,
    y_dev: np.ndarray,
    strengths: tuple[float, ...] = C_GRID,
    candidate_strengths: np.ndarray | None = None,
) -> Selected:
    """features [C, n_train + n_dev + n_rest, D] (rows in that order): fit on train, choose on dev, predict the rest."""
    dev = dev_accuracy_search(features[:, n_train : n_train + n_dev], y_dev)  # searches the strength path
    fit = fit_logistic(features[:, :n_train], y_train, strengths, candidate_strengths=candidate_strengths, dev=dev)
    held_out = fit.predict(features[:, n_train:]).cpu().numpy()  # [C, R, n_dev + n_rest]
    dev_acc = (held_out[..., :n_dev] == y_dev).mean(axis=-1)  # [C, R]
    dev_acc[:, ~fit.fitted_mask()] = -1.0  # strengths a searched path left unfitted are never chosen
    chosen = dev_acc.argmax(axis=1)  # [C]
    picks = np.arange(len(chosen))
    return Selected(chosen, dev_acc[picks, chosen], held_out[picks, chosen, n_dev:], held_out[picks, chosen, :n_dev])
