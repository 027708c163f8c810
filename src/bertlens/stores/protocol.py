"""The one interface `index` and `search` use, whatever the store (LanceDB embedded, a Chroma server, ...).

A store holds rows (stores/rows.py) and one index record. Writes are appends of whole documents, each
one commit, so a killed index run leaves only complete documents behind and a rerun skips them.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from bertlens.representation.late_interaction import PackedTokens
from bertlens.stores.rows import Hit, IndexRecord, Rows


class VectorStore(Protocol):
    where: str  # the store as the user named it (a directory, a URI), for messages

    def record(self) -> IndexRecord | None:
        """The index record, or None for a store that holds no index yet."""

    def create(self, record: IndexRecord) -> None:
        """Start an empty index under `record` (its rows table and the record)."""

    def documents(self) -> set[str]:
        """Ids of the documents already written (all their rows)."""

    def add(self, rows: Rows) -> None:
        """Append rows: one commit."""

    def count(self) -> int:
        """Rows stored."""

    def search(self, queries: np.ndarray, k: int, exact: bool = True) -> list[list[Hit]]:
        """The k rows of highest cosine per query [Q, D], best first; exact unless an approximate index exists
        and `exact` is False."""

    def search_tokens(self, queries: PackedTokens, k: int) -> list[list[Hit]]:
        """A multi-vector index: the k rows of highest MaxSim per query (its token vectors, packed), best first."""

    def rerank_tokens(
        self, pooled: np.ndarray, queries: PackedTokens, k: int, depth: int, exact: bool = True
    ) -> list[list[Hit]]:
        """A multi-vector index with a pooled first stage: each query's `depth` rows of highest cosine on the
        first-stage vectors (pooled [Q, D1]) re-ranked by MaxSim; the k best, best first."""

    def build_ann(self) -> str:
        """Build the store's approximate index; returns what was built, in words."""
