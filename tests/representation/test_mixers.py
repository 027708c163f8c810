import math

import numpy as np
import pytest
import torch

from bertlens.errors import BertlensError
from bertlens.representation.mixers import ScalarMix, mix_layers, mix_pooled, parse_layers, resolve_layers, softmax
from bertlens.representation.poolers import LINEAR_POOLERS, pool, token_mask

# Stack of 4 "layers" (embeddings + 3), each [B=1, T=2, H=2] with easy numbers.
STACK = torch.tensor(
    [
        [[[1.0, 2.0], [3.0, 4.0]]],
        [[[10.0, 20.0], [30.0, 40.0]]],
        [[[100.0, 200.0], [300.0, 400.0]]],
        [[[0.0, -1.0], [1.0, 0.0]]],
    ]
)  # [4, 1, 2, 2]


@pytest.mark.parametrize(
    "mixer, layers, expected",
    [
        ("single", (1,), STACK[1]),
        ("single", (-1,), STACK[3]),
        ("mean", (1, 2), (STACK[1] + STACK[2]) / 2),
        ("mean", (-2, -1), (STACK[2] + STACK[3]) / 2),
        ("sum", (0, 1, 2), STACK[0] + STACK[1] + STACK[2]),
        ("concat", (0, -1), torch.cat([STACK[0], STACK[3]], dim=-1)),
        ("first_last", (), (STACK[1] + STACK[3]) / 2),
    ],
)
def test_mixers_hand_computed(mixer, layers, expected):
    assert torch.allclose(mix_layers(STACK, mixer, layers), expected)


def test_scalar_mix_with_one_hot_weights_equals_the_selected_layer():
    # softmax of (0, 0, 60, 0) is one-hot to float precision
    out = mix_layers(STACK, "scalar_mix", (0, 1, 2, 3), ScalarMix(4, (0.0, 0.0, 60.0, 0.0)))
    assert torch.allclose(out, STACK[2])


def test_scalar_mix_formula_with_gamma():
    weights = (0.0, math.log(3.0))  # softmax -> (0.25, 0.75)
    out = mix_layers(STACK, "scalar_mix", (1, 2), ScalarMix(2, weights, gamma=2.0))
    assert torch.allclose(out, 2.0 * (0.25 * STACK[1] + 0.75 * STACK[2]))


def test_scalar_mix_layer_norm_is_per_token():
    mix = ScalarMix(2, layer_norm=True)
    out = mix(STACK[1:3])  # equal weights after layer norm: both layers normalise to (-1, 1)
    assert torch.allclose(out, torch.tensor([[[-1.0, 1.0], [-1.0, 1.0]]]), atol=1e-4)


def test_scalar_mix_is_trainable_and_passes_gradients_to_its_input():
    mix = ScalarMix(3)
    states = STACK[:3].clone().requires_grad_(True)
    mix_layers(states, "scalar_mix", (0, 1, 2), mix).sum().backward()
    assert mix.scalar_weights.grad is not None and mix.gamma.grad is not None
    assert states.grad is not None and states.grad.abs().sum() > 0  # the encoder below it gets gradients too


def test_frozen_scalar_mix_has_no_trainable_weights_but_passes_gradients():
    mix = ScalarMix(3, (0.1, 0.2, 0.3), trainable=False)
    states = STACK[:3].clone().requires_grad_(True)
    mix(states).sum().backward()
    assert not any(p.requires_grad for p in mix.parameters()) and states.grad is not None


def test_scalar_mix_without_its_module_is_a_programming_error():
    with pytest.raises(ValueError, match="needs its ScalarMix"):
        mix_layers(STACK, "scalar_mix", (0, 1))


def test_scalar_mix_wrong_sizes_are_clear_errors():
    with pytest.raises(BertlensError, match="expects 3 layers, got 4"):
        ScalarMix(3)(STACK)
    with pytest.raises(BertlensError, match="2 weights for 3 layers"):
        ScalarMix(3, weights=(1.0, 2.0))


def test_layer_out_of_range_lists_valid_values():
    with pytest.raises(BertlensError, match=r"valid are 0..3 \(0 = embeddings\) or -4..-1"):
        mix_layers(STACK, "single", (4,))
    with pytest.raises(BertlensError, match="valid are 0..6"):
        resolve_layers((-8,), 6)


def test_unknown_mixer_suggests():
    with pytest.raises(BertlensError, match="did you mean 'concat'"):
        mix_layers(STACK, "concatt", (1,))


@pytest.mark.parametrize(
    "spec, expected",
    [("-1", (6,)), ("0", (0,)), ("-4:", (3, 4, 5, 6)), ("1:3", (1, 2)), ("0,-1", (0, 6)), ("all", tuple(range(7)))],
)
def test_parse_layers(spec, expected):
    assert parse_layers(spec, 6) == expected


@pytest.mark.parametrize("spec", ["x", "1:a", "7", "9:"])
def test_parse_layers_rejects_bad_specs(spec):
    with pytest.raises(BertlensError):
        parse_layers(spec, 6)


@pytest.mark.parametrize("pooler", sorted(LINEAR_POOLERS))
@pytest.mark.parametrize("mixer", ["mean", "sum", "concat", "first_last"])
def test_linear_mixers_commute_with_linear_poolers(pooler, mixer):
    torch.manual_seed(0)
    stack = torch.randn(4, 3, 5, 8)  # [L+1, B, T, H]
    mask = token_mask(torch.tensor([[1] * 5, [1] * 3 + [0] * 2, [1] * 4 + [0]]), torch.zeros(3, 5), True)
    weights = torch.rand(3, 5)
    pool_then_mix = mix_layers(pool(pooler, stack, mask, weights), mixer, (1, 2, 3))
    mix_then_pool = pool(pooler, mix_layers(stack, mixer, (1, 2, 3)), mask, weights)
    assert torch.allclose(pool_then_mix, mix_then_pool, atol=1e-5)


def test_mix_pooled_equals_numpy_term_by_term_to_the_bit_and_leaves_its_layers_alone():
    rng = np.random.default_rng(0)
    layers = [rng.standard_normal((257, 33)).astype(np.float32) for _ in range(7)]
    kept = [layer.copy() for layer in layers]
    weights = rng.standard_normal(7)
    probs = softmax(weights)
    expected = probs[0] * layers[0]
    for p, layer in zip(probs[1:], layers[1:], strict=True):
        expected += p * layer  # each term rounded to float32, then added: the formula's reference order
    assert np.array_equal(mix_pooled(iter(layers), weights), expected)
    out = np.full((257, 33), np.nan, dtype=np.float32)
    assert mix_pooled(layers, weights, out=out) is not None
    assert np.array_equal(out, expected)  # written in place
    assert all(np.array_equal(a, b) for a, b in zip(layers, kept, strict=True))
