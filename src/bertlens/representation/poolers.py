"""Poolers: pure functions (states [..., B, T, H], token mask [B, T]) -> [..., B, H].

Leading dimensions (for example a layer axis) broadcast, so one call pools every layer.
No pooler modifies its inputs; masks are combined into new tensors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from bertlens.errors import BertlensError
from bertlens.representation.choices import check_pooler


def token_mask(attention_mask: torch.Tensor, special_tokens_mask: torch.Tensor, include_special: bool) -> torch.Tensor:
    """Which positions a pooler may read: real tokens, optionally without [CLS]/[SEP]/<s>."""
    mask = attention_mask.bool()  # [B, T] (a new tensor; callers' masks stay untouched)
    if not include_special:
        mask = mask & ~special_tokens_mask.bool()  # [B, T]
    return mask


def cls_pool(states: torch.Tensor, mask: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
    """The first position ([CLS] / <s>), whatever the mask says: it is the token BERT trains for this."""
    return states[..., 0, :]  # [..., B, H]


def mean_pool(states: torch.Tensor, mask: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
    """Average over masked-in tokens; a row with no tokens pools to zeros."""
    m = mask.to(states.dtype).unsqueeze(-1)  # [B, T, 1]
    total = (states * m).sum(dim=-2)  # [..., B, H]
    count = m.sum(dim=-2).clamp(min=1e-9)  # [B, 1]
    return total / count  # [..., B, H]


def max_pool(states: torch.Tensor, mask: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
    """Element-wise max over masked-in tokens; a row with no tokens pools to zeros."""
    blocked = ~mask.unsqueeze(-1)  # [B, T, 1]
    pooled = states.masked_fill(blocked, float("-inf")).amax(dim=-2)  # [..., B, H]
    return torch.where(torch.isfinite(pooled), pooled, torch.zeros_like(pooled))


def attention_pool(states: torch.Tensor, mask: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
    """Weighted average with the model's own [CLS] attention (head-averaged), renormalised over the mask.

    Fixed weights make this pooler linear in the states, so it commutes with linear layer mixing.
    """
    if weights is None:
        raise BertlensError("the 'attention' pooler needs attention weights; encode with attentions='cls'")
    w = weights.to(states.dtype) * mask.to(states.dtype)  # [B, T]
    w = w / w.sum(dim=-1, keepdim=True).clamp(min=1e-12)  # [B, T]
    return (states * w.unsqueeze(-1)).sum(dim=-2)  # [..., B, H]


@dataclass(frozen=True)
class Pooler:
    """A pooling function and whether it is linear in the states with fixed weights.

    Linear poolers commute with linear layer mixing (mix(pool(x)) == pool(mix(x))), so the
    feature bank scores every layer mix of them exactly; for a non-linear pooler the bank
    pools each named layer mix at encode time instead. Adding a pooler is one entry here.
    """

    fn: Callable[..., torch.Tensor]
    linear: bool


POOLERS: dict[str, Pooler] = {
    "cls": Pooler(cls_pool, linear=True),
    "mean": Pooler(mean_pool, linear=True),
    "max": Pooler(max_pool, linear=False),
    "attention": Pooler(attention_pool, linear=True),
}
LINEAR_POOLERS = frozenset(name for name, pooler in POOLERS.items() if pooler.linear)


def pool(name: str, states: torch.Tensor, mask: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
    """Dispatch by pooler name (validated, with a suggestion for typos)."""
    return POOLERS[check_pooler(name)].fn(states, mask, weights)
