import pytest
import torch

from bertlens.errors import BertlensError
from bertlens.representation.poolers import POOLERS, pool, token_mask

# Two texts, T=4. Row 0: [CLS] a b [SEP]; row 1: [CLS] c [SEP] <pad>.
STATES = torch.tensor(
    [
        [[1.0, 10.0], [2.0, 20.0], [4.0, -40.0], [8.0, 80.0]],
        [[3.0, 30.0], [5.0, -50.0], [7.0, 70.0], [100.0, 100.0]],
    ]
)  # [B=2, T=4, H=2]
ATTENTION = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]])
SPECIAL = torch.tensor([[1, 0, 0, 1], [1, 0, 1, 0]])
WEIGHTS = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.5, 0.25, 0.25, 0.9]])


def mask(include_special: bool) -> torch.Tensor:
    return token_mask(ATTENTION, SPECIAL, include_special)


@pytest.mark.parametrize(
    "name, include_special, expected",
    [
        ("cls", True, [[1.0, 10.0], [3.0, 30.0]]),
        ("cls", False, [[1.0, 10.0], [3.0, 30.0]]),
        ("mean", True, [[15 / 4, 70 / 4], [5.0, 50 / 3]]),
        ("mean", False, [[3.0, -10.0], [5.0, -50.0]]),
        ("max", True, [[8.0, 80.0], [7.0, 70.0]]),
        ("max", False, [[4.0, 20.0], [5.0, -50.0]]),
        # weights renormalised over the mask; row 1 never reads the padding (weight 0.9)
        ("attention", True, [[0.1 + 0.4 + 1.2 + 3.2, 1 + 4 - 12 + 32], [(1.5 + 1.25 + 1.75), (15 - 12.5 + 17.5)]]),
        ("attention", False, [[(0.4 + 1.2) / 0.5, (4 - 12) / 0.5], [5.0, -50.0]]),
    ],
)
def test_pooler_hand_computed(name, include_special, expected):
    out = pool(name, STATES, mask(include_special), WEIGHTS)
    assert torch.allclose(out, torch.tensor(expected), atol=1e-5)


def test_poolers_do_not_modify_inputs():
    states, attention, special, weights = STATES.clone(), ATTENTION.clone(), SPECIAL.clone(), WEIGHTS.clone()
    for name in POOLERS:
        pool(name, states, token_mask(attention, special, False), weights)
    assert torch.equal(states, STATES) and torch.equal(attention, ATTENTION)
    assert torch.equal(special, SPECIAL) and torch.equal(weights, WEIGHTS)


def test_poolers_broadcast_over_a_layer_axis():
    stack = torch.stack([STATES, 2 * STATES])  # [2, B, T, H]
    for name in POOLERS:
        both = pool(name, stack, mask(True), WEIGHTS)
        assert torch.allclose(both[0], pool(name, STATES, mask(True), WEIGHTS))
        assert torch.allclose(both[1], pool(name, 2 * STATES, mask(True), WEIGHTS))


def test_empty_mask_pools_to_zero_not_nan():
    empty = torch.zeros(2, 4, dtype=torch.bool)
    for name in ("mean", "max", "attention"):
        assert torch.equal(pool(name, STATES, empty, WEIGHTS), torch.zeros(2, 2))


def test_unknown_pooler_lists_valid_names():
    with pytest.raises(BertlensError, match="did you mean 'mean'.*valid: cls, mean, max, attention"):
        pool("meen", STATES, mask(True))


def test_attention_pooler_without_weights_is_a_clear_error():
    with pytest.raises(BertlensError, match="needs attention weights"):
        pool("attention", STATES, mask(True))


def test_every_pooler_is_named_where_the_cli_reads_names_without_torch():
    from bertlens.representation.choices import POOLER_NAMES
    from bertlens.representation.poolers import POOLERS

    assert tuple(POOLERS) == POOLER_NAMES
