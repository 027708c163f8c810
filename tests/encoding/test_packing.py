"""Packing documents into full rows: every token exactly once, in order, documents separated."""

from __future__ import annotations

import numpy as np
import pytest

from bertlens.encoding.packing import pack

CLS, SEP = 101, 102


def documents(lengths: list[int]) -> list[tuple[list[int], list[bool]]]:
    """Documents of distinct token ids (1000 + a running count), every other token starting a word."""
    out, next_id = [], 1000
    for n in lengths:
        out.append((list(range(next_id, next_id + n)), [i % 2 == 0 for i in range(n)]))
        next_id += n
    return out


@pytest.mark.parametrize("lengths", [[5], [3, 4, 2], [20], [7, 7, 7, 7], [1, 1, 1], [13, 0, 5], [6, 6]])
@pytest.mark.parametrize("length", [3, 8, 10])
def test_packing_keeps_every_token_once_in_order(lengths, length):
    docs = documents(lengths)
    rows = list(pack(docs, length, CLS, SEP))
    content = [i for r in rows for i, s in zip(r.ids, r.special, strict=True) if not s]
    assert content == [i for ids, _ in docs for i in ids]  # each token once, in order
    assert all(len(r.ids) <= length and r.ids[0] == CLS and r.ids[-1] == SEP for r in rows)
    assert all(len(r.ids) == len(r.word_start) == len(r.special) for r in rows)
    assert all(r.special[k] == (r.ids[k] in (CLS, SEP)) for r in rows for k in range(len(r.ids)))
    starts = [st for r in rows for st, s in zip(r.word_start, r.special, strict=True) if not s]
    assert starts == [st for _, flags in docs for st in flags]
    assert all(len(r.ids) >= length - 1 for r in rows[:-1])  # only the last row may be short: no padding waste
    assert not any(a == b == SEP for r in rows for a, b in zip(r.ids, r.ids[1:], strict=False))  # no empty document


def test_documents_inside_a_row_are_separated_by_sep():
    rows = list(pack(documents([2, 3]), 10, CLS, SEP))
    assert [r.ids for r in rows] == [[CLS, 1000, 1001, SEP, 1002, 1003, 1004, SEP]]


def test_a_row_too_short_to_hold_a_token_is_refused():
    with pytest.raises(ValueError, match="too short"):
        list(pack(documents([3]), 2, CLS, SEP))


def test_packed_rows_fill_the_length():
    rows = list(pack(documents(list(np.random.default_rng(0).integers(1, 40, 50))), 16, CLS, SEP))
    filled = sum(len(r.ids) for r in rows) / (16 * len(rows))
    assert filled > 0.95
