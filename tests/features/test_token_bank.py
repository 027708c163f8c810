"""Token banks: each text's token vectors at the layers asked are the encoder's own states (to float16), with
special and punctuation flags, query augmentation with mask tokens, filters that repack, and a verified cache."""

from __future__ import annotations

import numpy as np
import pytest

from bertlens.encoding.encoder import Encoder
from bertlens.encoding.token_states import augmented
from bertlens.features.token_bank import build_token_bank, token_bank_bytes


@pytest.fixture(scope="module")
def encoder(tiny_bert_dir) -> Encoder:
    return Encoder(str(tiny_bert_dir), precision="fp32")


TEXTS = ["Wings stall, then lift fails.", "a", "Thrust!", "what is the boundary layer of a thin plate in flow?"]


def test_token_vectors_are_the_encoders_states_at_each_layer(encoder, tmp_path):
    bank = build_token_bank(encoder, TEXTS, tmp_path, layers=(encoder.num_layers, 1))
    assert bank.layers == (1, encoder.num_layers)
    tokenized = encoder.tokenize(TEXTS)
    assert list(np.diff(bank.offsets)) == list(tokenized.lengths)
    for i in range(len(TEXTS)):
        states = encoder.forward(tokenized, np.array([i]))  # [L+1, 1, t, H], this text alone
        for k, layer in enumerate(bank.layers):
            expected = states.hidden[layer, 0].numpy()  # [t, H]
            got = bank.vectors[k, bank.offsets[i] : bank.offsets[i + 1]]
            np.testing.assert_allclose(got.astype(np.float32), expected, rtol=2e-3, atol=2e-3)
    first = slice(bank.offsets[0], bank.offsets[1])
    words = encoder.tokenizer.convert_ids_to_tokens(tokenized.input_ids[0])
    assert [w for w, p in zip(words, bank.punctuation[first], strict=True) if p] == [",", "."]
    assert [w for w, s in zip(words, bank.special[first], strict=True) if s] == ["[CLS]", "[SEP]"]
    assert token_bank_bytes(tokenized, 2, encoder.hidden_size) == bank.vectors.nbytes


def test_filters_drop_tokens_and_repack_every_text(encoder, tmp_path):
    bank = build_token_bank(encoder, TEXTS, tmp_path, layers=(1,))
    every = bank.tokens(1)
    content = bank.tokens(1, drop_special=True, drop_punctuation=True)
    for i in range(len(TEXTS)):
        rows = every.of(i)
        keep = ~(bank.special | bank.punctuation)[bank.offsets[i] : bank.offsets[i + 1]]
        np.testing.assert_array_equal(content.of(i), rows[keep])
    assert len(content.of(2)) == 1  # "Thrust!": [CLS] thrust ! [SEP] -> thrust
    with pytest.raises(ValueError, match="layer 2 is not in this token bank"):
        bank.tokens(2)


def test_queries_padded_with_mask_tokens_keep_them_as_their_own_tokens(encoder, tmp_path):
    bank = build_token_bank(encoder, TEXTS, tmp_path, layers=(1,), augment=8)
    plain = encoder.tokenize(TEXTS).lengths
    assert plain[3] > 8  # the long query is kept whole, the short ones padded to 8
    assert list(np.diff(bank.offsets)) == [max(n, 8) for n in plain]
    ids = augmented(encoder, encoder.tokenize(TEXTS), 8).input_ids[1]
    assert ids[3:] == [encoder.tokenizer.mask_token_id] * 5  # [CLS] a [SEP] then masks
    assert not bank.special[bank.offsets[1] + 3 : bank.offsets[2]].any()  # masks are not dropped as special


def test_the_cache_is_reused_and_a_damaged_entry_rebuilt(encoder, tmp_path):
    first = build_token_bank(encoder, TEXTS, tmp_path, layers=(1,))
    again = build_token_bank(encoder, TEXTS, tmp_path, layers=(1,))
    assert again.path == first.path
    (first.path / "offsets.npy").write_bytes(b"damaged")
    rebuilt = build_token_bank(encoder, TEXTS, tmp_path, layers=(1,))
    np.testing.assert_array_equal(rebuilt.offsets, np.concatenate([[0], np.cumsum(encoder.tokenize(TEXTS).lengths)]))


def test_layers_outside_the_model_are_refused(encoder, tmp_path):
    with pytest.raises(ValueError, match="layers must be within 0"):
        build_token_bank(encoder, TEXTS, tmp_path, layers=(encoder.num_layers + 1,))
