"""The word bank: one forward pass -> a vector per word per layer, for token-level probes.

vectors: [W, L+1, H] (W words of all sentences, in order), pooled from each word's
subword tokens (first, last or mean; see encoding/word_alignment.py). Cached on disk by
model fingerprint, texts, word spans, pooling, max_length and precision, like the bank.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bertlens.encoding.encoder import Encoder
from bertlens.encoding.word_alignment import (
    SUBWORD_POOLING,
    covering_tokens,
    pool_words,
)
from bertlens.errors import BertlensError, did_you_mean
from bertlens.io.cache import content_key, open_entry, publish, staging_dir
from bertlens.progress import Progress, silent

WORD_BANK_VERSION = 2  # 2: meta.json carries a sha256 per file, verified on open


@dataclass(frozen=True)
class WordBank:
    vectors: np.ndarray  # [W, L+1, H], memory-mapped
    aligned: np.ndarray  # [W] bool: the word got at least one token
    sentence: np.ndarray  # [W] int64: index of the sentence it belongs to
    meta: dict

    @property
    def num_layers(self) -> int:
        return self.vectors.shape[1] - 1


def _open(path: Path, meta: dict) -> WordBank:
    vectors = np.load(path / "vectors.npy", mmap_mode="r", allow_pickle=False)
    aligned = np.load(path / "aligned.npy", allow_pickle=False)
    sentence = np.load(path / "sentence.npy", allow_pickle=False)
    return WordBank(vectors, aligned, sentence, meta)


def build_word_bank(
    encoder: Encoder,
    texts: Sequence[str],
    spans: Sequence[Sequence[tuple[int, int]]],
    cache_dir: Path,
    *,
    subword: str = "mean",
    dtype: str = "float16",
    progress: Progress = silent,
) -> WordBank:
    """Encode every sentence once and pool each word's subwords at every layer."""
    if subword not in SUBWORD_POOLING:
        raise BertlensError(f"unknown subword pooling '{subword}': {did_you_mean(subword, SUBWORD_POOLING)}")
    if len(texts) != len(spans):
        raise ValueError(f"{len(texts)} texts but {len(spans)} span lists")
    settings = [WORD_BANK_VERSION, encoder.ref.fingerprint, subword, dtype, encoder.max_length, encoder.precision]
    key = content_key(settings, texts, (np.asarray(row, dtype=np.int64).reshape(-1) for row in spans), length=24)
    final = cache_dir / "word_banks" / key
    meta = open_entry(final, "word bank")
    if meta is not None:
        return _open(final, meta)
    starts = np.concatenate([[0], np.cumsum([len(row) for row in spans])])  # [S+1] first word row of each sentence
    total = int(starts[-1])
    tmp = staging_dir(final)
    vectors = np.lib.format.open_memmap(
        tmp / "vectors.npy", mode="w+", dtype=dtype, shape=(total, encoder.num_layers + 1, encoder.hidden_size)
    )
    aligned = np.zeros(total, dtype=bool)
    tokenized = encoder.tokenize(texts, offsets=True)
    for states in encoder.stream(tokenized, progress):
        rows = states.doc_index.numpy()
        groups = [covering_tokens(spans[r], tokenized.offsets[r]) for r in rows]
        pooled = pool_words(states.hidden, groups, subword).permute(1, 0, 2).numpy()  # [W_batch, L+1, H]
        at = 0
        for r, row in zip(rows, groups):
            target = slice(starts[r], starts[r + 1])
            vectors[target] = pooled[at : at + len(row)].astype(dtype)
            aligned[target] = [len(tokens) > 0 for tokens in row]
            at += len(row)
    vectors.flush()
    del vectors
    np.save(tmp / "aligned.npy", aligned)
    np.save(tmp / "sentence.npy", np.repeat(np.arange(len(texts)), np.diff(starts)))
    meta = {
        "word_bank_version": WORD_BANK_VERSION,
        "model": encoder.ref.name,
        "model_fingerprint": encoder.ref.fingerprint,
        "subword": subword,
        "max_length": encoder.max_length,
        "precision": encoder.precision,
        "dtype": dtype,
        "sentences": len(texts),
        "words": total,
        "unaligned_words": int((~aligned).sum()),
        "truncated_sentences": tokenized.truncated,
    }
    publish(tmp, final, meta)
    return _open(final, open_entry(final, "word bank") or meta)
