"""`bertlens embed` as a library call: stream a text file in shards, resume after a kill.

Layout while running: OUT.partial/ holds manifest.json and shard-NNNNNN.npz files, each
written atomically. A rerun with the same input, recipe and shard size skips finished
shards. The final OUT (.npy or .parquet) is written to a temporary file and renamed, then
the partial directory is removed.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import numpy as np

from bertlens.embedding.protocol import TextEncoder
from bertlens.errors import BertlensError, OptionError, did_you_mean, literal
from bertlens.io.atomic import atomic_path, check_out_dir, write_json, write_npz, write_text
from bertlens.io.cache import file_sha256
from bertlens.io.tables import EMPTY_POLICIES, TableSpec, check_file, first_lines, is_blank, iter_records
from bertlens.progress import Progress, silent
from bertlens.representation.late_interaction import PackedTokens

OUTPUT_FORMATS = (".npy", ".parquet")
JOB_VERSION = 1


@dataclass(frozen=True)
class EmbedSummary:
    out: Path
    rows: int
    skipped_empty: int
    truncated: int
    resumed_shards: int
    dim: int
    chunks: int = 0  # a chunk recipe's rows (one per chunk, with the text's id, its number and characters)


@dataclass(frozen=True)
class _Scan:
    rows: int
    empty_lines: tuple[int, ...]
    sha256: str


def _scan(spec: TableSpec) -> _Scan:
    """One streaming pass: validates every record before any work starts and hashes the file."""
    rows, empty = 0, []
    for line, (text,) in iter_records(spec):
        rows += 1
        if is_blank(text):
            empty.append(line)
    return _Scan(rows, tuple(empty), file_sha256(spec.path))


def _kept_records(spec: TableSpec, empty: str) -> Iterator[tuple[int, str]]:
    for line, (text,) in iter_records(spec):
        if empty == "skip" and is_blank(text):
            continue
        yield line, text


def _shards(records: Iterator[tuple[int, str]], size: int) -> Iterator[list[tuple[int, str]]]:
    while chunk := list(islice(records, size)):
        yield chunk


def check_output(out: Path) -> None:
    """Everything about --out that can be checked before a model is loaded or a text is read."""
    out = Path(out)
    if out.is_dir():
        raise BertlensError(f"output {out} is a directory; give a file name ending in .npy or .parquet")
    if out.suffix.lower() not in OUTPUT_FORMATS:
        raise BertlensError(f"output {out}: unsupported extension '{out.suffix}'; use .npy or .parquet")
    if not out.parent.is_dir():
        raise BertlensError(f"output directory {out.parent} does not exist; create it first")
    check_out_dir(out.parent)  # a real write, not os.access: that says yes to root everywhere (even /proc)
    if out.exists() and not os.access(out, os.W_OK):
        raise OptionError(
            f"output {literal(out)} exists and is not writable; remove it or choose another {{out}}", "out"
        )


def _lock(partial: Path, out: Path):
    """Hold an exclusive lock on OUT.partial for this run; a second run on the same --out stops at once."""
    partial.mkdir(exist_ok=True)
    handle = open(partial / ".lock", "w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise OptionError(
            f"another bertlens embed is writing {literal(out)} right now (lock on {literal(partial)}); wait for it to "
            "finish or choose another {out}",
            "out",
        ) from None
    return handle


def _prepare_partial(partial: Path, manifest: dict) -> int:
    """Reuse OUT.partial (locked, created by _lock) or start it; returns how many shards are already done."""
    path = partial / "manifest.json"
    if path.exists():
        try:
            previous = json.loads(path.read_text())
        except (OSError, ValueError):
            previous = None
        if previous != manifest:
            raise OptionError(
                f"{literal(partial)} holds an unfinished run with a different input, recipe or shard size; "
                "delete it (or pass {restart}) to start over",
                "restart",
            )
        return sum(1 for file in partial.glob("shard-*.npz") if _shard_ok(file))
    write_json(path, manifest)
    return 0


def _shard_ok(file: Path) -> bool:
    """A finished shard: its .npz and the sha256 written after it agree."""
    digest = file.with_suffix(".sha256")
    return file.is_file() and digest.is_file() and digest.read_text().strip() == file_sha256(file)


def _write_npy(out: Path, shard_files: list[Path], rows: int, dim: int, ids_needed: bool) -> None:
    """OUT.npy [rows, D]; OUT.ids.npy (input lines) when rows were skipped. A chunk recipe's rows are chunks:
    OUT.chunks.npy [rows, 4] int64 then says each one's (input line, chunk number, start, end character)."""
    chunked = _chunked(shard_files)
    rows = sum(_shard_rows(file) for file in shard_files) if chunked else rows
    ids = np.empty(rows, dtype=np.int64)
    spans = np.empty((rows, 4), dtype=np.int64) if chunked else None
    with atomic_path(out) as tmp:
        matrix = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(rows, dim))  # [N, D]
        start = 0
        for file in shard_files:
            with np.load(file, allow_pickle=False) as shard:
                n = len(shard["ids"])
                matrix[start : start + n] = shard["vectors"]
                ids[start : start + n] = shard["ids"]
                if spans is not None:
                    spans[start : start + n] = np.stack([shard["ids"], *(shard[c] for c in CHUNK_COLUMNS)], axis=1)
            start += n
        matrix.flush()
        del matrix
        if spans is not None:
            with atomic_path(out.with_name(out.stem + ".chunks.npy")) as spans_tmp:
                np.save(spans_tmp, spans)
        elif ids_needed:
            with atomic_path(out.with_name(out.stem + ".ids.npy")) as ids_tmp:
                np.save(ids_tmp, ids)


