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

from bertlens.errors import BertlensError
from bertlens.extras import require
from bertlens.stores.rows import Hit, IndexRecord, Rows, row_schema

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
        self._db.create_table(ROWS, schema=row_schema(record.dim), mode="overwrite")
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

    def build_ann(self) -> str:
        table = self._rows()
        rows = table.count_rows()
        dim = int(self.record().dim)
        partitions = max(1, int(round(np.sqrt(rows))))
        sub_vectors = next(s for s in (dim // 8, dim // 4, dim // 2, dim) if s >= 1 and dim % s == 0)
        table.create_index(
            metric="cosine",
            vector_column_name="vector",
            index_type="IVF_PQ",
            num_partitions=partitions,
            num_sub_vectors=sub_vectors,
            replace=True,
        )
        return f"IVF-PQ, {partitions} partitions, {sub_vectors} sub-vectors, nprobes {NPROBES}, refine x{REFINE}"


NPROBES = 20  # partitions searched per query
REFINE = 10  # candidates re-scored exactly per result kept
