"""Training settings as data, importable without torch: the loop's config, each command's starting point, and the
names of training options (the CLI's help reads these).
"""

from __future__ import annotations

from dataclasses import dataclass

MASK_UNITS = ("word", "token")  # masked-LM: whole words (all pieces of a chosen word) or single word pieces
PROJECTIONS = ("auto", "always", "never")  # distillation: when the student learns a linear map to the teacher
STUDENT_FORMS = "layers:0,2,4 (teacher layers to keep, 0-based), layers:K (K spread evenly) or config:SIZE|FILE.json"


@dataclass(frozen=True)
class TrainConfig:
    lr: float = 5e-5
    head_lr: float = 1e-3
    epochs: int = 4
    min_steps: int = 100  # small training sets run more epochs, so every size gets some updates
    batch_size: int = 16
    warmup: float = 0.1
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    patience: int = 2
    seed: int = 0
    checkpoint_every: int = 50
    # dev scored at an epoch's end once this many steps have passed since the last score (and at the schedule's
    # end); 0 scores every epoch. A small training set runs up to `min_steps` epochs of a step or a few, and scoring
    # dev after each costs more than training (recommend's fine-tuning step, workflows/fine_tune_step.py)
    eval_every: int = 0
    precision: str = "fp32"  # "bf16": forward passes under bfloat16 autocast (weights and optimizer stay fp32)


# continued masked-LM pre-training (DAPT/TAPT): RoBERTa-style warmup, no early stopping
PRETRAIN_DEFAULTS = TrainConfig(
    lr=5e-5,
    head_lr=5e-5,
    epochs=1,
    min_steps=0,
    batch_size=32,
    warmup=0.06,
    weight_decay=0.01,
    patience=1_000_000,
    checkpoint_every=200,
)

# SimCSE (Gao et al. 2021): lr 3e-5, batch 64, one epoch
CONTRASTIVE_DEFAULTS = TrainConfig(lr=3e-5, batch_size=64, epochs=1, min_steps=0, warmup=0.0, weight_decay=0.0)

# Reimers & Gurevych 2020 distil with MSE, lr 2e-5..1e-4, batch 64; a student from a subset of layers moves fast.
DISTILL_DEFAULTS = TrainConfig(
    lr=1e-4, head_lr=1e-3, epochs=3, min_steps=0, batch_size=64, warmup=0.1, weight_decay=0.01, patience=2
)
