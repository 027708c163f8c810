"""Contrastive fine-tuning of the encoder for similarity: unsupervised SimCSE and supervised pairs.

Both minimise InfoNCE with in-batch negatives over the recipe's sentence vectors u, v [B, D]:
    loss = CE(cos(u_i, v_j) / tau, target j = i)
- SimCSE, unsupervised (Gao et al. 2021): v is the same sentence encoded again; the only noise
  is dropout, which makes the two passes differ (tau = 0.05).
- Supervised (multiple-negatives ranking; Henderson et al. 2017): u_i, v_i are an
  (anchor, positive) pair, e.g. STS-B pairs scored 4 or more; the other positives in the batch
  are the negatives.
The learning rate warms up and decays linearly; the data order and dropout are seeded.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from bertlens.encoding.encoder import Encoder
from bertlens.errors import BertlensError
from bertlens.representation.recipe import Recipe
from bertlens.training.loop import lr_factor, sentence_vectors


@dataclass(frozen=True)
class ContrastiveConfig:
    lr: float = 3e-5
    batch_size: int = 64
    epochs: int = 1
    temperature: float = 0.05
    warmup: float = 0.0
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    seed: int = 0


@dataclass(frozen=True)
class ContrastiveResult:
    steps: int
    first_loss: float
    last_loss: float  # mean over the last 10% of steps
    seconds: float


def info_nce(u: torch.Tensor, v: torch.Tensor, temperature: float) -> torch.Tensor:
    """u, v [B, D]: cross-entropy of each u_i picking v_i among all v_j by cosine / temperature."""
    similarity = torch.nn.functional.cosine_similarity(u[:, None], v[None], dim=-1) / temperature  # [B, B]
    return torch.nn.functional.cross_entropy(similarity, torch.arange(len(u)))


def train_contrastive(
    encoder: Encoder,
    recipe: Recipe,
    anchors: Sequence[str],
    positives: Sequence[str] | None,
    config: ContrastiveConfig = ContrastiveConfig(),
    on_step: Callable[[int, int, float], None] | None = None,
) -> ContrastiveResult:
    """positives=None: unsupervised SimCSE on `anchors`; else supervised on (anchor, positive) pairs."""
    if recipe.pooler == "attention":
        raise BertlensError("contrastive training with the 'attention' pooler is not supported; use cls, mean or max")
    if positives is not None and len(positives) != len(anchors):
        raise ValueError("anchors and positives must pair up")
    if len(anchors) < 2:
        raise BertlensError(f"contrastive training needs at least 2 examples, got {len(anchors)}")
    start = time.perf_counter()
    torch.manual_seed(config.seed)
    model = encoder.model
    a = encoder.tokenize(list(anchors))
    b = encoder.tokenize(list(positives)) if positives is not None else a
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)
    per_epoch = math.ceil(len(anchors) / config.batch_size)
    total = per_epoch * config.epochs
    warmup = int(config.warmup * total)
    losses = []
    model.train()
    step = 0
    for epoch in range(config.epochs):
        order = torch.randperm(len(anchors), generator=torch.Generator().manual_seed(config.seed * 100_003 + epoch)).numpy()
        for index in range(per_epoch):
            rows = np.sort(order[index * config.batch_size : (index + 1) * config.batch_size])
            if len(rows) < 2:
                continue  # a single example has no in-batch negative
            for group in optimizer.param_groups:
                group["lr"] = config.lr * lr_factor(step, total, warmup)
            u = sentence_vectors(encoder, recipe, a, rows)  # [B, D], dropout on
            v = sentence_vectors(encoder, recipe, b, rows)  # [B, D]: a second dropout mask, or the positives
            loss = info_nce(u, v, config.temperature)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)
            optimizer.step()
            losses.append(float(loss.detach()))
            step += 1
            if on_step:
                on_step(step, total, losses[-1])
    model.eval()
    tail = max(1, len(losses) // 10)
    return ContrastiveResult(step, losses[0], float(np.mean(losses[-tail:])), time.perf_counter() - start)
