"""Options shared by `finetune` and `compare`: the training loop's settings."""

from __future__ import annotations

import argparse

from bertlens.errors import BertlensError
from bertlens.training.loop import TrainConfig

DEFAULTS = TrainConfig()


def add_training_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("training")
    group.add_argument("--epochs", type=int, default=DEFAULTS.epochs, help="epochs (more for small sets: see --min-steps)")
    group.add_argument("--min-steps", type=int, default=DEFAULTS.min_steps, help="at least this many optimiser steps")
    group.add_argument("--lr", type=float, default=DEFAULTS.lr, help="encoder learning rate (AdamW)")
    group.add_argument("--head-lr", type=float, default=DEFAULTS.head_lr, help="head learning rate")
    group.add_argument("--batch-size", type=int, default=DEFAULTS.batch_size)
    group.add_argument("--warmup", type=float, default=DEFAULTS.warmup, help="fraction of steps with linear warmup")
    group.add_argument("--weight-decay", type=float, default=DEFAULTS.weight_decay)
    group.add_argument("--patience", type=int, default=DEFAULTS.patience, help="epochs without dev improvement before stopping")
    group.add_argument("--checkpoint-every", type=int, default=DEFAULTS.checkpoint_every, help="steps between checkpoints")


def training_config(args: argparse.Namespace, seed: int) -> TrainConfig:
    for flag in ("epochs", "batch_size", "patience", "checkpoint_every"):
        if getattr(args, flag) < 1:
            raise BertlensError(f"--{flag.replace('_', '-')} must be at least 1")
    if not 0 <= args.warmup < 1:
        raise BertlensError("--warmup must be in [0, 1)")
    if args.lr <= 0 or args.head_lr <= 0:
        raise BertlensError("--lr and --head-lr must be positive")
    return TrainConfig(lr=args.lr, head_lr=args.head_lr, epochs=args.epochs, min_steps=args.min_steps,
                       batch_size=args.batch_size, warmup=args.warmup, weight_decay=args.weight_decay,
                       patience=args.patience, seed=seed, checkpoint_every=args.checkpoint_every)
