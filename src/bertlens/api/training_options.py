"""What every command that trains is told, declared once: the optimiser, the schedule, early stopping, checkpoints
and precision. `training_config` checks them (in the caller's words) and makes the loop's `TrainConfig`.

The defaults here are `TrainConfig()`'s (fine-tuning: compare, finetune); a command with other defaults (pretrain,
contrastive, distill) states them in its own options class.
"""

from dataclasses import dataclass
from typing import Any, Literal

from bertlens.errors import OptionError, check_whole
from bertlens.training.config import CONTRASTIVE_DEFAULTS, DISTILL_DEFAULTS, PRETRAIN_DEFAULTS, TrainConfig

# no `from __future__ import annotations`: subclasses in other modules resolve these fields' types (api/sources.py)

DEFAULTS = TrainConfig()


@dataclass(frozen=True, kw_only=True)
class TrainingOptions:
    """How a run trains: AdamW, linear warmup and decay, early stopping on dev, checkpoints to resume from."""

    epochs: int = DEFAULTS.epochs
    """epochs (more for small sets: see --min-steps)"""
    min_steps: int = DEFAULTS.min_steps
    """at least this many optimiser steps"""
    lr: float = DEFAULTS.lr
    """encoder learning rate (AdamW)"""
    head_lr: float = DEFAULTS.head_lr
    """learning rate of the head and ScalarMix"""
    batch_size: int = DEFAULTS.batch_size
    """examples per optimiser step"""
    warmup: float = DEFAULTS.warmup
    """fraction of steps with linear warmup"""
    weight_decay: float = DEFAULTS.weight_decay
    """AdamW's decoupled weight decay"""
    patience: int = DEFAULTS.patience
    """epochs without dev improvement before stopping"""
    checkpoint_every: int = DEFAULTS.checkpoint_every
    """steps between checkpoints"""
    train_precision: Literal["fp32", "bf16", "auto"] = "fp32"
    """fp32, bf16 autocast for forward passes (fast only where the CPU has native bf16; weights stay fp32), or auto
    (bf16 there, fp32 elsewhere)"""
    restart: bool = False
    """discard an unfinished run in --out and start over"""


def training_config(options: Any, seed: int) -> TrainConfig:
    """The loop's settings from the options, each checked in the caller's words (OptionError)."""
    from bertlens.encoding.precision import choose_precision

    for name in ("epochs", "batch_size", "patience", "checkpoint_every"):
        check_whole(name, getattr(options, name), 1, "at least one")
    check_whole("min_steps", options.min_steps, 0, "0: the epochs alone decide")
    if not 0 <= options.warmup < 1:
        raise OptionError(f"{{warmup}} must be in [0, 1), got {options.warmup}", "warmup")
    for name in ("lr", "head_lr"):
        if getattr(options, name) <= 0:
            raise OptionError(f"{{{name}}} must be positive, got {getattr(options, name)}", name)
    if options.weight_decay < 0:
        raise OptionError(
            f"{{weight_decay}} must be 0 or more (AdamW's decay toward zero), got {options.weight_decay}",
            "weight_decay",
        )
    return TrainConfig(
        lr=options.lr,
        head_lr=options.head_lr,
        epochs=options.epochs,
        min_steps=options.min_steps,
        batch_size=options.batch_size,
        warmup=options.warmup,
        weight_decay=options.weight_decay,
        patience=options.patience,
        seed=seed,
        checkpoint_every=options.checkpoint_every,
        precision=choose_precision(options.train_precision)[0],
    )


@dataclass(frozen=True, kw_only=True)
class ContrastiveTraining(TrainingOptions):
    """SimCSE's schedule (Gao et al. 2021): lr 3e-5, batch 64, one epoch, no warmup, no weight decay."""

    epochs: int = CONTRASTIVE_DEFAULTS.epochs
    """epochs (more for small sets: see --min-steps)"""
    min_steps: int = CONTRASTIVE_DEFAULTS.min_steps
    """at least this many optimiser steps"""
    lr: float = CONTRASTIVE_DEFAULTS.lr
    """encoder learning rate (AdamW)"""
    batch_size: int = CONTRASTIVE_DEFAULTS.batch_size
    """examples per optimiser step (the in-batch negatives of each example)"""
    warmup: float = CONTRASTIVE_DEFAULTS.warmup
    """fraction of steps with linear warmup"""
    weight_decay: float = CONTRASTIVE_DEFAULTS.weight_decay
    """AdamW's decoupled weight decay"""


@dataclass(frozen=True, kw_only=True)
class DistillTraining(TrainingOptions):
    """Reimers & Gurevych 2020's distillation with MSE: lr 1e-4, batch 64, three epochs."""

    epochs: int = DISTILL_DEFAULTS.epochs
    """epochs (more for small sets: see --min-steps)"""
    min_steps: int = DISTILL_DEFAULTS.min_steps
    """at least this many optimiser steps"""
    lr: float = DISTILL_DEFAULTS.lr
    """student learning rate (AdamW)"""
    batch_size: int = DISTILL_DEFAULTS.batch_size
    """examples per optimiser step"""


@dataclass(frozen=True, kw_only=True)
class PretrainTraining(TrainingOptions):
    """Continued masked-LM pre-training, RoBERTa-style (Liu et al. 2019): lr 5e-5, batch 32, warmup 6%, one epoch,
    no early stopping."""

    epochs: int = PRETRAIN_DEFAULTS.epochs
    """epochs over the corpus"""
    min_steps: int = PRETRAIN_DEFAULTS.min_steps
    """at least this many optimiser steps"""
    head_lr: float = PRETRAIN_DEFAULTS.head_lr
    """learning rate of the masked-LM head"""
    batch_size: int = PRETRAIN_DEFAULTS.batch_size
    """packed rows per optimiser step"""
    warmup: float = PRETRAIN_DEFAULTS.warmup
    """fraction of steps with linear warmup"""
    patience: int = PRETRAIN_DEFAULTS.patience
    """evaluations without held-out improvement before stopping (by default never)"""
    checkpoint_every: int = PRETRAIN_DEFAULTS.checkpoint_every
    """steps between checkpoints"""
