"""Class scores from a linear layer: one logit for two classes (a sigmoid, as scikit-learn's logistic regression),
one logit per class otherwise (a softmax). Probes and fine-tuning heads share this convention."""

from __future__ import annotations

import torch


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
