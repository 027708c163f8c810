"""The feature bank: one forward pass -> pooled vectors for every layer x pooler, cached on disk.

vectors: [P, L+1, N, H] for poolers P (cls, mean, max, attention by default). Mixing
commutes with the linear poolers, so every linear mix of layers is computed from this
without another pass. A non-linear pooler (max) does not commute with mixing, so the named
mixes of its states are pooled at encode time into `mixes` [Q, M, N, H] (Q non-linear poolers).
The attention pooler uses the last layer's [CLS] attention for every layer (fixed weights
keep it linear, hence mixable).
"""

from __future__ import annotations

import contextlib
import mmap
import time
import warnings
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from bertlens.encoding.chunking import LongText
from bertlens.encoding.encoder import Encoder
from bertlens.encoding.pieces import piece_tokens, pooled_units
from bertlens.encoding.tokens import Tokenized
from bertlens.features.layers import pool_layers
from bertlens.io.atomic import write_npy
from bertlens.io.cache import content_key, open_entry, private_staging, publish, resumable_staging
from bertlens.progress import Progress, counting, silent
from bertlens.representation.aggregate import aggregate
from bertlens.representation.choices import DEFAULT_POOLERS, needs_cls_attention
from bertlens.representation.mixers import mix_layers, mix_pooled
from bertlens.representation.poolers import LINEAR_POOLERS, check_pooler, pool, token_mask

