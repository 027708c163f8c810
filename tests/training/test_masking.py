"""Masking statistics on a seeded batch: 15% chosen, 80/10/10, whole words together, specials never."""

from __future__ import annotations

import pytest
import torch

from bertlens.training.masking import IGNORE, mask_tokens

MASK, VOCAB = 103, 5000


def batch(rows: int = 64, length: int = 128, seed: int = 0):
    """Random ids 1000..VOCAB, words of 1-3 pieces, [CLS]/[SEP] at the ends, a padded tail on odd rows."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1000, VOCAB, (rows, length), generator=g)
    starts = torch.rand((rows, length), generator=g) < 0.5
    starts[:, 1] = True
    maskable = torch.ones((rows, length), dtype=torch.bool)
    maskable[:, 0] = maskable[:, -1] = False  # [CLS], [SEP]
    maskable[1::2, -20:] = False  # padding
    ids[:, 0], ids[:, -1] = 101, 102
    return ids, maskable, starts


def run(unit: str, seed: int = 1):
    ids, maskable, starts = batch()
    masked = mask_tokens(
        ids,
        maskable,
        starts,
        mask_id=MASK,
        random_ids=torch.arange(1000, VOCAB),
        generator=torch.Generator().manual_seed(seed),
        unit=unit,
    )
    return ids, maskable, starts, masked


@pytest.mark.parametrize("unit", ["word", "token"])
def test_fifteen_percent_chosen_and_80_10_10(unit):
    ids, maskable, _, masked = run(unit)
    chosen = masked.labels != IGNORE
    share = chosen.sum().item() / maskable.sum().item()
    assert abs(share - 0.15) < 0.01
    assert not (chosen & ~maskable).any()  # specials and padding never chosen
    assert torch.equal(masked.labels[chosen], ids[chosen])
    as_mask = (masked.inputs == MASK) & chosen
    kept = (masked.inputs == ids) & chosen
    randomised = chosen & ~as_mask & ~kept
    n = chosen.sum().item()
    assert abs(as_mask.sum().item() / n - 0.8) < 0.02
    assert abs(kept.sum().item() / n - 0.1) < 0.02  # (a random token equal to the original counts as kept: rare)
    assert abs(randomised.sum().item() / n - 0.1) < 0.02
    assert torch.equal(masked.inputs[~chosen], ids[~chosen])  # nothing else changes


def test_whole_words_are_chosen_together():
    _, maskable, starts, masked = run("word")
    chosen = masked.labels != IGNORE
    words = torch.cumsum((starts | ~maskable).long(), dim=1)
    for row in range(chosen.shape[0]):
        for word in torch.unique(words[row][maskable[row]]):
            pieces = chosen[row][(words[row] == word) & maskable[row]]
            assert pieces.all() or not pieces.any()


def test_masks_are_seeded_and_dynamic():
    _, _, _, a = run("word", seed=1)
    _, _, _, b = run("word", seed=1)
    _, _, _, c = run("word", seed=2)
    assert torch.equal(a.inputs, b.inputs) and not torch.equal(a.labels, c.labels)