def _write_token_npy(out: Path, shard_files: list[Path], dim: int, ids_needed: bool) -> None:
    """A multi-vector recipe's OUT.npy: every kept token's vector [T, D], with OUT.offsets.npy [N+1] (text i's rows
    are offsets[i]:offsets[i+1]) and, when rows were skipped, OUT.ids.npy. Shards are copied one at a time into the
    mapped output, so memory holds one shard, not the corpus' tokens."""
    counts = []
    for file in shard_files:
        with np.load(file, allow_pickle=False) as shard:
            counts.append(np.diff(shard["offsets"]))  # tokens per text
    lengths = np.concatenate(counts) if counts else np.zeros(0, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)  # [N+1]
    ids = []
    with atomic_path(out) as tmp:
        matrix = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(int(offsets[-1]), dim))  # [T, D]
        start = 0
        for file in shard_files:
            with np.load(file, allow_pickle=False) as shard:
                vectors = shard["vectors"].reshape(-1, dim)
                matrix[start : start + len(vectors)] = vectors
                ids.append(shard["ids"])
            start += len(vectors)
        matrix.flush()
        del matrix
    with atomic_path(out.with_name(out.stem + ".offsets.npy")) as tmp:
        np.save(tmp, offsets)
    if ids_needed:
        with atomic_path(out.with_name(out.stem + ".ids.npy")) as tmp:
            np.save(tmp, np.concatenate(ids))


def _write_parquet(out: Path, shard_files: list[Path], dim: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    extra = CHUNK_COLUMNS if _chunked(shard_files) else ()  # a chunk recipe: one row per chunk
    tokens = _multi_vector(shard_files)  # a multi-vector recipe: a list of token vectors per text
    vector = pa.list_(pa.float32(), dim)
    schema = pa.schema(
        [("id", pa.int64()), *((c, pa.int64()) for c in extra), ("embedding", pa.list_(vector) if tokens else vector)]
    )
    with atomic_path(out) as tmp, pq.ParquetWriter(tmp, schema) as writer:
        for file in shard_files:
            with np.load(file, allow_pickle=False) as shard:
                vectors = shard["vectors"]  # [n, D], or [T, D] token vectors
                if tokens:
                    column = PackedTokens(vectors.reshape(-1, dim), shard["offsets"]).to_arrow(pa.float32())
                else:
                    column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), dim)
                columns = {"id": pa.array(shard["ids"]), **{c: pa.array(shard[c]) for c in extra}}
                writer.write_table(pa.table({**columns, "embedding": column}, schema=schema))


