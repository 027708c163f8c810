"""Masked-language-model inputs: dynamic masking, whole words or single tokens, 80/10/10.

BERT (Devlin et al. 2019): 15% of the tokens are chosen for prediction; of those, 80% become
[MASK], 10% a random token, 10% stay as they are. Whole-word masking (the BERT authors' 2019
release; Cui et al. 2019): a word's pieces are chosen together. Here each word is chosen
independently with probability `rate`, so every token is chosen with probability `rate` and
about `rate` of the tokens are masked, whatever the word lengths. Special tokens are never
chosen. Masks are drawn afresh for every batch (dynamic masking, Liu et al. 2019).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from bertlens.training.config import MASK_UNITS

IGNORE = -100  # label of a position the loss does not score (PyTorch's cross-entropy default)


@dataclass(frozen=True)
class Masked:
    inputs: torch.Tensor  # [B, T] ids with [MASK] / random / kept tokens at the chosen positions
    labels: torch.Tensor  # [B, T] the original id at chosen positions, IGNORE elsewhere


def replacement_ids(tokenizer) -> torch.Tensor:
    """The ids a '10% random' position may take: the whole vocabulary but the special tokens."""
    specials = set(tokenizer.all_special_ids)
    return torch.tensor([i for i in range(len(tokenizer)) if i not in specials])


def word_index(word_start: torch.Tensor) -> torch.Tensor:
    """[B, T] bool (True where a token begins a word) -> [B, T] word number within its row."""
    return torch.cumsum(word_start.long(), dim=1) - 1  # [B, T]


def mask_tokens(
    input_ids: torch.Tensor,
    maskable: torch.Tensor,
    word_start: torch.Tensor,
    *,
    mask_id: int,
    random_ids: torch.Tensor,
    generator: torch.Generator | None = None,
    rate: float = 0.15,
    unit: str = "word",
) -> Masked:
    """input_ids, maskable, word_start: [B, T]. `maskable` is False for special and padding positions.

    unit='word' chooses whole words (all pieces of a chosen word), 'token' single word pieces.
    generator None draws from torch's global generator, which training checkpoints save: resume stays exact.
    random_ids [V']: the ids a '10% random' position may take (the vocabulary without specials).
    """
    if unit not in MASK_UNITS:
        raise ValueError(f"mask unit must be one of {MASK_UNITS}, got {unit!r}")
    batch, length = input_ids.shape
    if unit == "word":
        words = word_index(word_start | ~maskable)  # a special token is a word of its own, never chosen
        word_draw = torch.rand((batch, length), generator=generator)  # [B, W <= T]: one draw per word
        chosen = word_draw.gather(1, words.clamp(min=0)) < rate  # [B, T]
    else:
        chosen = torch.rand((batch, length), generator=generator) < rate  # [B, T]
    chosen &= maskable
    action = torch.rand((batch, length), generator=generator)  # [B, T]: 80% mask, 10% random, 10% keep
    replacement = random_ids[torch.randint(len(random_ids), (batch, length), generator=generator)]  # [B, T]
    inputs = torch.where(chosen & (action < 0.8), torch.full_like(input_ids, mask_id), input_ids)
    inputs = torch.where(chosen & (action >= 0.8) & (action < 0.9), replacement, inputs)
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, IGNORE))
    return Masked(inputs, labels)
