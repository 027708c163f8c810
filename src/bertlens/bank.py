"""The feature bank: one forward pass -> pooled vectors for every layer x pooler, cached on disk.

vectors: [N, L+1, P, H] for poolers P (cls, mean, max, attention by default). Mixing
commutes with the linear poolers, so every linear mix of layers is computed from this
without another pass. Max pooling does not commute with mixing, so the named mixes of
max-pooled states are pooled at encode time into `max_mixes` [N, M, H].
The attention pooler uses the last layer's [CLS] attention for every layer (fixed weights
keep it linear, hence mixable).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from bertlens.encoding.chunking import LongText
from bertlens.encoding.encoder import Encoder
from bertlens.long_documents import piece_tokens
from bertlens.representation.mixers import mix_layers
from bertlens.representation.poolers import POOLERS, check_pooler, pool, token_mask

BANK_VERSION = 1
DEFAULT_POOLERS = ("cls", "mean", "max", "attention")


def named_mixes(num_layers: int) -> dict[str, tuple[str, tuple[int, ...]]]:
    """The fixed layer mixes every sweep scores: name -> (mixer, layers)."""
    mixes = {
        "mean_last2": ("mean", (-2, -1)),
        "mean_last4": ("mean", (-4, -3, -2, -1)),
        "first_last": ("first_last", ()),
        "mean_all": ("mean", tuple(range(num_layers + 1))),
    }
    if num_layers < 4:
        del mixes["mean_last4"]
    return mixes


@dataclass(frozen=True)
class Bank:
    """A read-only (memory-mapped) bank plus what it was built from."""

    path: Path
    vectors: np.ndarray  # [N, L+1, P, H]
    max_mixes: np.ndarray | None  # [N, M, H]
    poolers: tuple[str, ...]
    mix_names: tuple[str, ...]
    texts: int
    meta: dict
    _loaded: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def num_layers(self) -> int:
        return self.vectors.shape[1] - 1

    def _layer_major(self, pooler: str) -> np.ndarray:
        """[L+1, N, H] float32 for one pooler, read from disk once and kept (probes reuse it many times)."""
        if pooler not in self._loaded:
            p = self.poolers.index(pooler)
            self._loaded[pooler] = np.ascontiguousarray(np.asarray(self.vectors[:, :, p], dtype=np.float32).transpose(1, 0, 2))
        return self._loaded[pooler]

    def layer(self, pooler: str, layer: int, rows: np.ndarray | None = None) -> np.ndarray:
        """[n, H] float32: one layer's pooled vectors for the given rows (all by default)."""
        array = self._layer_major(pooler)[layer]  # [N, H], contiguous
        return array if rows is None else array[rows]

    def pooled(self, pooler: str, layers: tuple[int, ...] | None = None, rows: np.ndarray | None = None) -> np.ndarray:
        """[n, K, H] float32 for one pooler, the given layers (all by default) and rows (all by default)."""
        layers = range(self.num_layers + 1) if layers is None else layers
        return np.stack([self.layer(pooler, k, rows) for k in layers], axis=1)

    def max_mix(self, mix: str, rows: np.ndarray | None = None) -> np.ndarray:
        """[n, H] float32: a named layer mix, max-pooled at encode time."""
        if "max_mixes" not in self._loaded:
            self._loaded["max_mixes"] = np.asarray(self.max_mixes, dtype=np.float32)  # [N, M, H]
        array = self._loaded["max_mixes"][:, self.mix_names.index(mix)]
        return array if rows is None else array[rows]


