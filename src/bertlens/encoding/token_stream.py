"""A corpus as one token stream on disk, for masked-LM training on corpora larger than memory.

Texts are tokenized in a streaming pass (a batch of texts at a time) into two memory-mapped
arrays: content token ids (documents separated by the model's [SEP]) and a "starts a word" flag
per token (for whole-word masking). The stream is cached by content (tokenizer, texts) with a
checksum per file. Model inputs are read from it as packed rows: row k is [CLS] + the k-th run
of `length - 2` stream tokens + [SEP], so rows cross document boundaries (the separators keep
documents apart) and no compute goes to padding; only the last row can be short.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bertlens.io.cache import open_entry, publish, staging_dir
from bertlens.progress import Progress, silent

STREAM_VERSION = 1
BATCH = 512  # texts tokenized per call


@dataclass(frozen=True)
class TokenStream:
    ids: np.ndarray  # [N] int32, memory-mapped
    word_start: np.ndarray  # [N] bool, memory-mapped
    documents: int
    path: Path

    def __len__(self) -> int:
        return len(self.ids)


def _write_batch(texts: list[str], tokenizer, sep_id: int, ids_file, starts_file) -> int:
    encoded = tokenizer(texts, add_special_tokens=False, truncation=False)
    written = 0
    for k, ids in enumerate(encoded["input_ids"]):
        if not ids:
            continue
        words = encoded.encodings[k].word_ids
        starts = [i == 0 or words[i] != words[i - 1] or words[i] is None for i in range(len(ids))]
        ids_file.write(np.asarray([*ids, sep_id], dtype=np.int32).tobytes())
        starts_file.write(np.asarray([*starts, True], dtype=np.bool_).tobytes())
        written += len(ids) + 1
    return written


def build_token_stream(
    texts: Iterable[str], tokenizer, tokenizer_key: str, source_key: str, cache_dir: Path, progress: Progress = silent
) -> TokenStream:
    """Tokenize `texts` once into a cached stream; `source_key` names their content (e.g. the files' sha256)."""
    digest = hashlib.sha256(json.dumps([STREAM_VERSION, tokenizer_key, source_key]).encode()).hexdigest()[:24]
    final = cache_dir / "token_streams" / digest
    meta = open_entry(final, "token stream")
    if meta is None:
        tmp = staging_dir(final)
        sep_id = tokenizer.sep_token_id
        total, documents, batch = 0, 0, []
        with open(tmp / "ids.bin", "wb") as ids_file, open(tmp / "starts.bin", "wb") as starts_file:
            for text in texts:
                if text.strip():
                    batch.append(text)
                    documents += 1
                if len(batch) == BATCH:
                    total += _write_batch(batch, tokenizer, sep_id, ids_file, starts_file)
                    batch = []
                    progress("tokenizing", documents, documents)
            if batch:
                total += _write_batch(batch, tokenizer, sep_id, ids_file, starts_file)
        publish(tmp, final, {"stream_version": STREAM_VERSION, "tokens": total, "documents": documents})
        meta = open_entry(final, "token stream")
    tokens = meta["tokens"]
    ids = np.memmap(final / "ids.bin", dtype=np.int32, mode="r", shape=(tokens,)) if tokens else np.zeros(0, np.int32)
    starts = np.memmap(final / "starts.bin", dtype=np.bool_, mode="r", shape=(tokens,)) if tokens else np.zeros(0, bool)
    return TokenStream(ids, starts, meta["documents"], final)


@dataclass(frozen=True)
class StreamRows:
    """Packed rows of width `length` read lazily from a token stream; `index` picks which rows (all by default)."""

    stream: TokenStream
    length: int
    cls_id: int
    sep_id: int
    pad_id: int
    index: np.ndarray | None = None

    @property
    def content(self) -> int:
        return self.length - 2

    @property
    def total(self) -> int:
        """Rows in the whole stream."""
        return -(-len(self.stream) // self.content)

    def __len__(self) -> int:
        return self.total if self.index is None else len(self.index)

    def part(self, index: np.ndarray) -> StreamRows:
        """A subset of the rows (local positions of this set)."""
        chosen = np.asarray(index) if self.index is None else self.index[np.asarray(index)]
        return StreamRows(self.stream, self.length, self.cls_id, self.sep_id, self.pad_id, chosen)

    def key(self) -> str:
        index = np.arange(self.total) if self.index is None else self.index
        return hashlib.sha256(f"{self.stream.path.name}:{self.length}:".encode() + index.tobytes()).hexdigest()[:16]

    def take(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(ids, word_start, special, real) [B, T] for the given rows of this set."""
        rows = np.asarray(rows)
        batch = len(rows)
        ids = np.full((batch, self.length), self.pad_id, dtype=np.int64)  # [B, T]
        start = np.zeros((batch, self.length), dtype=bool)  # [B, T]
        special = np.zeros((batch, self.length), dtype=bool)  # [B, T]
        real = np.zeros((batch, self.length), dtype=bool)  # [B, T]
        for i, row in enumerate(rows if self.index is None else self.index[rows]):
            body = slice(int(row) * self.content, min((int(row) + 1) * self.content, len(self.stream)))
            content = np.asarray(self.stream.ids[body])
            n = len(content)
            ids[i, 0], ids[i, 1 : n + 1], ids[i, n + 1] = self.cls_id, content, self.sep_id
            start[i, : n + 2] = np.r_[True, self.stream.word_start[body], True]
            special[i, : n + 2] = np.r_[True, content == self.sep_id, True]
            real[i, : n + 2] = True
        return ids, start, special, real
