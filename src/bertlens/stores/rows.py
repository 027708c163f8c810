"""What every vector store holds: one row per vector, and the index's record (its recipe and fingerprint).

A row is a document, or one chunk of a document when the recipe reads chunks: its id (`DOC` or `DOC#CHUNK`),
the document id, the chunk's number and character span in the document's text, the text, and the vector.
Store backends translate these rows to their own layout; nothing above them depends on one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from bertlens.errors import BertlensError
from bertlens.representation.late_interaction import PackedTokens

RECORD_VERSION = 1
FIRST_STAGE = "first_stage"  # a multi-vector index's column of pooled first-stage vectors


@dataclass(frozen=True)
class IndexRecord:
    """The index's metadata: which recipe made its vectors, so a search embeds queries the same way."""

    recipe_json: str  # the recipe as saved (Recipe.to_json)
    fingerprint: str  # representation.fingerprint.recipe_fingerprint of it
    dim: int
    aggregation: str = "max"  # how a document's chunk scores become its score (MaxP: its best chunk)
    version: int = RECORD_VERSION
    export_dir: str | None = None  # the ONNX export the vectors came from (its graph is in the fingerprint)
    multi_vector: bool = False  # rows hold every kept token's vector (a pooler 'tokens' recipe), scored by MaxSim
    first_stage_dim: int | None = None  # a multi-vector index with a pooled first stage: its vectors' width

    def to_json(self) -> str:
        data = {
            "version": self.version,
            "fingerprint": self.fingerprint,
            "dim": self.dim,
            "aggregation": self.aggregation,
            "recipe": json.loads(self.recipe_json),
        }
        if self.export_dir is not None:  # absent for PyTorch-made indexes, so their records read as before
            data["export_dir"] = self.export_dir
        if self.multi_vector:  # absent for one-vector indexes, so their records read as before
            data["multi_vector"] = True
        if self.first_stage_dim is not None:
            data["first_stage_dim"] = self.first_stage_dim
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, where: str) -> IndexRecord:
        try:
            data = json.loads(text)
            if data["version"] != RECORD_VERSION:
                raise BertlensError(f"{where}: index record version {data['version']} (this bertlens reads 1)")
            export_dir, first_stage_dim = data.get("export_dir"), data.get("first_stage_dim")
            return cls(
                json.dumps(data["recipe"]),
                str(data["fingerprint"]),
                int(data["dim"]),
                str(data["aggregation"]),
                export_dir=None if export_dir is None else str(export_dir),
                multi_vector=bool(data.get("multi_vector", False)),
                first_stage_dim=None if first_stage_dim is None else int(first_stage_dim),
            )
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            raise BertlensError(f"{where}: the index record is damaged; index the corpus again") from None


@dataclass(frozen=True)
class Rows:
    """A batch of rows, column by column (rows of one document always travel in one batch)."""

    doc_ids: tuple[str, ...]
    chunks: np.ndarray  # [R] int32, 0 for a one-vector document
    starts: np.ndarray  # [R] int32, character offsets into the document's text
    ends: np.ndarray  # [R] int32
    texts: tuple[str, ...]
    vectors: np.ndarray  # [R, D] float32; a multi-vector index's rows: [T, D], row i's tokens offsets[i]:offsets[i+1]
    offsets: np.ndarray | None = None  # [R+1] for a multi-vector index, else None
    first_stage: np.ndarray | None = None  # [R, D1] float32: a multi-vector index's pooled first-stage vectors

    @property
    def ids(self) -> list[str]:
        return [row_id(d, int(c)) for d, c in zip(self.doc_ids, self.chunks, strict=True)]

    def to_arrow(self) -> pa.Table:
        if self.offsets is None:
            vector = _fixed_size(self.vectors)
        else:  # float16, as the sweep's token bank scored them: half the bytes of float32
            vector = PackedTokens(self.vectors, self.offsets).to_arrow(pa.float16())
        columns = {
            "id": pa.array(self.ids, pa.string()),
            "doc_id": pa.array(self.doc_ids, pa.string()),
            "chunk": pa.array(self.chunks, pa.int32()),
            "start": pa.array(self.starts, pa.int32()),
            "end": pa.array(self.ends, pa.int32()),
            "text": pa.array(self.texts, pa.string()),
            "vector": vector,
        }
        if self.first_stage is not None:
            columns[FIRST_STAGE] = _fixed_size(self.first_stage)
        return pa.table(columns)


def _fixed_size(vectors: np.ndarray) -> pa.FixedSizeListArray:
    """[R, D] -> a float32 vector column."""
    flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).ravel(), pa.float32())
    return pa.FixedSizeListArray.from_arrays(flat, vectors.shape[1])


def row_id(doc_id: str, chunk: int) -> str:
    return f"{doc_id}#{chunk}"


def row_schema(record: IndexRecord) -> pa.Schema:
    dim = record.dim
    vector = pa.list_(pa.list_(pa.float16(), dim)) if record.multi_vector else pa.list_(pa.float32(), dim)
    fields = [
        ("id", pa.string()),
        ("doc_id", pa.string()),
        ("chunk", pa.int32()),
        ("start", pa.int32()),
        ("end", pa.int32()),
        ("text", pa.string()),
        ("vector", vector),
    ]
    if record.first_stage_dim is not None:
        fields.append((FIRST_STAGE, pa.list_(pa.float32(), record.first_stage_dim)))
    return pa.schema(fields)


@dataclass(frozen=True)
class Hit:
    """One row found for a query: cosine similarity, best first."""

    doc_id: str
    chunk: int
    start: int
    end: int
    score: float
    text: str