def bank_key(fingerprint: str, texts: list[str], *, max_length: int, precision: str, include_special: bool,
             poolers: tuple[str, ...], dtype: str, long_text: str | None = None) -> str:
    digest = hashlib.sha256()
    header = json.dumps([BANK_VERSION, fingerprint, max_length, precision, include_special, list(poolers), dtype]
                        + ([long_text] if long_text else []))
    digest.update(header.encode())
    for text in texts:
        digest.update(text.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()[:24]


def _open(path: Path) -> Bank:
    meta = json.loads((path / "meta.json").read_text())
    vectors = np.load(path / "vectors.npy", mmap_mode="r", allow_pickle=False)
    max_file = path / "max_mixes.npy"
    max_mixes = np.load(max_file, mmap_mode="r", allow_pickle=False) if max_file.exists() else None
    return Bank(path, vectors, max_mixes, tuple(meta["poolers"]), tuple(meta["mix_names"]), meta["texts"], meta)


def build_bank(
    encoder: Encoder,
    texts: list[str],
    cache_dir: Path,
    *,
    poolers: tuple[str, ...] = DEFAULT_POOLERS,
    include_special: bool = True,
    dtype: str = "float16",
    long_text: LongText | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> Bank:
    """Encode once and store every layer x pooler; reuse the stored bank when the key matches.

    With `long_text`, each text is cut into pieces (see long_documents.py) and its pieces'
    pooled vectors are aggregated per text (windows: the strategy's aggregate; one-piece
    strategies: that piece).
    """
    for name in poolers:
        check_pooler(name)
    if "attention" in poolers and encoder.attentions == "none":
        raise ValueError("the attention pooler needs an Encoder built with attentions='cls'")
    key = bank_key(encoder.ref.fingerprint, texts, max_length=encoder.max_length, precision=encoder.precision,
                   include_special=include_special, poolers=poolers, dtype=dtype,
                   long_text=long_text.name if long_text else None)
    final = cache_dir / "banks" / key
    if (final / "meta.json").exists():
        return _open(final)
    num_layers = encoder.num_layers
    mixes = named_mixes(num_layers) if "max" in poolers else {}
    tmp = staging_dir(final)
    shape = (len(texts), num_layers + 1, len(poolers), encoder.hidden_size)
    vectors = np.lib.format.open_memmap(tmp / "vectors.npy", mode="w+", dtype=dtype, shape=shape)
    max_mixes = None
    if mixes:
        max_mixes = np.lib.format.open_memmap(tmp / "max_mixes.npy", mode="w+", dtype=dtype,
                                              shape=(len(texts), len(mixes), encoder.hidden_size))
    if long_text is not None:
        _fill_from_pieces(encoder, texts, long_text, poolers, include_special, mixes, vectors, max_mixes, on_progress)
        truncated = 0
    else:
        tokenized = encoder.tokenize(texts)
        truncated = tokenized.truncated
        done = 0
        with encoder.running():
            for states in encoder.iter_states(tokenized):
                rows = states.doc_index.numpy()
                stacked, pooled_mixes = _pool_batch(states, poolers, include_special, mixes)
                vectors[rows] = stacked.astype(dtype)
                if max_mixes is not None:
                    max_mixes[rows] = pooled_mixes.astype(dtype)
                done += len(rows)
                if on_progress:
                    on_progress(done, len(texts))
    vectors.flush()
    if max_mixes is not None:
        max_mixes.flush()
    del vectors, max_mixes
    meta = {
        "bank_version": BANK_VERSION, "model": encoder.ref.name, "model_fingerprint": encoder.ref.fingerprint,
        "max_length": encoder.max_length, "precision": encoder.precision, "include_special": include_special,
        "poolers": list(poolers), "mix_names": list(mixes), "texts": len(texts), "dtype": dtype,
        "truncated": truncated, "attention_layer": -1, "long_text": long_text.name if long_text else None,
    }
    publish(tmp, final, meta)
    return _open(final)


def _pool_batch(states, poolers, include_special, mixes) -> tuple[np.ndarray, np.ndarray | None]:
    """[B, L+1, P, H] pooled vectors of every layer x pooler, and [B, M, H] max-pooled named mixes (or None)."""
    mask = token_mask(states.attention_mask, states.special_tokens_mask, include_special)  # [B, T]
    weights = states.cls_attention[-1] if states.cls_attention is not None else None  # [B, T]
    per_pooler = [pool(name, states.hidden, mask, weights) for name in poolers]  # P x [L+1, B, H]
    stacked = torch.stack(per_pooler, dim=2).permute(1, 0, 2, 3).float().numpy()  # [B, L+1, P, H]
    if not mixes:
        return stacked, None
    pooled = [POOLERS["max"](mix_layers(states.hidden, mixer, layers), mask) for mixer, layers in mixes.values()]
    return stacked, torch.stack(pooled, dim=1).float().numpy()  # [B, M, H]


def _fill_from_pieces(encoder, texts, long_text, poolers, include_special, mixes, vectors, max_mixes, on_progress) -> None:
    """Pool every piece, then aggregate pieces per text into the bank (accumulated in float64, per group of texts)."""
    how = long_text.aggregate if long_text.kind == "windows" else "first"
    group = 256
    with encoder.running():
        for first in range(0, len(texts), group):
            pieces = piece_tokens(encoder, texts[first : first + group], long_text, first)
            count = min(group, len(texts) - first)
            parts = [np.zeros((count, *vectors.shape[1:]))] + ([np.zeros((count, *max_mixes.shape[1:]))] if max_mixes is not None else [])
            if how == "max":
                for part in parts:
                    part.fill(-np.inf)
            weight = np.zeros(count)
            for states in encoder.iter_states(pieces.tokenized):
                rows = states.doc_index.numpy()
                owner = pieces.owner[rows] - first
                outputs = _pool_batch(states, poolers, include_special, mixes)
                w = np.maximum(pieces.tokens[rows], 1e-9) if how == "weighted" else np.ones(len(rows))
                keep = pieces.order[rows] == 0 if how == "first" else np.ones(len(rows), dtype=bool)
                for part, value in zip(parts, outputs):
                    if how == "max":
                        np.maximum.at(part, owner, value)
                    else:
                        np.add.at(part, owner[keep], value[keep] * w[keep].reshape(-1, *([1] * (value.ndim - 1))))
                np.add.at(weight, owner[keep], w[keep])
            if how != "max":
                parts = [part / weight.reshape(-1, *([1] * (part.ndim - 1))) for part in parts]
            vectors[first : first + count] = parts[0].astype(vectors.dtype)
            if max_mixes is not None:
                max_mixes[first : first + count] = parts[1].astype(max_mixes.dtype)
            if on_progress:
                on_progress(first + count, len(texts))


def staging_dir(final: Path) -> Path:
    """A fresh private directory next to `final` to build a cache entry in."""
    tmp = final.with_name(f".{final.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    return tmp


def publish(tmp: Path, final: Path, meta: dict) -> None:
    """Write meta.json last and rename the finished directory into place (readers never see half a bank)."""
    (tmp / "meta.json").write_text(json.dumps(meta, indent=2))
    try:
        os.replace(tmp, final)
    except OSError:  # another process finished the same entry first
        shutil.rmtree(tmp, ignore_errors=True)
