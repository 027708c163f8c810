"""Strategy strings -> schedules and learning rates; bad strings are clear errors."""

from __future__ import annotations

import re

import pytest

from bertlens.errors import BertlensError
from bertlens.training.strategies import parse_strategies, parse_strategy


def test_names_round_trip():
    for text in ("frozen", "full", "partial:4", "gradual", "llrd:0.8", "full+reinit:2", "llrd:0.95+reinit:1"):
        assert parse_strategy(text, 6).name == text
    assert parse_strategy("llrd", 6).name == "llrd:0.9"


def test_trainable_blocks_per_strategy():
    assert parse_strategy("frozen", 6).trainable_blocks(6, 0) == ()
    assert parse_strategy("full", 6).trainable_blocks(6, 3) == (0, 1, 2, 3, 4, 5, 6)
    assert parse_strategy("partial:4", 6).trainable_blocks(6, 0) == (5, 6)
    gradual = parse_strategy("gradual", 6)
    assert [gradual.trainable_blocks(6, e) for e in range(3)] == [(6,), (5, 6), (4, 5, 6)]
    assert gradual.trainable_blocks(6, 6) == tuple(range(7)) == gradual.trainable_blocks(6, 9)  # embeddings last


def test_layerwise_rates_decay_downwards():
    llrd = parse_strategy("llrd:0.5", 4)
    assert [llrd.block_lr(b, 4, 1.0) for b in range(5)] == [0.0625, 0.125, 0.25, 0.5, 1.0]
    assert parse_strategy("full", 4).block_lr(0, 4, 2e-5) == 2e-5


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("fulll", "unknown strategy 'fulll' in 'fulll': did you mean 'full'?"),
        ("partial", "partial needs the number of frozen layers"),
        ("partial:x", "must be an integer, got 'x'"),
        ("partial:6", "the model has 6 layers, so partial:K needs K < 6"),
        ("partial:9", "K < 6"),
        ("gradual:2", "'gradual' takes no argument"),
        ("llrd:1.5", "decay must be in (0, 1]"),
        ("llrd:abc", "decay must be a number"),
        ("full+reinit:7", "cannot re-initialise 7 layers of a 6-layer model"),
        ("full+freeze:2", "only 'reinit:K' is allowed"),
        ("frozen+reinit:1", "would only destroy them"),
    ],
)
def test_bad_strategies_are_clear_errors(text, message):
    with pytest.raises(BertlensError, match=re.escape(message)):
        parse_strategy(text, 6)


def test_empty_list_is_an_error():
    with pytest.raises(BertlensError, match="--strategies is empty"):
        parse_strategies(" , ", 6)
