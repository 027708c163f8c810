"""`bertlens index`: a corpus embedded with a recipe into a vector store, with the recipe's fingerprint beside it.

The store keeps the recipe (so `search` embeds queries exactly as the documents were) and every row's
document id, span and text. Documents are written in batches, each one commit (sent while the next batch is
embedded); a rerun of the same command skips the documents already there, so a killed run continues where it
stopped and nothing is written twice.
A store made with another recipe is never mixed into: the run stops in one line instead.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from bertlens.embedding.prompted import with_role
from bertlens.embedding.protocol import TextEncoder
from bertlens.errors import OptionError, literal
from bertlens.progress import Progress, silent
from bertlens.representation.fingerprint import recipe_fingerprint
from bertlens.stores.protocol import VectorStore
from bertlens.stores.rows import IndexRecord, Rows

BATCH_DOCUMENTS = 512  # documents per commit: what a killed run can lose, and the store's write size


@dataclass(frozen=True)
class IndexSummary:
    store: str
    fingerprint: str
    documents: int  # in the corpus
    written: int  # documents embedded and written by this run
    skipped: int  # already in the store (a resumed run)
    rows: int  # rows in the store afterwards
    seconds: float
    embed_seconds: float  # of which embedding (the rest: reading the store and writing)


def index_record(encoder: TextEncoder) -> IndexRecord:
    """The recipe, its fingerprint and, for an ONNX export, where it is: a search then loads the same graph."""
    recipe, export_dir = encoder.recipe, getattr(encoder, "export_dir", None)
    fingerprint = recipe_fingerprint(recipe, encoder.fingerprint)
    multi_vector = bool(getattr(encoder, "multi_vector", False))
    first = getattr(encoder, "first_stage", None)
    return IndexRecord(
        recipe.to_json(),
        fingerprint,
        encoder.dim,
        export_dir=export_dir and str(export_dir),
        multi_vector=multi_vector,
        first_stage_dim=None if first is None else first.dim,
    )


def document_rows(reader: TextEncoder, ids: list[str], texts: list[str]) -> Rows:
    """One row per document, or per chunk for a chunk recipe (its characters and text the chunk's own)."""
    if getattr(reader, "multi_vector", False):  # every kept token's vector: one row per document, many vectors
        if getattr(reader, "first_stage", None) is None:
            tokens, pooled = reader.embed_tokens(texts), None  # [T, D], offsets [B+1]
        else:  # and the pooled first stage's vectors [B, D1] beside them, from the same forward pass
            tokens, pooled = reader.embed_both(texts, "document")
        zeros = np.zeros(len(ids), dtype=np.int32)
        lengths = np.array([len(t) for t in texts], dtype=np.int32)
        return Rows(
            tuple(ids), zeros, zeros, lengths, tuple(texts), tokens.vectors, offsets=tokens.offsets, first_stage=pooled
        )
    if not getattr(reader, "chunked", False):  # a TextEncoder need not subclass the protocol
        vectors = reader.encode(texts)  # [B, D]
        zeros = np.zeros(len(ids), dtype=np.int32)
        return Rows(tuple(ids), zeros, zeros, np.array([len(t) for t in texts], dtype=np.int32), tuple(texts), vectors)
    chunks = reader.embed_chunks(texts)  # vectors [C, D]
    owner = chunks.owner.tolist()
    spans = chunks.characters.astype(np.int32)  # [C, 2]
    return Rows(
        tuple(ids[i] for i in owner),
        chunks.chunk.astype(np.int32),
        spans[:, 0],
        spans[:, 1],
        tuple(texts[i][a:b] for i, (a, b) in zip(owner, spans.tolist(), strict=True)),
        chunks.vectors,
    )


def run_index(
    documents: dict[str, str],
    encoder: TextEncoder,
    store: VectorStore,
    *,
    restart: bool = False,
    batch: int = BATCH_DOCUMENTS,
    progress: Progress = silent,
) -> IndexSummary:
    """Embed `documents` ({id: text}, in order) with `encoder` (its recipe's document prompt applied) into `store`:
    one row per document, or one per chunk when the recipe keeps chunks (a search then scores a document by its
    best chunk)."""
    if batch < 1:
        raise OptionError(f"{{batch}} must be at least 1 document, got {batch}", "batch")
    start = time.perf_counter()
    record = index_record(encoder)
    held = store.record()
    if held is not None and held.fingerprint != record.fingerprint and not restart:
        raise OptionError(
            f"store {literal(store.where)} holds vectors of another recipe (fingerprint {held.fingerprint}; this one "
            f"is {record.fingerprint}); index into a new store, or pass {{restart}} to replace its contents",
            "restart",
        )
    if held is None or restart:
        store.create(record)
    done = store.documents()
    unknown = done - documents.keys()
    if unknown:
        raise OptionError(
            f"store {literal(store.where)} holds {len(unknown)} documents this corpus lacks (e.g. "
            f"'{literal(sorted(unknown)[0])}'); index this corpus into a new store, or pass {{restart}}",
            "restart",
        )
    todo = [d for d in documents if d not in done]
    reader = with_role(encoder, "document")
    embed_seconds = 0.0
    progress("indexing", 0, len(todo))
    # One writer thread: batch i is committed while batch i+1 is embedded, so a store's writes (a server's HTTP
    # round trips and index building) overlap the encoder instead of adding to it. Commits stay in order, one in
    # flight at most; progress counts committed documents, and leaving the block waits for the last commit.
    with ThreadPoolExecutor(1) as writer:
        pending, committed = None, 0
        for first in range(0, len(todo), batch):
            ids = todo[first : first + batch]
            t0 = time.perf_counter()
            rows = document_rows(reader, ids, [documents[d] for d in ids])
            embed_seconds += time.perf_counter() - t0
            if pending is not None:
                committed += pending.result()
                progress("indexing", committed, len(todo))
            pending = writer.submit(lambda rows=rows, count=len(ids): (store.add(rows), count)[1])
        if pending is not None:
            committed += pending.result()
            progress("indexing", committed, len(todo))
    return IndexSummary(
        store.where,
        record.fingerprint,
        len(documents),
        len(todo),
        len(done),
        store.count(),
        time.perf_counter() - start,
        embed_seconds,
    )
