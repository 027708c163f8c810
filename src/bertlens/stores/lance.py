"""LanceDB, the embedded default: a directory, no server. Rows in table `rows`, the index record in `record`.

Every `add` is one Lance commit (atomic: a killed run leaves no half-written batch). Search is exact (a flat
scan, cosine) unless an approximate index was built and the caller asks for it (IVF-PQ: Jegou et al. 2011;
refined by exact distances on the candidates it finds).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch

from bertlens.errors import BertlensError
from bertlens.extras import require
from bertlens.metrics.ranking import top_k_of
from bertlens.representation.late_interaction import PackedTokens, maxsim
from bertlens.stores.rows import FIRST_STAGE, Hit, IndexRecord, Rows, row_schema

ROWS, RECORD = "rows", "record"
SHOWN = ["doc_id", "chunk", "start", "end", "text"]


def _lancedb():
    os.environ.setdefault("LANCEDB_LOG", "error")  # its Rust side logs a WARN when it creates a table
    require("stores", "the LanceDB store")
    import lancedb

    return lancedb


class LanceStore:
    """A LanceDB database directory holding one bertlens index."""

    def __init__(self, path: str | Path):
        self.where = str(path)
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise BertlensError(f"store {path} is a file; give a directory for the LanceDB store")
        self._db = _lancedb().connect(str(self.path))
        self._cached = None  # (table version, unit token vectors, shown columns) of a multi-vector index

    def _tables(self) -> set[str]:
        listed = self._db.list_tables()
        return set(getattr(listed, "tables", listed))

    def record(self) -> IndexRecord | None:
        if RECORD not in self._tables():
            return None
        rows = self._db.open_table(RECORD).to_arrow().column("record").to_pylist()
        if len(rows) != 1 or ROWS not in self._tables():
            raise BertlensError(f"store {self.where}: the index is damaged (record or rows missing); index it again")
        return IndexRecord.from_json(rows[0], f"store {self.where}")

    def create(self, record: IndexRecord) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        self._db.create_table(ROWS, schema=row_schema(record), mode="overwrite")
        self._db.create_table(RECORD, data=pa.table({"record": [record.to_json()]}), mode="overwrite")

    def _rows(self):
        return self._db.open_table(ROWS)

    def documents(self) -> set[str]:
        table = self._rows()
        if table.count_rows() == 0:
            return set()
        return set(table.search().select(["doc_id"]).limit(None).to_arrow().column("doc_id").to_pylist())

    def add(self, rows: Rows) -> None:
        self._rows().add(rows.to_arrow())

    def count(self) -> int:
        return self._rows().count_rows()

    def search(self, queries: np.ndarray, k: int, exact: bool = True) -> list[list[Hit]]:
        table = self._rows()
        queries = np.asarray(queries, dtype=np.float32)  # [Q, D]
        query = table.search(queries, vector_column_name="vector").distance_type("cosine").limit(k)
        query = query.bypass_vector_index() if exact else query.nprobes(NPROBES).refine_factor(REFINE)
        found = query.select([*SHOWN, "_distance"]).to_arrow()
        columns = [found.column(name).to_pylist() for name in [*SHOWN, "_distance"]]
        owner = found.column("query_index").to_pylist() if "query_index" in found.column_names else [0] * len(found)
        columns.insert(0, owner)  # one query's search has no query_index column
        out: list[list[Hit]] = [[] for _ in range(len(queries))]
        for q, d, c, s, e, t, dist in zip(*columns, strict=True):
            out[q].append(Hit(d, int(c), int(s), int(e), 1.0 - float(dist), t))
        for hits in out:
            hits.sort(key=lambda h: -h.score)  # best first (the store returns each query's rows by distance)
        return out

    def search_tokens(self, queries: PackedTokens, k: int, native: bool | None = None) -> list[list[Hit]]:
        """Exact MaxSim (Khattab & Zaharia 2020) of each query's tokens against every row's.

        In process by default: the multi-vector column is read once (per table version) as float32 unit vectors and
        scored in blocks, one pass over it per batch of queries. LanceDB's own multi-vector scan (`native`) gives the
        same scores (its distance is the query's token count minus the sum of best cosines) but took 1.1-6 s a query
        on Cranfield, CISI and NPL against 0.1-0.27 s (docs/results-log.md); it is used when the column would take more
        than IN_PROCESS_BYTES in memory."""
        table = self._rows()
        _check_queries(queries)
        documents, columns = (None, None) if native else self._token_rows(table)
        if documents is None:  # asked for, or the column is too large to hold
            return [self._native_maxsim(table, np.asarray(queries.of(q), np.float32), k) for q in range(queries.texts)]
        scores = torch.from_numpy(maxsim(queries, documents))  # [Q, N]
        rows = top_k_of(scores, k)  # [Q, k], ties: the earlier row first (as the sweep ranks)
        best = torch.gather(scores, 1, rows)  # [Q, k]
        return [
            [Hit(*(columns[name][r] for name in SHOWN[:4]), float(v), columns["text"][r]) for v, r in zip(b, row)]
            for b, row in zip(best.tolist(), rows.tolist(), strict=True)
        ]

    def rerank_tokens(
        self, pooled: np.ndarray, queries: PackedTokens, k: int, depth: int, exact: bool = True
    ) -> list[list[Hit]]:
        """Late interaction as usually deployed: each query's `depth` rows of highest cosine on the pooled
        first-stage column (pooled [Q, D1]; exact, or the approximate index built on that column), re-ranked by
        MaxSim over their tokens. Ties go to the row indexed first, as the sweep's re-ranking breaks them."""
        _check_queries(queries)
        table = self._rows()
        search = table.search(np.asarray(pooled, dtype=np.float32), vector_column_name=FIRST_STAGE)
        search = search.distance_type("cosine").limit(depth).with_row_id(True)
        search = search.bypass_vector_index() if exact else search.nprobes(NPROBES).refine_factor(REFINE)
        found = search.select([*SHOWN, "vector"]).to_arrow()
        owner = found.column("query_index").to_numpy() if "query_index" in found.column_names else None
        candidates = PackedTokens.from_arrow(found.column("vector"))  # every row found, its tokens [t, D]
        shown = {name: found.column(name).to_pylist() for name in SHOWN}
        row_ids = found.column("_rowid").to_numpy()
        out = []
        for q in range(queries.texts):
            rows = np.arange(len(found)) if owner is None else np.flatnonzero(owner == q)
            rows = rows[np.argsort(row_ids[rows], kind="stable")]  # in indexing order: ties go to the earlier row
            documents = PackedTokens.from_list([candidates.of(int(r)) for r in rows])
            query = PackedTokens(queries.of(q), np.array([0, len(queries.of(q))]))
            scores = torch.from_numpy(maxsim(query, documents))  # [1, n]
            best = top_k_of(scores, k)[0].tolist()
            out.append(
                [
                    Hit(*(shown[name][rows[i]] for name in SHOWN[:4]), float(scores[0, i]), shown["text"][rows[i]])
                    for i in best
                ]  # fmt: skip
            )
        return out

    def _token_rows(self, table) -> tuple[PackedTokens | None, dict[str, list] | None]:
        """Every row's tokens as unit float32 vectors and the rows' shown columns, read once per table version;
        (None, None) when they would take more than IN_PROCESS_BYTES (decided once per version too)."""
        if self._cached is None or self._cached[0] != table.version:
            self._cached = (table.version, *self._read_tokens(table))
        return self._cached[1], self._cached[2]

    def _read_tokens(self, table) -> tuple[PackedTokens | None, dict[str, list] | None]:
        on_disk = sum(f.stat().st_size for f in (self.path / f"{ROWS}.lance").rglob("*.lance"))  # float16 vectors
        if 2 * on_disk > IN_PROCESS_BYTES:  # float32 in memory
            return None, None
        found = table.search().select([*SHOWN, "vector"]).limit(None).to_arrow()
        tokens = PackedTokens.from_arrow(found.column("vector")).normalized()  # [T, D] unit float32
        return tokens, {name: found.column(name).to_pylist() for name in SHOWN}

    @staticmethod
    def _native_maxsim(table, tokens: np.ndarray, k: int) -> list[Hit]:
        """LanceDB's own exact multi-vector search for one query's tokens [t, D] (at least one: search_tokens checks)."""
        query = table.search(tokens, vector_column_name="vector").distance_type("cosine").limit(k)
        found = query.bypass_vector_index().select([*SHOWN, "_distance"]).to_arrow()
        columns = [found.column(name).to_pylist() for name in [*SHOWN, "_distance"]]
        hits = [
            Hit(d, int(c), int(s), int(e), float(len(tokens)) - float(dist), t)
            for d, c, s, e, t, dist in zip(*columns, strict=True)
        ]
        return sorted(hits, key=lambda h: -h.score)

    def build_ann(self) -> str:
        """IVF-PQ on the vector column, or on a multi-vector index's pooled first-stage column (its MaxSim
        re-ranking stays exact)."""
        table = self._rows()
        rows = table.count_rows()
        record = self.record()
        if record.multi_vector and record.first_stage_dim is None:
            raise BertlensError(
                f"store {self.where} is a multi-vector index: its search is exact MaxSim (no approximate index is "
                "built for it); leave out --ann, or give the recipe a pooled first_stage"
            )
        column = FIRST_STAGE if record.multi_vector else "vector"
        dim = int(record.first_stage_dim if record.multi_vector else record.dim)
        partitions = max(1, int(round(np.sqrt(rows))))
        sub_vectors = next(s for s in (dim // 8, dim // 4, dim // 2, dim) if s >= 1 and dim % s == 0)
        from lancedb.index import IvfPq

        config = IvfPq(distance_type="cosine", num_partitions=partitions, num_sub_vectors=sub_vectors)
        table.create_index(column, config=config, replace=True)
        on = " on the first-stage column" if record.multi_vector else ""
        return f"IVF-PQ{on}, {partitions} partitions, {sub_vectors} sub-vectors, nprobes {NPROBES}, refine x{REFINE}"


def _check_queries(queries: PackedTokens) -> None:
    for q in range(queries.texts):
        if queries.offsets[q + 1] == queries.offsets[q]:
            raise BertlensError(f"query {q + 1} keeps no token under the index's recipe; give it some words")


IN_PROCESS_BYTES = 8 * 2**30  # a multi-vector column larger than this (float32) is searched by LanceDB itself
NPROBES = 20  # partitions searched per query
REFINE = 10  # candidates re-scored exactly per result kept