BANK_VERSION = 3  # 2: meta.json carries a sha256 per file, verified on open; 3: stored pooler-major
PIECE_GROUP = 256  # long texts aggregated per group: memory is bounded by a group's pieces
CHECKPOINT_SECONDS = 60.0  # a stopped build loses at most this much encoding (see _Checkpoints)
DONE_FILE = "done.npy"  # staged banks only: which rows hold their vectors (never published)
MIX_ROWS = 1 << 14  # rows of a ScalarMix mixed between releases of the file's pages: at most this many rows of
# every layer stay resident (16k x 13 x 768 float16: 330 MB), not the whole pooler (2 GB at 100k texts, base size)


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
    """A read-only (memory-mapped) bank plus what it was built from.

    Stored pooler-major, so one pooler's one layer is a contiguous [N, H] block on disk: a probe
    gathers rows straight from the mapped file, and no second copy of the bank is ever held.
    """

    path: Path
    vectors: np.ndarray  # [P, L+1, N, H]
    mixes: np.ndarray | None  # [Q, M, N, H]: named layer mixes of the non-linear poolers, pooled at encode time
    poolers: tuple[str, ...]
    mix_names: tuple[str, ...]
    texts: int
    meta: dict

    @property
    def num_layers(self) -> int:
        return self.vectors.shape[1] - 1

    @property
    def width(self) -> int:
        """Hidden size H."""
        return self.vectors.shape[-1]

    def layer(
        self, pooler: str, layer: int, rows: np.ndarray | None = None, out: np.ndarray | None = None
    ) -> np.ndarray:
        """[n, H] float32: one layer's pooled vectors for the given rows (all by default), a new array or written
        into `out` (a view of the caller's larger array: no second copy of the rows is made)."""
        block = self.vectors[self.poolers.index(pooler), layer]  # [N, H], contiguous on disk
        return _float32(_rows_of(block, rows), self.vectors, out)

    def mixed(
        self,
        pooler: str,
        layers: tuple[int, ...],
        weights: np.ndarray,
        rows: np.ndarray | None = None,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """[n, H] float32 (a new array, or written into `out`): a ScalarMix (pre-softmax `weights`, one per layer)
        of one linear pooler's layers, for the given rows (all by default), mixed straight from the stored vectors
        (no float32 copy of each layer first), MIX_ROWS rows at a time: the file's pages are released after each
        part, so the process never holds every layer of the pooler (a 2 GB peak of the base-size 100k sweep's
        screen). Each value is computed exactly as in one pass."""
        block = self.vectors[self.poolers.index(pooler)]  # [L+1, N, H]
        count = block.shape[1] if rows is None else len(rows)
        mixed = np.empty((count, self.width), dtype=np.float32) if out is None else out  # [n, H]
        for start in range(0, count, MIX_ROWS):
            part = slice(start, start + MIX_ROWS)
            picked = part if rows is None else rows[part]
            mix_pooled((block[k][picked] for k in layers), weights, out=mixed[part])
            release_pages(self.vectors)
        return mixed

    def pooled(self, pooler: str, layers: tuple[int, ...] | None = None, rows: np.ndarray | None = None) -> np.ndarray:
        """[n, K, H] float32 for one pooler, the given layers (all by default) and rows (all by default)."""
        layers = range(self.num_layers + 1) if layers is None else layers
        return np.stack([self.layer(pooler, k, rows) for k in layers], axis=1)

    @property
    def nonlinear_poolers(self) -> tuple[str, ...]:
        return nonlinear(self.poolers)

    def pooled_mix(
        self, pooler: str, mix: str, rows: np.ndarray | None = None, out: np.ndarray | None = None
    ) -> np.ndarray:
        """[n, H] float32 (a new array, or written into `out`): a named layer mix of a non-linear pooler, pooled at
        encode time."""
        block = self.mixes[self.nonlinear_poolers.index(pooler), self.mix_names.index(mix)]  # [N, H]
        return _float32(_rows_of(block, rows), self.mixes, out)


def _rows_of(block: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """block's given rows: the block itself (a view of the file) when they are all of its rows in order, as a
    sweep's screen asks for them; a gathered copy otherwise."""
    if rows is None or (len(rows) == len(block) and np.array_equal(rows, np.arange(len(block)))):
        return block
    return block[rows]


def _float32(array: np.ndarray, mapped: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """A float32 copy (float16 -> float32 is exact), never a view of the mapped file, new or written into `out`;
    the file's pages are then released from this process."""
    source = np.asarray(array)
    if source.dtype == np.float16:  # PyTorch converts on every core, numpy on one: 2.1x faster for 9k x 1536 rows
        with warnings.catch_warnings():  # a read-only map is read straight (only read: nothing writes to it);
            # copying it first cost a third of a whole layer's read (54 against 37 ms at 100k x 384, Intel Xeon)
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
            if out is None:
                copy = torch.from_numpy(source).float().numpy()  # [n, H]
            else:
                torch.from_numpy(out).copy_(torch.from_numpy(source))  # [n, H], converted into place
                copy = out
    elif out is None:
        copy = np.array(source, dtype=np.float32)
    else:
        out[...] = source
        copy = out
    release_pages(mapped)
    return copy


def release_pages(mapped: np.ndarray | None) -> None:
    """Drop a memory-mapped array's pages from this process's resident set (MADV_DONTNEED).

    They stay in the page cache (a shared file mapping loses nothing, written pages included), so the
    next read is a memory copy, not disk; but the process no longer holds the whole bank: at 100k
    texts that is 2.2 GB of the sweep's peak RSS (measured, issue #25). No-op where madvise is missing.
    """
    mapping = getattr(mapped, "_mmap", None)  # numpy.memmap keeps its mmap.mmap here
    if mapping is not None and hasattr(mmap, "MADV_DONTNEED"):
        mapping.madvise(mmap.MADV_DONTNEED)


def nonlinear(poolers: tuple[str, ...]) -> tuple[str, ...]:
    """The poolers whose layer mixes the bank must pool at encode time."""
    return tuple(p for p in poolers if p not in LINEAR_POOLERS)


def _open(path: Path, meta: dict) -> Bank:
    vectors = np.load(path / "vectors.npy", mmap_mode="r", allow_pickle=False)
    mixes_file = path / "mixes.npy"
    mixes = np.load(mixes_file, mmap_mode="r", allow_pickle=False) if mixes_file.exists() else None
    return Bank(path, vectors, mixes, tuple(meta["poolers"]), tuple(meta["mix_names"]), meta["texts"], meta)


_STAGE_ROWS: ContextVar = ContextVar("bank_stage_rows", default=None)  # the rows a staged sweep's stage asks for


@contextlib.contextmanager
def stage_rows(rows: np.ndarray) -> Iterator[None]:
    """Within this block, build_bank encodes only `rows` (indices into its texts), for a sweep that looks at growing
    stages of its data. The bank keeps the key of all its texts (a later build with more rows, or with all, carries
    on from the rows already done) and stays unpublished until every row is asked for; the Bank returned then reads
    the staging arrays, and only the rows asked for (and any done before) hold vectors."""
    token = _STAGE_ROWS.set(np.asarray(rows, dtype=np.int64))
    try:
        yield
    finally:
        _STAGE_ROWS.reset(token)


def _wanted(count: int) -> np.ndarray | None:
    """[count] bool: the rows this build encodes inside stage_rows(), or None for every row."""
    rows = _STAGE_ROWS.get()
    if rows is None:
        return None
    wanted = np.zeros(count, dtype=bool)
    wanted[rows] = True
    return None if wanted.all() else wanted


_ENGINE: ContextVar = ContextVar("bank_engine", default=None)  # the engine of the run that set one (encoded_by)


@contextlib.contextmanager
def encoded_by(engine) -> Iterator[None]:
    """Within this block, banks of the engine's encoder are encoded by `engine` (a sweep's `--engine ray`): every
    build_bank call of the run, without passing it through each layer. A bank of another encoder, or a seeded
    dropout view, is still encoded here."""
    token = _ENGINE.set(engine)
    try:
        yield
    finally:
        _ENGINE.reset(token)


def build_bank(
    encoder: Encoder,
    texts: list[str],
    cache_dir: Path,
    *,
    poolers: tuple[str, ...] = DEFAULT_POOLERS,
    include_special: bool = True,
    dtype: str = "float16",
    long_text: LongText | None = None,
    progress: Progress = silent,
    variant: str | None = None,
) -> Bank:
    """Encode once and store every layer x pooler; reuse the stored bank when its key matches and it verifies.

    Inside `stage_rows(rows)` only those rows of `texts` are encoded (a staged sweep: see stage_rows).

    `variant` names a bank that differs from the plain one in how it was encoded (e.g. a seeded dropout view,
    encoded under `Encoder.dropout_active`): it is part of the cache key, so the two never mix.

    With `long_text`, each text is cut into pieces (encoding/pieces.py) and its pieces' pooled
    vectors are aggregated per text (windows: the strategy's aggregate; one-piece strategies:
    that piece), with the same aggregator the Embedder uses.

    Inside `encoded_by(engine)` (features/ray_bank.py: RayBankEngine) the rows are encoded on a pool of Ray actors
    instead of here (short texts in chunks, long texts in groups of PIECE_GROUP texts); the bank, its staging,
    checkpoints and resume stay the same. A bank encoded with dropout on is always encoded here (see below).
    """
    for name in poolers:
        check_pooler(name)
    engine = _ENGINE.get()
    if engine is not None and (encoder.model.training or not engine.serves(encoder)):
        engine = None  # a view with dropout (its masks follow the batches: only one order gives the seed's bank), or
        # another encoder: encoded here
    if needs_cls_attention(poolers) and encoder.attentions == "none":
        raise ValueError(f"poolers {poolers} read the [CLS] attention: build the Encoder with attentions='cls'")
    settings = [
        BANK_VERSION,
        encoder.ref.fingerprint,
        encoder.max_length,
        encoder.precision,
        include_special,
        list(poolers),
        dtype,
    ] + ([long_text.name] if long_text else [])
    settings += [variant] if variant else []
    final = cache_dir / "banks" / content_key(settings, texts, length=24)
    meta = open_entry(final, "feature bank")
    if meta is not None:
        return _open(final, meta)
    num_layers = encoder.num_layers
    mixes = named_mixes(num_layers) if nonlinear(poolers) else {}
    shape = (len(poolers), num_layers + 1, len(texts), encoder.hidden_size)
    mix_shape = (len(nonlinear(poolers)), len(mixes), len(texts), encoder.hidden_size) if mixes else None
    # A build with dropout on (a seeded view) starts from zero: rows encoded again after a stop would draw other
    # dropout masks than one uninterrupted run, so the same seed would not give the same bank.
    staging = private_staging(final) if encoder.model.training else resumable_staging(final)
    wanted = _wanted(len(texts))
    with staging as (tmp, resumable):
        vectors, mix_array, state = _staged_arrays(tmp, shape, mix_shape, dtype, resumable)
        state.wanted = wanted
        pooling = _Pooling(tuple(poolers), include_special, mixes, dtype)
        if long_text is not None:
            _fill_from_pieces(encoder, texts, long_text, pooling, vectors, mix_array, state, progress, engine)
            truncated = 0
        elif engine is not None:
            truncated = _fill_remote(engine, encoder, texts, pooling, vectors, mix_array, state, progress)
        else:
            truncated = _fill(encoder, texts, pooling, vectors, mix_array, state, progress)
        state.save()
        if wanted is not None:  # a stage: the rows asked for are done and flushed; the bank is not complete yet
            partial = {"poolers": list(poolers), "mix_names": list(mixes), "texts": len(texts), "partial": True}
            return Bank(tmp, vectors, mix_array, tuple(poolers), tuple(mixes), len(texts), partial)
        state.arrays.clear()
        del vectors, mix_array
        (tmp / DONE_FILE).unlink()
        meta = {
            "bank_version": BANK_VERSION,
            "model": encoder.ref.name,
            "model_fingerprint": encoder.ref.fingerprint,
            "max_length": encoder.max_length,
            "precision": encoder.precision,
            "include_special": include_special,
            "poolers": list(poolers),
            "mix_names": list(mixes),
            "texts": len(texts),
            "dtype": dtype,
            "truncated": truncated,
            "attention_layer": -1,
            "long_text": long_text.name if long_text else None,
            "variant": variant,
        }
        publish(tmp, final, meta)
    return _open(final, open_entry(final, "feature bank") or meta)


class _Checkpoints:
    """Which rows of a staged bank hold their vectors for sure, so a stopped build resumes where it stopped.

    Rows become done only at a checkpoint: the arrays are flushed to disk first (msync), then `done.npy` is
    replaced atomically; a row written after the last checkpoint is encoded again. Checkpoints come every
    CHECKPOINT_SECONDS, not every batch: each flush writes a batch's rows scattered over the whole file.
    """

    def __init__(self, folder: Path, done: np.ndarray, arrays: list[np.ndarray]):
        self.path, self.done, self.arrays = folder / DONE_FILE, done, arrays
        self.pending: list[np.ndarray] = []
        self.last = time.monotonic()
        self.wanted: np.ndarray | None = None  # [N] bool: the rows this build encodes (None: every row)

    def asked(self, texts: int) -> int:
        """How many rows this build is asked for (what its progress counts to)."""
        return texts if self.wanted is None else int(self.wanted.sum())

    def to_encode(self) -> np.ndarray:
        """[N] bool: the rows asked for that are not done yet."""
        return ~self.done if self.wanted is None else ~self.done & self.wanted

    def written(self, rows: np.ndarray) -> None:
        self.pending.append(np.asarray(rows))
        if time.monotonic() - self.last >= CHECKPOINT_SECONDS:
            self.save()

    def save(self) -> None:
        for array in self.arrays:
            array.flush()
        if self.pending:
            self.done[np.concatenate(self.pending)] = True
            self.pending = []
        write_npy(self.path, self.done)
        self.last = time.monotonic()


def _staged_arrays(folder: Path, shape, mix_shape, dtype: str, resumable: bool):
    """(vectors, mixes or None, checkpoints) in the staging folder: an earlier run's arrays and done rows when they
    match this bank's shapes (resumable staging), new ones otherwise."""
    done = None
    if resumable and (folder / DONE_FILE).is_file():
        try:
            done = np.load(folder / DONE_FILE, allow_pickle=False)
            vectors = np.lib.format.open_memmap(folder / "vectors.npy", mode="r+")
            mixes = np.lib.format.open_memmap(folder / "mixes.npy", mode="r+") if mix_shape else None
            if (
                done.dtype != bool
                or done.shape != (shape[2],)
                or (vectors.shape, vectors.dtype) != (shape, np.dtype(dtype))
                or (mix_shape and (mixes.shape, mixes.dtype) != (mix_shape, np.dtype(dtype)))
            ):
                raise ValueError("shapes differ")
        except (OSError, ValueError):
            done = None
    if done is None:
        for stale in folder.iterdir():
            stale.unlink()
        vectors = np.lib.format.open_memmap(folder / "vectors.npy", mode="w+", dtype=dtype, shape=shape)
        mixes = (
            np.lib.format.open_memmap(folder / "mixes.npy", mode="w+", dtype=dtype, shape=mix_shape)
            if mix_shape
            else None
        )
        done = np.zeros(shape[2], dtype=bool)
    arrays = [vectors] + ([mixes] if mixes is not None else [])
    return vectors, mixes, _Checkpoints(folder, done, arrays)


@dataclass(frozen=True)
class _Pooling:
    """What a bank pools from each batch: the poolers, whether [CLS]/[SEP] count, the named mixes of the
    non-linear poolers."""

    poolers: tuple[str, ...]
    include_special: bool
    mixes: dict
    dtype: str = "float32"  # how the bank stores the rows: an actor sends them so (half the bytes for float16)


def _fill(encoder, texts, pooling: _Pooling, vectors, mix_array, state: _Checkpoints, progress) -> int:
    """Encode the rows not yet done, pool them into the arrays; returns how many texts were cut at max_length."""
    poolers, include_special, mixes = pooling.poolers, pooling.include_special, pooling.mixes
    rest, tokenized, truncated = _rest(encoder, texts, state)
    total = state.asked(len(texts))
    for states in encoder.stream(tokenized, progress, done=total - len(rest), total=total, on_device=True):
        rows = rest[states.doc_index.numpy()]  # positions in `texts`
        _store(rows, *_pool_batch(states, poolers, include_special, mixes), vectors, mix_array, state)
    return truncated


def _rest(encoder, texts, state: _Checkpoints) -> tuple[np.ndarray, Tokenized, int]:
    """The rows still to encode [R] in input order, their tokens, and how many of all the texts were cut."""
    rest = np.flatnonzero(state.to_encode())  # [R]
    if state.wanted is not None:  # a stage: only its rows are read (the truncation count is written at publishing)
        tokenized = encoder.tokenize([texts[i] for i in rest])
        return rest, tokenized, tokenized.truncated
    tokenized = encoder.tokenize(texts)
    if len(rest) == len(texts):
        return rest, tokenized, tokenized.truncated
    ids, special = tokenized.input_ids, tokenized.special_tokens_mask
    return rest, Tokenized([ids[i] for i in rest], [special[i] for i in rest], tokenized.truncated), tokenized.truncated


def _store(rows, stacked, pooled_mixes, vectors, mix_array, state: _Checkpoints) -> None:
    """A batch's pooled rows into the staged arrays, marked written (done at the next checkpoint)."""
    vectors[:, :, rows] = stacked.transpose(2, 1, 0, 3).astype(vectors.dtype)  # [B, L+1, P, H] -> [P, L+1, B, H]
    if mix_array is not None:
        mix_array[:, :, rows] = pooled_mixes.transpose(1, 2, 0, 3).astype(mix_array.dtype)  # -> [Q, M, B, H]
    state.written(rows)
    release_pages(vectors)
    release_pages(mix_array)


def _fill_remote(engine, encoder, texts, pooling: _Pooling, vectors, mix_array, state, progress) -> int:
    """`_fill` with the encoding done by `engine`'s actors, chunk by chunk in order; returns the texts cut."""
    rest, tokenized, truncated = _rest(encoder, texts, state)
    total = state.asked(len(texts))
    done = total - len(rest)
    for rows, stacked, pooled_mixes in engine.rows(encoder, tokenized, rest, pooling):
        _store(rows, stacked, pooled_mixes, vectors, mix_array, state)
        done += len(rows)
        progress(counting("encoding", "texts"), done, total)
    return truncated


def _pool_batch(states, poolers, include_special, mixes) -> tuple[np.ndarray, np.ndarray | None]:
    """[B, L+1, P, H] pooled vectors of every layer x pooler, and [B, Q, M, H] named mixes of the non-linear poolers,
    pooled where the states are (on the GPU for a GPU encoder) and moved to the host as float32."""
    per_pooler = pool_layers(states, poolers, include_special)  # P x [L+1, B, H]
    stacked = torch.stack(per_pooler, dim=2).permute(1, 0, 2, 3).float().cpu().numpy()  # [B, L+1, P, H]
    if not mixes:
        return stacked, None
    mask = token_mask(states.attention_mask, states.special_tokens_mask, include_special)  # [B, T]
    mixed = [mix_layers(states.hidden, mixer, layers) for mixer, layers in mixes.values()]  # M x [B, T, H]
    pooled = [torch.stack([pool(name, m, mask) for m in mixed], dim=1) for name in nonlinear(poolers)]  # Q x [B, M, H]
    return stacked, torch.stack(pooled, dim=1).float().cpu().numpy()  # [B, Q, M, H]


def pool_pieces(encoder, texts, long_text, pooling: _Pooling, first: int = 0) -> tuple[np.ndarray, np.ndarray | None]:
    """[n, L+1, P, H] rows of `texts` (the bank's rows first, first+1, ...) cut into pieces, each piece pooled and
    the pieces aggregated per text, and [n, Q, M, H] mixes of the non-linear poolers (or None). The local build and
    the Ray actors both pool a group of long texts with this."""
    poolers, include_special, mixes = pooling.poolers, pooling.include_special, pooling.mixes
    pieces = piece_tokens(encoder, texts, long_text, first)
    owner = pieces.owner - first
    hidden = encoder.hidden_size
    pooled = np.zeros((len(owner), encoder.num_layers + 1, len(poolers), hidden), dtype=np.float32)  # [C, L+1, P, H]
    pooled_mixes = None
    if mixes:
        pooled_mixes = np.zeros((len(owner), len(nonlinear(poolers)), len(mixes), hidden), dtype=np.float32)
    for states in encoder.stream(pieces.tokenized):
        for units, (stacked, batch_mixes) in pooled_units(
            states, pieces, lambda s: _pool_batch(s, poolers, include_special, mixes)
        ):
            pooled[units] = stacked
            if pooled_mixes is not None:
                pooled_mixes[units] = batch_mixes
    how = long_text.piece_aggregate
    per_text = aggregate(pooled, owner, pieces.tokens, pieces.order, len(texts), how)  # [n, L+1, P, H]
    if pooled_mixes is None:
        return per_text, None
    return per_text, aggregate(pooled_mixes, owner, pieces.tokens, pieces.order, len(texts), how)  # [n, Q, M, H]


def _fill_from_pieces(encoder, texts, long_text, pooling: _Pooling, vectors, mix_array, state, progress, engine=None):
    """Pool every piece of a group of texts, then aggregate pieces per text into the bank (groups already done in
    an earlier run are skipped); the groups go to `engine`'s actors when there is one."""
    groups = [np.arange(first, min(first + PIECE_GROUP, len(texts))) for first in range(0, len(texts), PIECE_GROUP)]
    todo = state.to_encode()
    groups = [rows for rows in groups if todo[rows].any()]  # a stage encodes whole groups holding any of its rows
    if engine is None:
        pooled = (
            (rows, *pool_pieces(encoder, [texts[i] for i in rows], long_text, pooling, int(rows[0]))) for rows in groups
        )
    else:
        pooled = engine.piece_rows(encoder, texts, groups, long_text, pooling)
    for rows, stacked, pooled_mixes in pooled:
        _store(rows, stacked, pooled_mixes, vectors, mix_array, state)
        progress(counting("encoding", "texts"), int(rows[-1]) + 1, len(texts))
