"""Class scores from a linear layer: one logit for two classes (a sigmoid, as scikit-learn's logistic regression),
one logit per class otherwise (a softmax); a set of labels: one sigmoid per label, each label predicted from its own
threshold chosen on dev (label_thresholds). Probes and fine-tuning heads share these conventions."""

from __future__ import annotations

import numpy as np
import torch

THRESHOLDS = tuple(float(t) for t in np.round(np.arange(0.05, 0.951, 0.05), 2))  # a label's cut-offs to choose from


def logit_width(classes: int) -> int:
    return 1 if classes == 2 else classes


def logit_loss(logits: torch.Tensor, targets: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """logits [..., K], targets [...] class ids -> cross-entropy (binary when K = 1)."""
    if logits.shape[-1] == 1:
        return torch.nn.functional.binary_cross_entropy_with_logits(
            logits[..., 0], targets.to(logits.dtype), reduction=reduction
        )
    return torch.nn.functional.cross_entropy(logits, targets, reduction=reduction)


def predict_classes(logits: torch.Tensor) -> torch.Tensor:
    """logits [..., K] -> class ids [...]."""
    return (logits[..., 0] > 0).long() if logits.shape[-1] == 1 else logits.argmax(dim=-1)


def label_thresholds(scores: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """scores [..., n, L], gold [n, L] -> each label's threshold [..., L] from THRESHOLDS with the best F1 on these
    rows (ties: the highest threshold)."""
    best = np.full(scores.shape[:-2] + scores.shape[-1:], -1.0)
    chosen = np.full(best.shape, THRESHOLDS[0])
    truth = gold.astype(bool)
    for t in THRESHOLDS:
        predicted = scores >= t  # [..., n, L]
        tp = (predicted & truth).sum(-2)
        denominator = predicted.sum(-2) + truth.sum(-2)  # 2 TP + FP + FN
        f1 = np.where(denominator > 0, 2 * tp / np.maximum(denominator, 1), 0.0)  # [..., L]
        better = f1 >= best
        best = np.where(better, f1, best)
        chosen = np.where(better, t, chosen)
    return chosen
