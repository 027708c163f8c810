"""Every token's states, text by text, and the token facts late interaction reads: which tokens are punctuation,
and queries padded with mask tokens (issue #52). Shared by the sweep's token banks (features/token_bank.py) and a
multi-vector recipe's embedding (embedding/multi_vector.py), so both read the same tokens the same way.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

import numpy as np

from bertlens.encoding.encoder import Encoder, LayerStates
from bertlens.encoding.tokens import Tokenized
from bertlens.progress import Progress, silent

WORD_MARKS = ("##", "\u0120", "\u2581")  # WordPiece continuation, byte-level BPE and SentencePiece word starts


def punctuation_ids(encoder: Encoder) -> np.ndarray:
    """[V] bool: which vocabulary entries are punctuation alone (word marks stripped; Unicode category P*)."""
    return punctuation_ids_of(encoder.tokenizer)


def punctuation_ids_of(tokenizer) -> np.ndarray:
    """`punctuation_ids` of a tokenizer (a sentence-transformers export lists them in its skiplist)."""
    tokens = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    flags = np.zeros(len(tokens), dtype=bool)
    for i, token in enumerate(tokens):
        text = token or ""
        for mark in WORD_MARKS:
            text = text.removeprefix(mark)
        flags[i] = bool(text) and all(unicodedata.category(c).startswith("P") for c in text)
    return flags


def augmented(encoder: Encoder, tokenized: Tokenized, augment: int) -> Tokenized:
    """Each text padded with the mask token up to `augment` tokens (longer ones kept whole); mask tokens are not
    special: they are the query's own tokens."""
    mask = encoder.tokenizer.mask_token_id
    if mask is None:
        raise ValueError(f"model '{encoder.ref.name}' has no mask token, which query augmentation pads with")
    limit = min(augment, encoder.max_length)
    ids = [list(row) + [mask] * max(0, limit - len(row)) for row in tokenized.input_ids]
    special = [list(row) + [0] * max(0, limit - len(row)) for row in tokenized.special_tokens_mask]
    return Tokenized(ids, special, tokenized.truncated)


def token_batches(
    encoder: Encoder, tokenized: Tokenized, layers: tuple[int, ...], progress: Progress = silent
) -> Iterator[tuple[LayerStates, np.ndarray]]:
    """(a batch's states, on the device, and those at `layers` [K, B, T, H] float32 on the host), in the encoder's
    batch order: one forward pass; the layers are picked on the device, so only they come to the host."""
    for states in encoder.stream(tokenized, progress, stage="encoding tokens", on_device=True):
        yield states, states.hidden[list(layers)].float().cpu().numpy()  # [K, B, T, H]


def token_rows(
    encoder: Encoder, tokenized: Tokenized, layers: tuple[int, ...], progress: Progress = silent
) -> Iterator[tuple[int, np.ndarray]]:
    """(text row, its states at `layers` [K, t, H] float32), t its tokens without padding, in the encoder's batch
    order."""
    lengths = tokenized.lengths
    for states, picked in token_batches(encoder, tokenized, layers, progress):
        for b, row in enumerate(states.doc_index.numpy()):
            yield int(row), picked[:, b, : lengths[row]]
