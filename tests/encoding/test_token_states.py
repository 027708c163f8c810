"""The tokens late interaction reads: each text's states without padding (as one unpadded forward pass gives them),
punctuation flags over the vocabulary, and queries padded with the mask token."""

from __future__ import annotations

import numpy as np
import torch

from bertlens.encoding.encoder import Encoder
from bertlens.encoding.token_states import augmented, punctuation_ids, token_rows


def test_each_texts_states_are_its_own_unpadded_pass(tiny_bert_dir):
    encoder = Encoder(str(tiny_bert_dir), precision="fp32")
    texts = ["a short one", "a much longer text that pads the short one in its batch", "x"]
    tokenized = encoder.tokenize(texts)
    rows = dict(token_rows(encoder, tokenized, (1, 2)))
    assert sorted(rows) == [0, 1, 2]
    for row, text in enumerate(texts):
        alone = encoder.tokenize([text])
        with torch.inference_mode():
            (states,) = list(encoder.stream(alone))
        expected = states.hidden[[1, 2], 0, : len(alone.input_ids[0])].numpy()  # [2, t, H]
        assert rows[row].shape == expected.shape
        np.testing.assert_allclose(rows[row], expected, atol=1e-5)


def test_punctuation_is_flagged_with_word_marks_stripped_and_masks_pad_queries(tiny_bert_dir):
    encoder = Encoder(str(tiny_bert_dir))
    flags = punctuation_ids(encoder)
    vocab = encoder.tokenizer.get_vocab()
    assert flags[vocab[","]] and flags[vocab["!"]] and not flags[vocab["the"]]
    padded = augmented(encoder, encoder.tokenize(["cats", "a much longer query than eight tokens here"]), 8)
    assert len(padded.input_ids[0]) == 8 and padded.input_ids[0][-1] == encoder.tokenizer.mask_token_id
    assert len(padded.input_ids[1]) > 8  # a longer query is kept whole
    assert padded.special_tokens_mask[0][-1] == 0  # the mask tokens are the query's own
