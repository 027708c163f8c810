"""The word bank against Hugging Face hidden states, alone vs batched, and its cache."""

from __future__ import annotations

import numpy as np
import torch

from bertlens.encoding.encoder import Encoder
from bertlens.features.word_bank import build_word_bank

TEXTS = ["I don't like e-mail.", "Ångström units are tiny, aren't they?", "Yes"]
WORDS = [
    ["I", "do", "n't", "like", "e-mail", "."],
    ["Ångström", "units", "are", "tiny", ",", "are", "n't", "they", "?"],
    ["Yes"],
]


def spans_of(text: str, words: list[str]) -> list[tuple[int, int]]:
    spans, cursor = [], 0
    for word in words:
        start = text.index(word, cursor) if word != "n't" else text.index("n't", cursor)
        spans.append((start, start + len(word)))
        cursor = start + len(word)
    return spans


SPANS = [spans_of(t, w) for t, w in zip(TEXTS, WORDS)]


def test_word_vectors_match_hugging_face_hidden_states(tiny_bert_dir, tmp_path):
    from transformers import AutoModel, AutoTokenizer

    bank = build_word_bank(Encoder(str(tiny_bert_dir)), TEXTS, SPANS, tmp_path, subword="mean", dtype="float32")
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert_dir)
    model = AutoModel.from_pretrained(tiny_bert_dir).eval()
    encoded = tokenizer(TEXTS[0], return_offsets_mapping=True, return_tensors="pt")
    offsets = encoded.pop("offset_mapping")[0].tolist()
    with torch.no_grad():
        hidden = torch.stack(model(**encoded, output_hidden_states=True).hidden_states)[:, 0]  # [L+1, T, H]
    # "do" is covered by the token "don"; "n't" by "don", "'", "t"
    tokens = tokenizer.convert_ids_to_tokens(encoded["input_ids"][0])
    do = [i for i, (a, b) in enumerate(offsets) if b > a and a < 4 and b > 2]
    nt = [i for i, (a, b) in enumerate(offsets) if b > a and a < 7 and b > 4]
    assert [tokens[i] for i in do] == ["don"] and [tokens[i] for i in nt] == ["don", "'", "t"]
    np.testing.assert_allclose(bank.vectors[1], hidden[:, do].mean(dim=1).numpy(), atol=1e-5)
    np.testing.assert_allclose(bank.vectors[2], hidden[:, nt].mean(dim=1).numpy(), atol=1e-5)
    assert bank.aligned.all() and bank.sentence.tolist() == [0] * 6 + [1] * 9 + [2]


def test_alone_equals_batched_and_the_cache_is_reused(tiny_bert_dir, tmp_path):
    encoder = Encoder(str(tiny_bert_dir))
    together = build_word_bank(encoder, TEXTS, SPANS, tmp_path, subword="first", dtype="float32")
    alone = build_word_bank(encoder, TEXTS[1:2], SPANS[1:2], tmp_path, subword="first", dtype="float32")
    np.testing.assert_allclose(alone.vectors, together.vectors[6:15], atol=1e-5)
    calls = []
    again = build_word_bank(
        encoder, TEXTS, SPANS, tmp_path, subword="first", dtype="float32", progress=lambda stage, d, t: calls.append(d)
    )
    assert calls == [] and np.array_equal(again.vectors, together.vectors)  # served from the cache
    last = build_word_bank(encoder, TEXTS, SPANS, tmp_path, subword="last", dtype="float32")
    assert not np.array_equal(last.vectors, together.vectors)  # a different pooling is a different bank


def test_words_past_max_length_are_marked_unaligned(tiny_bert_dir, tmp_path):
    encoder = Encoder(str(tiny_bert_dir), max_length=6)
    text = "one two three four five six seven"
    bank = build_word_bank(encoder, [text], [spans_of(text, text.split())], tmp_path)
    assert bank.aligned.tolist() == [True] * 4 + [False] * 3  # [CLS] + 4 words + [SEP]
    assert bank.meta["unaligned_words"] == 3 and bank.meta["truncated_sentences"] == 1
