"""The figures reported beside a kind's main metric, per candidate: what MTEB's regression and multi-label
evaluators print, computed by the libraries made for them (scipy, scikit-learn).

regression (predictions [C, n] of gold [n]): Pearson, Kendall's tau-b, R2, RMSE;
label sets (predictions [C, n, L] bool, ranking scores [C, n, L] of gold [n, L] bool): macro-F1, label ranking
average precision (LRAP, from the scores), subset accuracy (every label of a text right).
LRAP is computed here, vectorised over texts (`ranking_average_precision`, tested equal to scikit-learn's): its
per-text loop took a second per candidate on GoEmotions' 5,427 test texts, 49 s of a sweep whose probes take 110 s.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.stats import ConstantInputWarning, kendalltau, pearsonr
from sklearn.metrics import f1_score, mean_squared_error, r2_score

Figures = dict[str, np.ndarray]  # metric name -> [C]


def regression_figures(predictions: np.ndarray, gold: np.ndarray) -> Figures:
    """Pearson, Kendall's tau, R2 and RMSE of each candidate's predictions [C, n]."""
    out: dict[str, list[float]] = {"pearson": [], "kendall_tau": [], "r2": [], "rmse": []}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantInputWarning)  # a constant prediction: NaN correlations
        for row in predictions:
            out["pearson"].append(float(pearsonr(row, gold).statistic))
            out["kendall_tau"].append(float(kendalltau(row, gold).statistic))
            out["r2"].append(float(r2_score(gold, row)))
            out["rmse"].append(float(np.sqrt(mean_squared_error(gold, row))))
    return {name: np.array(values) for name, values in out.items()}


def ranking_average_precision(truth: np.ndarray, scores: np.ndarray) -> float:
    """Label ranking average precision (Tsoumakas, Katakis & Vlahavas 2010) of truth [n, L] bool by scores [n, L]:
    for each relevant label, the share of the labels scored at least as high that are relevant, averaged over the
    text's relevant labels, then over texts. A text with no relevant label, or only relevant ones, scores 1 (as
    scikit-learn's `label_ranking_average_precision_score`); ties count as ranked above."""
    at_least = scores[:, None, :] >= scores[:, :, None]  # [n, L, L]: label k scores at least label j's
    rank = at_least.sum(-1)  # [n, L]
    relevant_rank = (at_least & truth[:, None, :]).sum(-1)  # [n, L]
    relevant = truth.sum(-1)  # [n]
    precision = np.where(truth, relevant_rank / rank, 0.0).sum(-1) / np.maximum(relevant, 1)  # [n]
    precision[(relevant == 0) | (relevant == truth.shape[1])] = 1.0
    return float(precision.mean())


def label_set_figures(predictions: np.ndarray, scores: np.ndarray, gold: np.ndarray) -> Figures:
    """Macro-F1, LRAP and subset accuracy of each candidate's label sets [C, n, L] (LRAP from scores [C, n, L])."""
    truth = gold.astype(bool)
    out: dict[str, list[float]] = {"macro_f1": [], "lrap": [], "subset_accuracy": []}
    for predicted, score in zip(predictions.astype(bool), scores, strict=True):
        out["macro_f1"].append(float(f1_score(truth, predicted, average="macro", zero_division=0)))
        out["lrap"].append(ranking_average_precision(truth, score))
        out["subset_accuracy"].append(float((predicted == truth).all(axis=1).mean()))
    return {name: np.array(values) for name, values in out.items()}
