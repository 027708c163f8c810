"""Truncation strategies and windows, from tables of cases with exact spans."""

from __future__ import annotations

import pytest

from bertlens.encoding.chunking import head, head_tail, parse_long_text, tail, windows
from bertlens.errors import BertlensError


@pytest.mark.parametrize(
    ("length", "size", "stride", "expected"),
    [
        (5, 8, 4, [(0, 5)]),  # shorter than the window
        (8, 8, 4, [(0, 8)]),  # exactly one window
        (16, 8, 4, [(0, 8), (4, 12), (8, 16)]),  # an exact multiple of the stride
        (16, 8, 8, [(0, 8), (8, 16)]),  # stride equal to the size: no overlap
        (10, 8, 4, [(0, 8), (2, 10)]),  # last window aligned to the end
        (21, 8, 8, [(0, 8), (8, 16), (13, 21)]),  # ... with stride == size too
        (0, 8, 4, [(0, 0)]),  # empty text: one empty piece (special tokens only)
        (9, 4, 1, [(0, 4), (1, 5), (2, 6), (3, 7), (4, 8), (5, 9)]),
    ],
)
def test_windows_exact_spans_cover_every_token(length, size, stride, expected):
    spans = windows(length, size, stride)
    assert spans == expected
    covered = {p for start, end in spans for p in range(start, end)}
    assert covered == set(range(length))
    assert all(end - start == min(size, length) for start, end in spans)


def test_stride_larger_than_window_is_rejected():
    with pytest.raises(BertlensError, match="stride 9 must be between 1 and the window size 8"):
        windows(20, 8, 9)


@pytest.mark.parametrize(
    ("length", "size", "keep", "expected"),
    [
        (100, 10, 3, [(0, 3), (93, 100)]),
        (100, 10, 0, [(90, 100)]),
        (100, 10, 10, [(0, 10)]),
        (6, 10, 3, [(0, 6)]),
    ],
)
def test_head_tail(length, size, keep, expected):
    assert head_tail(length, size, keep) == expected
    assert sum(e - s for s, e in head_tail(length, size, keep)) == min(length, size)


def test_head_and_tail():
    assert head(100, 10) == [(0, 10)] and tail(100, 10) == [(90, 100)]
    assert head(4, 10) == [(0, 4)] == tail(4, 10)


def test_parse_long_text():
    assert parse_long_text("windows:128:max").name == "windows:128:max"
    assert parse_long_text("windows").pieces(10, 4) == [[(0, 4)], [(2, 6)], [(4, 8)], [(6, 10)]]
    assert parse_long_text("head_tail:64").pieces(1000, 510) == [[(0, 64), (554, 1000)]]
    for bad, message in (
        ("middle", "unknown long-text strategy"),
        ("windows:big", "neither a stride"),
        ("head:3", "takes no arguments"),
        ("head_tail:x", "HEAD_TOKENS"),
    ):
        with pytest.raises(BertlensError, match=message):
            parse_long_text(bad)


def test_late_chunks_sit_in_the_window_where_they_are_most_central():
    late = parse_long_text("late:4:max")
    assert late.name == "late:4:max" and late.piece_aggregate == "max"
    assert late.pieces(20, 8) == [[(0, 8)], [(4, 12)], [(8, 16)], [(12, 20)]]  # windows overlapping by half
    # every chunk lies wholly inside its window
    chunks = late.chunks(20, 8)
    assert [(a, b) for _, a, b in chunks] == [(0, 4), (4, 8), (8, 12), (12, 16), (16, 20)]
    windows = [piece[0] for piece in late.pieces(20, 8)]
    assert all(windows[w][0] <= a and b <= windows[w][1] for w, a, b in chunks)
    # windows [0, 8) [4, 12) [8, 16) (centres 4, 8, 12); chunk centres 1, 3, 5, 7, 9, 11, 13, 15 -> nearest centre
    assert [w for w, _, _ in parse_long_text("late:2").chunks(16, 8)] == [0, 0, 0, 1, 1, 2, 2, 2]
    # windows [0, 8) and the end-aligned [2, 10); the chunk is capped at half a window
    assert parse_long_text("late:64").chunks(10, 8) == [(0, 0, 4), (1, 4, 8), (1, 8, 10)]
    with pytest.raises(BertlensError, match="neither a chunk size"):
        parse_long_text("late:big")
