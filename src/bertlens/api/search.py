"""`search` as one definition: its options, their checks, the run, and the result a notebook reads.

    import bertlens
    hits = bertlens.search(index="store", query=["wing flutter", "boundary layer"], top_k=5)
    hits.to_pandas(), hits.save("hits.parquet")        # query_id, rank, doc_id, score, chunk, start, end, text

`bertlens search --index store --query 'wing flutter' --top-k 5` parses its flags into the same `SearchOptions`
and calls the same `run_search_command`. Each query is embedded with the index's own recipe (its query prompt
included); an index made from an ONNX export is searched with that export.
"""

from __future__ import annotations

import dataclasses
import html
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bertlens.api.options import at_least, finite, one_of, python_call
from bertlens.api.results import RowsResult
from bertlens.errors import OptionError, literal
from bertlens.io.tables import first_lines

OUT_FORMATS = (".json", ".parquet")


@dataclass(frozen=True, kw_only=True)
class SearchOptions:
    """Every option of `bertlens search`, by the name of its long flag."""

    index: str | None = None
    """the store: a LanceDB directory or chroma://HOST:PORT/NAME"""
    query: Sequence[str] = ()
    """a query (repeat for several); from Python also a list"""
    queries: Path | None = None
    """a file of queries: .txt (one a line) or a BEIR queries.jsonl"""
    drop_invalid: bool = False
    """--queries .jsonl: drop lines without an _id or a text (counted) instead of stopping"""
    top_k: int = 10
    """documents per query"""
    recipe: Path | None = None
    """embed queries with this recipe (its fingerprint must be the index's)"""
    backend: Literal["torch", "onnx", "openvino"] | None = None
    """what embeds the queries (default: what made the index: onnx for an index made from an export, else torch)"""
    model: str | None = None
    """with --backend onnx or openvino: the export directory (default: the one the index was made from)"""
    approximate: bool = False
    """use the store's approximate index (index --ann)"""
    out: Path | None = None
    """write every result to .json or .parquet instead of the terminal"""
    device: str = "cpu"
    """auto | cpu | cuda[:N]"""
    quiet: bool = False
    """accepted for symmetry with index (search shows no bar)"""

    def check(self) -> SearchOptions:
        """Every check that needs no model and no store, in the options' own names."""
        finite(self)
        one_of(self)
        if self.index is None:
            raise OptionError("{index} is required: the store `bertlens index` wrote", "index")
        at_least(self, "top_k", 1, "a search returns one document or more")
        query = (self.query,) if isinstance(self.query, str) else tuple(self.query)
        if not all(isinstance(q, str) for q in query):
            raise OptionError("{query} must be a text or a list of texts", "query")
        if not query and self.queries is None:
            raise OptionError("no query to search: give {query} or {queries}", "query", "queries")
        out = Path(self.out) if self.out is not None else None
        if out is not None and out.suffix not in OUT_FORMATS:
            raise OptionError(f"{{out}} {literal(out)}: use one of {', '.join(OUT_FORMATS)}", "out")
        queries = Path(self.queries) if self.queries is not None else None
        if queries is not None and not queries.is_file():
            raise OptionError(f"{{queries}} {literal(queries)} does not exist", "queries")
        return dataclasses.replace(self, query=query, out=out, queries=queries)


