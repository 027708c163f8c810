import numpy as np
import pytest

from bertlens.encoding.batching import length_batches


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