CHUNK_COLUMNS = ("chunk", "start", "end")  # a chunk row's number within its text and [start, end) characters


def _chunked(shard_files: list[Path]) -> bool:
    if not shard_files:
        return False
    with np.load(shard_files[0], allow_pickle=False) as shard:
        return "chunk" in shard.files


def _multi_vector(shard_files: list[Path]) -> bool:
    if not shard_files:
        return False
    with np.load(shard_files[0], allow_pickle=False) as shard:
        return "offsets" in shard.files


def _shard_rows(file: Path) -> int:
    with np.load(file, allow_pickle=False) as shard:
        return len(shard["ids"])


def run_embed(
    spec: TableSpec,
    out: Path,
    embedder: TextEncoder,
    *,
    empty: str = "error",
    shard_size: int = 4096,
    restart: bool = False,
    progress: Progress = silent,
) -> EmbedSummary:
    """Embed every record of `spec` into `out`; `progress("embedding", done, total)` after each batch.

    Empty or whitespace-only texts: 'error' (default) stops before any work and names their
    lines; 'skip' drops them (ids keep the input line numbers); 'keep' embeds them as-is.
    """
    if empty not in EMPTY_POLICIES:
        raise BertlensError(f"unknown empty-text policy '{empty}': {did_you_mean(empty, EMPTY_POLICIES)}")
    if shard_size < 1:
        raise OptionError("{shard_size} must be at least 1", "shard_size")
    check_file(spec.path)
    check_output(out)
    scan = _scan(spec)
    if scan.empty_lines and empty == "error":
        raise OptionError(
            f"{literal(spec.path)}: empty or whitespace-only text on line {first_lines(scan.empty_lines)}; "
            "remove them, or set {empty} to skip (drop them) or keep (embed them as empty text)",
            "empty",
        )
    rows = scan.rows - (len(scan.empty_lines) if empty == "skip" else 0)
    if rows == 0:
        raise BertlensError(f"{spec.path}: no text left to embed")
    partial = out.with_name(out.name + ".partial")
    lock = _lock(partial, out)
    try:
        return _run_locked(spec, out, embedder, scan, partial, empty, shard_size, restart, progress)
    finally:
        lock.close()


