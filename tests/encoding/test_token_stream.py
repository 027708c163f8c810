"""The token stream and its packed rows: every token once, in order, documents separated, rows full."""

from __future__ import annotations

import numpy as np
import pytest

from bertlens.encoding.encoder import Encoder
from bertlens.encoding.token_stream import StreamRows, build_token_stream

TEXTS = ["the cat sat on the mat", "", "unaffordable housing", "a", "dogs bark loudly at night in the city"]


@pytest.fixture(scope="module")
def tokenizer(tiny_bert_dir):
    return Encoder(str(tiny_bert_dir)).tokenizer


def stream(tokenizer, tmp_path, texts=TEXTS):
    return build_token_stream(texts, tokenizer, "tok", "key", tmp_path)


def test_the_stream_holds_each_document_then_a_separator(tokenizer, tmp_path):
    built = stream(tokenizer, tmp_path)
    expected, starts = [], []
    for text in (t for t in TEXTS if t.strip()):
        encoded = tokenizer(text, add_special_tokens=False)
        words = encoded.word_ids()
        expected += [*encoded["input_ids"], tokenizer.sep_token_id]
        starts += [i == 0 or words[i] != words[i - 1] for i in range(len(words))] + [True]
    assert built.documents == 4 and np.asarray(built.ids).tolist() == expected
    assert np.asarray(built.word_start).tolist() == starts
    again = stream(tokenizer, tmp_path)  # cached, verified, the same
    assert again.path == built.path and np.array_equal(again.ids, built.ids)


@pytest.mark.parametrize("length", [3, 5, 8, 64])
def test_packed_rows_keep_every_token_once_in_order(tokenizer, tmp_path, length):
    built = stream(tokenizer, tmp_path)
    tok = tokenizer
    rows = StreamRows(built, length, tok.cls_token_id, tok.sep_token_id, tok.pad_token_id)
    ids, start, special, real = rows.take(np.arange(len(rows)))
    body = [ids[r, 1 : real[r].sum() - 1].tolist() for r in range(len(rows))]  # between each row's [CLS] and [SEP]
    assert [t for b in body for t in b] == np.asarray(built.ids).tolist()  # each stream token once, in order
    assert (ids[:, 0] == tok.cls_token_id).all()
    assert all(ids[r, real[r].sum() - 1] == tok.sep_token_id for r in range(len(rows)))
    assert (real[:-1].sum(axis=1) == length).all()  # only the last row may be short: no padding waste
    assert (ids[~real] == tok.pad_token_id).all() and not special[~real].any()
    assert np.array_equal(special[real], np.isin(ids[real], [tok.cls_token_id, tok.sep_token_id]))


def test_a_part_of_the_rows_reads_the_same_rows(tokenizer, tmp_path):
    built = stream(tokenizer, tmp_path)
    rows = StreamRows(built, 6, tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id)
    part = rows.part(np.array([3, 1]))
    assert len(part) == 2 and np.array_equal(part.take(np.array([0]))[0], rows.take(np.array([3]))[0])
    assert part.key() != rows.part(np.array([1, 3])).key()
