import itertools

import numpy as np
import pytest

from bertlens.encoding.batching import batch_cost, length_batches


@pytest.mark.parametrize("max_batch, max_tokens", [(1, 100), (4, 100), (32, 10), (8, 1)])
def test_every_row_exactly_once_and_budget_kept(max_batch, max_tokens):
    lengths = np.array([5, 1, 9, 3, 3, 7, 2, 8, 4, 6])
    batches = length_batches(lengths, max_batch, max_tokens)
    assert sorted(np.concatenate(batches).tolist()) == list(range(len(lengths)))
    for rows in batches:
        assert len(rows) <= max_batch
        assert len(rows) == 1 or len(rows) * lengths[rows].max() <= max_tokens


def test_longest_first_and_similar_lengths_together():
    lengths = np.array([1, 10, 2, 9])
    assert [b.tolist() for b in length_batches(lengths, 2, 100)] == [[1, 3], [2, 0]]


def _total_cost(lengths, batches):
    return sum(batch_cost(len(rows), int(max(lengths[rows].max(), 1))) for rows in batches)


def _cheapest_contiguous_split(sorted_lengths, max_batch, max_tokens):
    """Brute force over every way to cut the sorted rows into runs (2^(n-1) of them)."""
    n, best = len(sorted_lengths), None
    for mask in itertools.product((False, True), repeat=n - 1):
        cuts = [0, *[i + 1 for i, cut in enumerate(mask) if cut], n]
        runs = [sorted_lengths[a:b] for a, b in itertools.pairwise(cuts)]
        if any(len(r) > max_batch or (len(r) > 1 and len(r) * max(r[0], 1) > max_tokens) for r in runs):
            continue
        cost = sum(batch_cost(len(r), max(r[0], 1)) for r in runs)
        best = cost if best is None else min(best, cost)
    return best


@pytest.mark.parametrize("seed", range(6))
def test_split_is_the_cheapest_by_brute_force(seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 120, size=10)
    max_batch, max_tokens = int(rng.integers(2, 8)), int(rng.integers(100, 600))
    batches = length_batches(lengths, max_batch, max_tokens)
    expected = _cheapest_contiguous_split(sorted(lengths.tolist(), reverse=True), max_batch, max_tokens)
    assert _total_cost(lengths, batches) == expected


def test_one_long_text_is_not_padded_into_a_batch_of_short_ones():
    lengths = np.array([5] * 127 + [40])
    batches = length_batches(lengths, 128, 16384)
    assert [len(b) for b in batches] == [1, 127]
    assert batches[0].tolist() == [127]
    assert _total_cost(lengths, batches) < batch_cost(128, 40)
