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

from bertlens.encoding.encoder import Encoder
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
             poolers: tuple[str, ...], dtype: str) -> str:
    digest = hashlib.sha256()
    header = json.dumps([BANK_VERSION, fingerprint, max_length, precision, include_special, list(poolers), dtype])
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
    on_progress: Callable[[int, int], None] | None = None,
) -> Bank:
    """Encode once and store every layer x pooler; reuse the stored bank when the key matches."""
    for name in poolers:
        check_pooler(name)
    if "attention" in poolers and encoder.attentions == "none":
        raise ValueError("the attention pooler needs an Encoder built with attentions='cls'")
    key = bank_key(encoder.ref.fingerprint, texts, max_length=encoder.max_length, precision=encoder.precision,
                   include_special=include_special, poolers=poolers, dtype=dtype)
    final = cache_dir / "banks" / key
    if (final / "meta.json").exists():
        return _open(final)
    num_layers = encoder.num_layers
    mixes = named_mixes(num_layers) if "max" in poolers else {}
    tmp = cache_dir / "banks" / f".{key}.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    shape = (len(texts), num_layers + 1, len(poolers), encoder.hidden_size)
    vectors = np.lib.format.open_memmap(tmp / "vectors.npy", mode="w+", dtype=dtype, shape=shape)
    max_mixes = None
    if mixes:
        max_mixes = np.lib.format.open_memmap(tmp / "max_mixes.npy", mode="w+", dtype=dtype,
                                              shape=(len(texts), len(mixes), encoder.hidden_size))
    tokenized = encoder.tokenize(texts)
    done = 0
    with encoder.running():
        for states in encoder.iter_states(tokenized):
            rows = states.doc_index.numpy()
            mask = token_mask(states.attention_mask, states.special_tokens_mask, include_special)  # [B, T]
            weights = states.cls_attention[-1] if states.cls_attention is not None else None  # [B, T]
            per_pooler = [pool(name, states.hidden, mask, weights) for name in poolers]  # P x [L+1, B, H]
            stacked = torch.stack(per_pooler, dim=2).permute(1, 0, 2, 3)  # [B, L+1, P, H]
            vectors[rows] = stacked.numpy().astype(dtype)
            if max_mixes is not None:
                pooled = [POOLERS["max"](mix_layers(states.hidden, mixer, layers), mask) for mixer, layers in mixes.values()]
                max_mixes[rows] = torch.stack(pooled, dim=1).numpy().astype(dtype)  # [B, M, H]
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
        "truncated": tokenized.truncated, "attention_layer": -1,
    }
    (tmp / "meta.json").write_text(json.dumps(meta, indent=2))
    try:
        os.replace(tmp, final)
    except OSError:  # another process finished the same bank first
        shutil.rmtree(tmp, ignore_errors=True)
    return _open(final)