def _run_locked(spec, out, embedder, scan, partial, empty, shard_size, restart, progress) -> EmbedSummary:
    rows = scan.rows - (len(scan.empty_lines) if empty == "skip" else 0)
    if restart:
        for stale in partial.iterdir():
            if stale.name != ".lock":
                stale.unlink()
    manifest = {
        "job_version": JOB_VERSION,
        "input": str(spec.path.resolve()),
        "input_sha256": scan.sha256,
        "columns": list(spec.columns),
        "header": spec.header,
        "empty": empty,
        "shard_size": shard_size,
        "recipe": embedder.recipe.to_dict(),
        "prompt": getattr(embedder, "prompt", ""),  # a role's prompt (embed --role): queries and documents differ
        "model_fingerprint": embedder.fingerprint,
    }
    if getattr(embedder, "multi_vector", False):  # queries and documents keep different tokens
        manifest["reads_queries"] = bool(getattr(embedder, "reads_queries", False))
    reading = embedder.recipe.long_text_strategy
    if reading is not None and reading.for_documents:  # read as documents (chunks) or as queries (whole)
        manifest["chunked"] = bool(getattr(embedder, "chunked", False))
    finished = _prepare_partial(partial, manifest)
    done = 0
    truncated = 0
    shard_files = []
    for number, shard in enumerate(_shards(_kept_records(spec, empty), shard_size)):
        file = partial / f"shard-{number:06d}.npz"
        shard_files.append(file)
        if _shard_ok(file):
            with np.load(file, allow_pickle=False) as stored:
                truncated += int(stored["truncated"])
            done += len(shard)
            progress("embedding", done, rows)
            continue
        if file.exists():
            warnings.warn(
                f"shard {file.name} of the unfinished run failed its checksum; embedding it again", stacklevel=2
            )
        texts = [text for _, text in shard]
        lines = np.array([line for line, _ in shard], dtype=np.int64)
        report = lambda stage, n, total, base=done: progress(stage, base + n, rows)  # noqa: E731
        if getattr(embedder, "multi_vector", False):  # every kept token's vector: rows [T, D], offsets [n+1]
            tokens = embedder.embed_tokens(texts, report)
            write_npz(file, vectors=tokens.vectors, offsets=tokens.offsets, ids=lines, truncated=np.array(0))
        elif getattr(embedder, "chunked", False):  # a chunk recipe: one row per chunk
            chunks = embedder.embed_chunks(texts, report)  # vectors [C, D]
            spans = chunks.characters.astype(np.int64)  # [C, 2]
            write_npz(file, vectors=chunks.vectors, ids=lines[chunks.owner], chunk=chunks.chunk.astype(np.int64),
                      start=spans[:, 0], end=spans[:, 1], truncated=np.array(0))  # fmt: skip
        else:
            result = embedder.embed(texts, report)  # vectors [n, D]
            truncated += result.truncated
            write_npz(file, vectors=result.vectors, ids=lines, truncated=np.array(result.truncated))
        done += len(shard)
        write_text(file.with_suffix(".sha256"), file_sha256(file) + "\n")  # written last: marks the shard finished
    if out.suffix.lower() == ".npy" and getattr(embedder, "multi_vector", False):
        _write_token_npy(out, shard_files, embedder.dim, ids_needed=empty == "skip" and bool(scan.empty_lines))
    elif out.suffix.lower() == ".npy":
        _write_npy(out, shard_files, rows, embedder.dim, ids_needed=empty == "skip" and bool(scan.empty_lines))
    else:
        _write_parquet(out, shard_files, embedder.dim)
    chunks = sum(_shard_rows(file) for file in shard_files) if _chunked(shard_files) else 0
    shutil.rmtree(partial)
    skipped = len(scan.empty_lines) if empty == "skip" else 0
    return EmbedSummary(out, rows, skipped, truncated, finished, embedder.dim, chunks)


def save_table(table, out: Path, *, ids_needed: bool) -> Path:
    """An embed output held in memory (the Arrow table a .parquet output holds: id, the chunk columns of a chunk
    recipe, embedding) written as `run_embed` writes it: .parquet as it is; .npy as the vectors, with OUT.chunks.npy
    (a chunk recipe) or OUT.ids.npy (`ids_needed`: empty texts were skipped) beside them."""
    import pyarrow.parquet as pq

    out = Path(out)
    check_output(out)
    if out.suffix.lower() == ".parquet":
        with atomic_path(out) as tmp:
            pq.write_table(table, tmp)
        return out
    ids = table.column("id").to_numpy()
    vectors = np.asarray(table.column("embedding").combine_chunks().flatten().to_numpy(), dtype=np.float32)
    with atomic_path(out) as tmp:
        np.save(tmp, vectors.reshape(len(ids), -1))  # [N, D]
    if "chunk" in table.column_names:
        spans = np.stack([ids, *(table.column(c).to_numpy() for c in CHUNK_COLUMNS)], axis=1).astype(np.int64)
        with atomic_path(out.with_name(out.stem + ".chunks.npy")) as tmp:
            np.save(tmp, spans)
    elif ids_needed:
        with atomic_path(out.with_name(out.stem + ".ids.npy")) as tmp:
            np.save(tmp, ids.astype(np.int64))
    return out
