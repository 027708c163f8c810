"""The labelled choice a user with few labels would make: which candidate wins on just these rows.

Classification: 5-fold cross-validated accuracy of a ridge classifier (one-hot targets, standardised
features, strength FEW_LABEL_ALPHA) on the drawn rows, solved in its dual form (an m x m system:
with m <= 500 labels that is far cheaper than the D x D primal of a 1536-wide candidate; the same
fit, Hastie et al., Elements of Statistical Learning, eq. 3.44 and ex. 18.6). Regression: the same ridge onto the
number, scored by the Spearman of its out-of-fold predictions. Similarity: the
Spearman correlation of the pair cosine with the gold scores on the drawn pairs (no training).
Ties go to the narrower candidate, then the earlier one.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.model_selection import KFold

from bertlens.features.bank import Bank
from bertlens.metrics.bootstrap import spearman
from bertlens.metrics.geometry import row_cosine
from bertlens.probing.candidates import Candidate, candidate_features

FEW_LABEL_ALPHA = 10.0
FEW_LABEL_FOLDS = 5


def _narrowest_best(scores: np.ndarray, widths: list[int]) -> int:
    finite = np.where(np.isfinite(scores), np.round(scores, 9), -np.inf)
    return min(range(len(scores)), key=lambda i: (-finite[i], widths[i], i))


def dual_ridge_accuracy(x: torch.Tensor, y: np.ndarray, classes: int, seed: int) -> np.ndarray:
    """Cross-validated accuracy [C] of a ridge classifier on x [C, m, D] float32 with labels y [m]."""
    m = x.shape[1]
    onehot = torch.zeros(m, classes)  # [m, K]
    onehot[torch.arange(m), torch.as_tensor(y, dtype=torch.long)] = 1.0
    predicted = _dual_ridge_out_of_fold(x, onehot, seed).argmax(dim=-1)  # [C, m]
    return (predicted == torch.as_tensor(y)[None]).double().mean(dim=1).numpy()


def dual_ridge_spearman(x: torch.Tensor, y: np.ndarray, seed: int) -> np.ndarray:
    """Cross-validated Spearman [C] of ridge regression on x [C, m, D] float32 onto numbers y [m]."""
    target = torch.as_tensor(np.asarray(y, dtype=np.float32))[:, None]  # [m, 1]
    return spearman(_dual_ridge_out_of_fold(x, target, seed)[..., 0].numpy(), np.asarray(y)[None])


def _dual_ridge_out_of_fold(x: torch.Tensor, targets: torch.Tensor, seed: int) -> torch.Tensor:
    """Out-of-fold ridge outputs [C, m, K] (centred targets [m, K]) of standardised x [C, m, D], dual form."""
    m = x.shape[1]
    folds = min(FEW_LABEL_FOLDS, m)
    out = torch.zeros(x.shape[0], m, targets.shape[1], dtype=torch.float64)
    for train, test in KFold(folds, shuffle=True, random_state=seed).split(np.arange(m)):
        tr, te = torch.as_tensor(train), torch.as_tensor(test)
        mean = x[:, tr].mean(dim=1, keepdim=True)  # [C, 1, D]
        scale = x[:, tr].std(dim=1, keepdim=True).clamp(min=1e-6)  # [C, 1, D]
        a = (x[:, tr] - mean) / scale  # [C, t, D]
        b = (x[:, te] - mean) / scale  # [C, s, D]
        target = targets[tr] - targets[tr].mean(dim=0)  # [t, K]
        gram = torch.bmm(a, a.transpose(1, 2)).double()  # [C, t, t]
        eye = FEW_LABEL_ALPHA * torch.eye(len(train), dtype=torch.float64)
        factor = torch.linalg.cholesky(gram + eye)  # [C, t, t]: positive definite (alpha > 0)
        dual = torch.cholesky_solve(target.double().expand(x.shape[0], -1, -1).contiguous(), factor)  # [C, t, K]
        out[:, te] = torch.bmm(torch.bmm(b, a.transpose(1, 2)).double(), dual)  # [C, s, K]
    return out


def _ridge_chooser(bank: Bank, candidates: list[Candidate], text_rows: np.ndarray, targets: np.ndarray, score):
    """rows -> index of the candidate with the best `score(x [C, m, D], targets of the rows) -> [C]`."""
    widths = [c.width(bank.width) for c in candidates]

    def choose(rows: np.ndarray) -> int:
        scores = np.zeros(len(candidates))
        for width in sorted(set(widths)):
            ids = [i for i, w in enumerate(widths) if w == width]
            x = torch.from_numpy(np.stack([candidate_features(bank, candidates[i], text_rows[rows]) for i in ids]))
            scores[ids] = score(x, targets[rows])  # [m, D] per candidate -> [C]
        return _narrowest_best(scores, widths)

    return choose


def classification_chooser(
    bank: Bank, candidates: list[Candidate], text_rows: np.ndarray, targets: np.ndarray, classes: int, seed: int = 0
):
    """rows (into text_rows/targets) -> index of the candidate a ridge classifier cross-validated on them prefers."""
    return _ridge_chooser(bank, candidates, text_rows, targets, lambda x, y: dual_ridge_accuracy(x, y, classes, seed))


def regression_chooser(bank: Bank, candidates: list[Candidate], text_rows: np.ndarray, targets, seed: int = 0):
    """rows -> index of the candidate whose cross-validated ridge predictions rank the numbers best (Spearman)."""
    return _ridge_chooser(bank, candidates, text_rows, targets, lambda x, y: dual_ridge_spearman(x, y, seed))


def similarity_chooser(
    bank: Bank, candidates: list[Candidate], first: np.ndarray, second: np.ndarray, targets: np.ndarray
):
    """rows -> index of the candidate whose pair cosine has the highest Spearman with the gold scores on them."""
    widths = [c.width(bank.width) for c in candidates]

    def choose(rows: np.ndarray) -> int:
        scores = np.array(
            [
                spearman(
                    row_cosine(candidate_features(bank, c, first[rows]), candidate_features(bank, c, second[rows])),
                    targets[rows],
                )
                for c in candidates
            ]
        )
        return _narrowest_best(scores, widths)

    return choose
