"""A Chroma server (`chroma run`, from the chromadb package): the server store users run beside their apps.

Chosen over PostgreSQL + pgvector because the same PyPI package holds the client and the server (no second
process manager, no compiled extension to match a PostgreSQL build; Debian's PostgreSQL here has no pgvector).
One collection per index, cosine space; the index record is the collection's metadata. Chroma searches
with HNSW only (Malkov & Yashunin 2018), so "exact" here means an HNSW search whose candidate list
(ef_search) covers the whole collection: exact in effect, and slower as the collection grows.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from bertlens.errors import BertlensError
from bertlens.extras import require
from bertlens.stores.rows import Hit, IndexRecord, Rows

RECORD_KEY = "bertlens_index"
APPROXIMATE_EF = 64  # the HNSW candidate list when the caller accepts approximate results


def _chromadb():
    require("stores", "the Chroma store")
    import chromadb

    return chromadb


class ChromaStore:
    """Collection `name` on the Chroma server at host:port."""

    def __init__(self, host: str, port: int, name: str, where: str):
        self.where, self.name = where, name
        try:
            self._client = _chromadb().HttpClient(host=host, port=port)
            self._client.heartbeat()
        except BertlensError:
            raise
        except Exception as exc:  # noqa: BLE001 - the client raises its own connection errors: one line
            raise BertlensError(
                f"store {where}: no Chroma server answers at {host}:{port} ({type(exc).__name__}); start one with "
                "`chroma run --path DIR --port PORT`"
            ) from None

    def _collection(self):
        names = {c if isinstance(c, str) else c.name for c in self._client.list_collections()}
        return self._client.get_collection(self.name) if self.name in names else None

    def record(self) -> IndexRecord | None:
        collection = self._collection()
        if collection is None:
            return None
        text = (collection.metadata or {}).get(RECORD_KEY)
        if text is None:
            raise BertlensError(f"store {self.where}: collection '{self.name}' was not made by bertlens index")
        return IndexRecord.from_json(text, f"store {self.where}")

    def create(self, record: IndexRecord) -> None:
        if record.multi_vector:
            raise BertlensError(
                f"store {self.where}: Chroma holds one vector per row; a multi-vector recipe (pooler 'tokens') is "
                "indexed into a LanceDB directory (its multi-vector column)"
            )
        if self._collection() is not None:
            self._client.delete_collection(self.name)
        self._client.create_collection(
            self.name,
            metadata={RECORD_KEY: record.to_json()},
            configuration={"hnsw": {"space": "cosine", "ef_construction": 200, "max_neighbors": 32}},
        )

    def documents(self) -> set[str]:
        collection = self._client.get_collection(self.name)
        found, offset, page = set(), 0, 5000
        while True:
            got = collection.get(include=["metadatas"], limit=page, offset=offset)
            found.update(str(m["doc_id"]) for m in got["metadatas"])
            if len(got["ids"]) < page:
                return found
            offset += page

    def add(self, rows: Rows) -> None:
        self._client.get_collection(self.name).add(
            ids=rows.ids,
            embeddings=np.ascontiguousarray(rows.vectors, dtype=np.float32),
            documents=list(rows.texts),
            metadatas=[
                {"doc_id": d, "chunk": int(c), "start": int(s), "end": int(e)}
                for d, c, s, e in zip(rows.doc_ids, rows.chunks, rows.starts, rows.ends, strict=True)
            ],
        )

    def count(self) -> int:
        return self._client.get_collection(self.name).count()

    def search(self, queries: np.ndarray, k: int, exact: bool = True) -> list[list[Hit]]:
        collection = self._client.get_collection(self.name)
        total = collection.count()
        ef = max(total, k) if exact else max(APPROXIMATE_EF, k)
        if (collection.configuration_json.get("hnsw") or {}).get("ef_search") != ef:  # as read with the collection
            collection.modify(configuration={"hnsw": {"ef_search": ef}})  # a round trip only when it must change
        got = collection.query(
            query_embeddings=np.asarray(queries, dtype=np.float32),
            n_results=min(k, total),
            include=["metadatas", "documents", "distances"],
        )
        return [
            [
                Hit(str(m["doc_id"]), int(m["chunk"]), int(m["start"]), int(m["end"]), 1.0 - float(dist), text)
                for m, text, dist in zip(metas, texts, dists, strict=True)
            ]
            for metas, texts, dists in zip(got["metadatas"], got["documents"], got["distances"], strict=True)
        ]

    def search_tokens(self, queries, k: int) -> list[list[Hit]]:
        raise BertlensError(f"store {self.where}: Chroma holds no multi-vector index")

    def rerank_tokens(self, pooled, queries, k: int, depth: int, exact: bool = True) -> list[list[Hit]]:
        return self.search_tokens(queries, k)

    def build_ann(self) -> str:
        return f"HNSW (Chroma builds it as rows arrive); approximate searches use ef_search {APPROXIMATE_EF}"


def free_port() -> int:
    """A TCP port on the loopback that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def local_chroma_server(data: Path, start_seconds: float = 60.0) -> Iterator[str]:
    """A Chroma server (`chroma run`, installed with chromadb) on a free loopback port, its data in `data`, for as
    long as the block runs: yields its `chroma://127.0.0.1:PORT` prefix (add `/COLLECTION`). For tests and benches;
    users run their own server."""
    chroma = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    if not Path(chroma).exists():
        raise BertlensError(
            "the chroma command (from the chromadb package) is not on PATH: pip install 'bertlens[stores]'"
        )
    port = free_port()
    server = subprocess.Popen(
        [chroma, "run", "--path", str(data), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + start_seconds
        while True:
            try:
                _chromadb().HttpClient(host="127.0.0.1", port=port).heartbeat()  # the client connects when made
                break
            except Exception:  # noqa: BLE001 - not up yet: any client error
                if server.poll() is not None:
                    raise BertlensError(f"the Chroma server exited at start (code {server.returncode})") from None
                if time.monotonic() > deadline:
                    raise BertlensError(f"the Chroma server did not start within {start_seconds:.0f} s") from None
                time.sleep(0.5)
        yield f"chroma://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)
