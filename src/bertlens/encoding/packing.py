"""Pack documents into full-length model inputs, so no compute goes to padding.

Each row is [CLS] tokens... [SEP], filled to `length` across document boundaries: a document
ends with [SEP] and the next one starts right after it in the same row; a document longer than
the room left continues in the next row. Only the very last row can be shorter. Every content
token lands in exactly one row, once, in order. Alongside the ids travels a per-token
"starts a word" flag, which whole-word masking needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Packed:
    """One model input: ids, which positions start a word, and which are special tokens."""

    ids: list[int]
    word_start: list[bool]
    special: list[bool]


class _Row:
    """The row being filled: [CLS] first; closed with [SEP] (unless it already ends with one)."""

    def __init__(self, cls_id: int, sep_id: int):
        self.sep_id = sep_id
        self.ids, self.starts, self.special = [cls_id], [True], [True]

    def add(self, ids: list[int], starts: list[bool]) -> None:
        self.ids += ids
        self.starts += starts
        self.special += [False] * len(ids)

    def separate(self) -> None:
        self.ids.append(self.sep_id)
        self.starts.append(True)
        self.special.append(True)

    def close(self) -> Packed:
        if self.ids[-1] != self.sep_id or not self.special[-1]:
            self.separate()
        return Packed(self.ids, self.starts, self.special)


def pack(documents: Iterable[tuple[list[int], list[bool]]], length: int, cls_id: int, sep_id: int) -> Iterator[Packed]:
    """documents: (content ids, word-start flags) without special tokens -> rows of at most `length` ids."""
    if length < 3:
        raise ValueError(f"a packed row needs room for [CLS], a token and [SEP]; length {length} is too short")
    row = _Row(cls_id, sep_id)
    for doc_ids, doc_starts in documents:
        at = 0
        while at < len(doc_ids):
            room = length - 1 - len(row.ids)  # keep one place for the closing [SEP]
            if room == 0:
                yield row.close()
                row = _Row(cls_id, sep_id)
                continue
            take = min(room, len(doc_ids) - at)
            row.add(doc_ids[at : at + take], doc_starts[at : at + take])
            at += take
        if doc_ids and len(row.ids) < length - 1:
            row.separate()  # the document ends inside the row: [SEP] before the next one
    if len(row.ids) > 1:
        yield row.close()
