"""Word -> subword alignment on hard cases, with the default model's tokenizer."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bertlens.encoding.word_alignment import covering_tokens, pool_words


@pytest.fixture(scope="module")
def tokenizer(default_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(default_model_dir)


def pieces(tokenizer, text: str, words: list[str]) -> list[list[str]]:
    """Tokens covering each word (words located left to right in the text)."""
    spans, cursor = [], 0
    for word in words:
        start = text.index(word, cursor)
        spans.append((start, start + len(word)))
        cursor = start + len(word)
    encoded = tokenizer(text, return_offsets_mapping=True)
    tokens = tokenizer.convert_ids_to_tokens(encoded["input_ids"])
    return [[tokens[i] for i in group] for group in covering_tokens(spans, encoded["offset_mapping"])]


def test_contraction_words_take_their_own_pieces(tokenizer):
    # UD: "don't" = "do" + "n't"; the tokenizer reads "don ' t" and "don" straddles both words
    assert pieces(tokenizer, "I don't", ["I", "do", "n't"]) == [["i"], ["don"], ["don", "'", "t"]]


def test_punctuation_urls_and_emails(tokenizer):
    text = "See http://www.example.com/a?b=1, or mail me@example.org!"
    words = ["See", "http://www.example.com/a?b=1", ",", "or", "mail", "me@example.org", "!"]
    got = pieces(tokenizer, text, words)
    assert got[2] == [","] and got[6] == ["!"]
    assert "".join(p.removeprefix("##") for p in got[1]) == "http://www.example.com/a?b=1"
    assert "".join(p.removeprefix("##") for p in got[5]) == "me@example.org"


def test_word_split_into_many_pieces_keeps_them_all(tokenizer):
    got = pieces(tokenizer, "antidisestablishmentarianism rules", ["antidisestablishmentarianism", "rules"])
    assert len(got[0]) >= 4 and "".join(p.removeprefix("##") for p in got[0]) == "antidisestablishmentarianism"
    assert got[1] == ["rules"]


def test_characters_the_tokenizer_normalises(tokenizer):
    # lower-casing and accent stripping change the pieces, not the offsets
    got = pieces(tokenizer, "Café NAÏVE Ångström", ["Café", "NAÏVE", "Ångström"])
    assert ["".join(p.removeprefix("##") for p in g) for g in got] == ["cafe", "naive", "angstrom"]


def test_word_of_dropped_characters_gets_no_tokens(tokenizer):
    # a zero-width space is removed by the tokenizer: nothing covers it
    assert pieces(tokenizer, "a \u200b b", ["a", "\u200b", "b"]) == [["a"], [], ["b"]]


def test_special_tokens_never_cover_words():
    offsets = [(0, 0), (0, 3), (3, 5), (0, 0)]
    assert [g.tolist() for g in covering_tokens([(0, 5)], offsets)] == [[1, 2]]


def test_pool_words_first_last_mean():
    hidden = torch.arange(2 * 2 * 4 * 3, dtype=torch.float32).reshape(2, 2, 4, 3)  # [L+1, B, T, H]
    groups = [[np.array([1, 2]), np.array([3])], [np.array([], dtype=np.int64), np.array([0, 1, 2])]]
    first = pool_words(hidden, groups, "first")
    last = pool_words(hidden, groups, "last")
    mean = pool_words(hidden, groups, "mean")
    assert first.shape == (2, 4, 3)
    torch.testing.assert_close(first[:, 0], hidden[:, 0, 1])
    torch.testing.assert_close(last[:, 0], hidden[:, 0, 2])
    torch.testing.assert_close(mean[:, 0], hidden[:, 0, 1:3].mean(dim=1))
    torch.testing.assert_close(mean[:, 3], hidden[:, 1, 0:3].mean(dim=1))
    assert torch.all(mean[:, 2] == 0)  # a word without tokens is a zero vector