@dataclass(frozen=True)
class SearchRun(RowsResult):
    """The k best documents of every query, best first: one row per (query, rank) with the document's id, score,
    its best chunk's characters and text; `save(path)` writes what `bertlens search --out PATH` writes."""

    hits: tuple[dict, ...]
    queries: int
    notes: tuple[str, ...]
    options: SearchOptions

    def rows(self) -> list[dict]:
        return [dict(row) for row in self.hits]

    def save(self, out: str | Path) -> Path:
        """Every result as .json (a list of rows) or .parquet."""
        from bertlens.io.atomic import atomic_path

        out = Path(out)
        if out.suffix not in OUT_FORMATS:
            raise OptionError(f"{{out}} {literal(out)}: use one of {', '.join(OUT_FORMATS)}", "out")
        with atomic_path(out) as staging:
            if out.suffix == ".json":
                staging.write_text(json.dumps(self.rows(), indent=1) + "\n", encoding="utf-8")
            else:
                import pyarrow.parquet as pq

                pq.write_table(self.to_arrow(), staging)
        return out

    def lines(self) -> list[str]:
        """query id, rank, document id, score and the first 80 characters of the best chunk, tab-separated."""
        return [
            f"{row['query_id']}\t{row['rank']}\t{row['doc_id']}\t{row['score']:.4f}\t{snippet(row)}"
            for row in self.hits
        ]

    def __repr__(self) -> str:
        return f"SearchRun({len(self.hits)} hits for {self.queries} queries from {self.options.index})"

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{h}</th>" for h in ("query", "rank", "document", "score", "text"))
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in
                             (r["query_id"], r["rank"], r["doc_id"], f"{r['score']:.4f}", snippet(r))) + "</tr>"
            for r in self.hits
        )  # fmt: skip
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def snippet(row: dict) -> str:
    return " ".join(row["text"][row["start"] : row["end"]].split())[:80]


def read_queries(options: SearchOptions) -> tuple[list[str], list[str], list[str]]:
    """(ids, texts, notes): `query` texts are numbered q1, q2, ...; a .txt file's by line (blank lines skipped); a
    BEIR file's by _id. A BEIR line without an _id or a text, or with an empty text, stops with its line number, or
    is dropped and counted with drop_invalid."""
    ids, texts, notes = [f"q{i + 1}" for i in range(len(options.query))], list(options.query), []
    if options.queries is not None:
        path = options.queries
        lines = path.read_text(encoding="utf-8").splitlines()
        if path.suffix == ".jsonl":
            found, bad = _beir_queries(lines)
            if bad and not options.drop_invalid:
                raise OptionError(
                    f"{literal(path)}: {len(bad)} lines are not a query with an _id and a non-empty text (lines "
                    f"{first_lines(bad)}); fix them or pass {{drop_invalid}} to drop them",
                    "drop_invalid",
                )
            if bad:
                notes.append(f"dropped {len(bad)} lines of {path} without an _id or a text, as asked")
            ids += [i for i, _ in found]
            texts += [t for _, t in found]
        else:
            numbered = [(str(n), line) for n, line in enumerate(lines, start=1) if line.strip()]
            ids += [n for n, _ in numbered]
            texts += [line for _, line in numbered]
    if not texts:
        raise OptionError("no query to search: give {query} or {queries}", "query", "queries")
    return ids, texts, notes


def _beir_queries(lines: list[str]) -> tuple[list[tuple[str, str]], list[int]]:
    """(id, text) of every well-formed line, and the numbers of the others (blank lines are neither)."""
    found, bad = [], []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            query_id, text = str(record["_id"]).strip(), record["text"]
        except (json.JSONDecodeError, KeyError, TypeError):
            bad.append(number)
            continue
        if not query_id or not isinstance(text, str) or not text.strip():
            bad.append(number)
            continue
        found.append((query_id, text))
    return found, bad


def run_search_command(options: SearchOptions) -> SearchRun:
    """Check the options, read the queries, open the index with the encoder that made it, and search."""
    from bertlens.experiments.search import open_index

    checked = options.check()
    ids, queries, notes = read_queries(checked)
    index = open_index(checked.index, recipe=checked.recipe, backend=checked.backend, model_dir=checked.model,
                       device=checked.device)  # fmt: skip
    results = index.search(queries, checked.top_k, exact=not checked.approximate)
    hits = tuple(
        {"query_id": q, "rank": rank, "doc_id": h.doc_id, "score": h.score, "chunk": h.chunk, "start": h.start,
         "end": h.end, "text": h.text}
        for q, found in zip(ids, results, strict=True)
        for rank, h in enumerate(found, start=1)
    )  # fmt: skip
    outcome = SearchRun(hits, len(queries), tuple(notes), checked)
    if checked.out is not None:
        outcome.save(checked.out)
    return outcome


def search(**options: Any) -> SearchRun:
    """Search an index made by `bertlens index`: the keywords are `bertlens search`'s long flags (see
    `SearchOptions`); `query` may be one text or a list."""
    return python_call(SearchOptions, run_search_command, options)
