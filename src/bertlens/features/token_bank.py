"""Token banks: every kept token's vector at the layers asked, on disk, for late interaction (issue #52).

A pooled bank keeps one vector per text and layer; late interaction (MaxSim: representation/late_interaction.py)
needs every token's. That is tokens x layers x H values: for a corpus of 11k short documents about 0.5 GB a layer
at base size in float16, so only the layers asked are kept, in float16, memory-mapped, and the size is known before
the pass (`token_bank_bytes`). Each token carries two flags the sweep's filters read: special ([CLS], [SEP], <s>)
and punctuation (a token made of punctuation alone, ColBERT's document filter). Queries may be padded with the
mask token to `augment` tokens (ColBERT's query augmentation, Khattab & Zaharia 2020, sec. 3.2): the mask
tokens are encoded with the query and kept as its tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bertlens.encoding.encoder import Encoder
from bertlens.encoding.token_states import augmented, punctuation_ids, token_rows
from bertlens.encoding.tokens import Tokenized
from bertlens.io.cache import content_key, open_entry, private_staging, publish
from bertlens.progress import Progress, silent
from bertlens.representation.late_interaction import PackedTokens

TOKEN_BANK_VERSION = 1


@dataclass(frozen=True)
class TokenBank:
    """A read-only (memory-mapped) token bank: vectors [K, T, H] for `layers` (K of them), text i's tokens at
    rows offsets[i]:offsets[i+1]; special and punctuation [T] flags."""

    path: Path
    layers: tuple[int, ...]
    vectors: np.ndarray  # [K, T, H] float16
    offsets: np.ndarray  # [N+1]
    special: np.ndarray  # [T] bool
    punctuation: np.ndarray  # [T] bool
    meta: dict

    def tokens(self, layer: int, drop_special: bool = False, drop_punctuation: bool = False) -> PackedTokens:
        """One layer's token vectors as packed texts, without the tokens the filters drop (rows gathered: a copy)."""
        if layer not in self.layers:
            raise ValueError(f"layer {layer} is not in this token bank (it holds {list(self.layers)})")
        vectors = self.vectors[self.layers.index(layer)]  # [T, H]
        keep = np.ones(len(self.special), dtype=bool)
        if drop_special:
            keep &= ~self.special
        if drop_punctuation:
            keep &= ~self.punctuation
        if keep.all():
            return PackedTokens(vectors, self.offsets)
        kept_before = np.concatenate([[0], np.cumsum(keep)]).astype(np.int64)  # [T+1] kept tokens before each row
        return PackedTokens(vectors[keep], kept_before[self.offsets])


def token_bank_bytes(tokenized: Tokenized, layers: int, hidden: int) -> int:
    """Bytes of the float16 vectors a token bank of these texts holds for `layers` layers."""
    return int(tokenized.lengths.sum()) * layers * hidden * 2


def build_token_bank(
    encoder: Encoder,
    texts: list[str],
    cache_dir: Path,
    layers: tuple[int, ...],
    augment: int = 0,
    progress: Progress = silent,
    check_size: Callable[[int], None] | None = None,
) -> TokenBank:
    """Encode `texts` once and store their token vectors at `layers` (0 = the embeddings, L = the last layer);
    reuse the stored bank when its key matches and it verifies. `augment` > 0 pads each text with mask tokens to
    that length first (queries). `check_size(bytes)` is told the vectors' size before a bank is built (it may
    refuse)."""
    layers = tuple(sorted({int(layer) for layer in layers}))
    if not layers or min(layers) < 0 or max(layers) > encoder.num_layers:
        raise ValueError(f"layers must be within 0..{encoder.num_layers}, got {list(layers)}")
    settings = [TOKEN_BANK_VERSION, encoder.ref.fingerprint, encoder.max_length, encoder.precision, layers, augment]
    final = cache_dir / "token_banks" / content_key(settings, texts, length=24)
    meta = open_entry(final, "token bank")
    if meta is not None:
        return _open(final, meta)
    tokenized = encoder.tokenize(texts)
    if augment:
        tokenized = augmented(encoder, tokenized, augment)
    if check_size is not None:
        check_size(token_bank_bytes(tokenized, len(layers), encoder.hidden_size))
    lengths = tokenized.lengths  # [N]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)  # [N+1]
    punctuation = punctuation_ids(encoder)
    with private_staging(final) as (tmp, _):
        vectors = np.lib.format.open_memmap(
            tmp / "vectors.npy", mode="w+", dtype="float16", shape=(len(layers), int(offsets[-1]), encoder.hidden_size)
        )
        special = np.zeros(int(offsets[-1]), dtype=bool)
        ids = np.zeros(int(offsets[-1]), dtype=np.int64)
        for row, states in token_rows(encoder, tokenized, layers, progress):  # states [K, t, H]
            start, end = offsets[row], offsets[row + 1]
            vectors[:, start:end] = states
            special[start:end] = tokenized.special_tokens_mask[row]
            ids[start:end] = tokenized.input_ids[row]
        vectors.flush()
        del vectors
        np.save(tmp / "offsets.npy", offsets)
        np.save(tmp / "special.npy", special)
        np.save(tmp / "punctuation.npy", punctuation[ids] if len(punctuation) else np.zeros(len(ids), dtype=bool))
        meta = {
            "token_bank_version": TOKEN_BANK_VERSION,
            "model": encoder.ref.name,
            "model_fingerprint": encoder.ref.fingerprint,
            "layers": list(layers),
            "augment": augment,
            "texts": len(texts),
            "tokens": int(offsets[-1]),
            "truncated": tokenized.truncated,
        }
        publish(tmp, final, meta)
    return _open(final, open_entry(final, "token bank") or meta)


def _open(path: Path, meta: dict) -> TokenBank:
    return TokenBank(
        path,
        tuple(meta["layers"]),
        np.load(path / "vectors.npy", mmap_mode="r"),
        np.load(path / "offsets.npy"),
        np.load(path / "special.npy"),
        np.load(path / "punctuation.npy"),
        meta,
    )
