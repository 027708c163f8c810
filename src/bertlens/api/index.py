"""`index` as one definition: its options, their checks, the run, and the result a notebook reads.

    import bertlens
    done = bertlens.index(data="../shared/data/cranfield", recipe="out/sweep/recipe.json", out="store")
    done = bertlens.index(data=["first document", "second"], out="store")    # documents in memory (ids 0, 1, ...)
    hits = bertlens.search(index="store", query="wing flutter", top_k=5)

`bertlens index --data DIR --recipe R --out STORE` parses its flags into the same `IndexOptions` and calls the same
`run_index_command`.
"""

from __future__ import annotations

import dataclasses
import html
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bertlens.api.memory import in_memory_words
from bertlens.api.options import at_least, finite, one_of, python_call
from bertlens.api.recipe_options import BackendOptions, RecipeOptions, encoder_of
from bertlens.api.results import RowsResult
from bertlens.errors import BertlensError, OptionError, literal
from bertlens.progress import Progress, silent

if TYPE_CHECKING:
    from bertlens.experiments.index import IndexSummary

ID, TEXT = "id", "text"  # the columns documents given as a list become (ids are their positions)


@dataclass(frozen=True, kw_only=True)
class IndexOptions(BackendOptions, RecipeOptions):
    """Every option of `bertlens index`, by the name of its long flag; the recipe and what runs it: `RecipeOptions`
    and `BackendOptions`."""

    data: Any = None
    """a BEIR directory (corpus.jsonl), a .csv/.tsv/.jsonl/.parquet table (--text-col, --id-col) or a .txt file (one
    document a line; ids are line numbers); from Python also a list of strings (ids 0, 1, ...), a dict of columns,
    a pandas DataFrame or a pyarrow Table (with text_col and id_col)"""
    out: str | None = None
    """a LanceDB directory (created when missing)"""
    store: str | None = None
    """a server store: chroma://HOST:PORT/COLLECTION (instead of --out)"""
    text_col: str | None = None
    """tables: the text column (header name or 0-based index)"""
    id_col: str | None = None
    """tables: the document id column (default: line numbers)"""
    encoding: str = "utf-8"
    """the corpus files' text encoding"""
    sheet: str | None = None
    """an Excel workbook's (.xlsx, .xlsm) sheet, by name or 0-based index (default: the first)"""
    drop_invalid: bool = False
    """drop empty documents and rows without an id (counted in the summary) instead of stopping"""
    batch: int = 512
    """documents per commit"""
    restart: bool = False
    """replace what the store holds and start over"""
    ann: bool = False
    """also build the store's approximate index at the end"""
    quiet: bool = False
    """no progress bar"""

    def check(self) -> IndexOptions:
        """Every check that needs no model, in the options' own names."""
        finite(self)
        one_of(self)
        if self.data is None:
            raise OptionError("{data} is required: the documents to index", "data")
        if (self.out is None) == (self.store is None):
            raise OptionError(
                "give exactly one of {out} (a LanceDB directory) or {store} (a server URI)", "out", "store"
            )
        at_least(self, "batch", 1, "a commit holds one document or more")
        at_least(self, "ray_workers", 1, "a Ray pool has one actor or more")
        at_least(self, "max_length", 2, "a model reads at least 2 tokens")
        if isinstance(self.data, str | Path) and not Path(self.data).exists():
            raise OptionError(
                f"{{data}} {literal(self.data)} does not exist; give a BEIR directory or a corpus file", "data"
            )
        return dataclasses.replace(self, data=Path(self.data)) if isinstance(self.data, str) else self


@dataclass(frozen=True)
class IndexRun(RowsResult):
    """A corpus in a store: how many documents were written (or were already there), the recipe's fingerprint that
    a search checks, and what was dropped."""

    summary: IndexSummary
    notes: tuple[str, ...]
    options: IndexOptions

    def rows(self) -> list[dict]:
        return [dataclasses.asdict(self.summary)]

    def __repr__(self) -> str:
        s = self.summary
        return f"IndexRun({s.written} documents written, {s.rows} rows in {s.store}, fingerprint {s.fingerprint})"

    def _repr_html_(self) -> str:
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        return f"<div><p>{html.escape(repr(self))}</p>" + (f"<ul>{notes}</ul>" if notes else "") + "</div>"


def _documents_file(options: IndexOptions, folder: Path) -> IndexOptions:
    """Documents given in memory as a JSON-lines table the corpus loader reads (with its checks)."""
    from bertlens.api.memory import columns_of, write_rows

    if isinstance(options.data, Path):
        return options
    if isinstance(options.data, list | tuple):
        if not all(isinstance(text, str) for text in options.data):
            raise OptionError("{data} given as a list must hold strings (the documents)", "data")
        if options.text_col is not None or options.id_col is not None:
            raise OptionError("{data} given as a list names its own columns; leave out {text_col} and {id_col}",
                              "data", "text_col", "id_col")  # fmt: skip
        columns = {ID: [str(i) for i in range(len(options.data))], TEXT: list(options.data)}
        return dataclasses.replace(options, data=write_rows(folder / "data.jsonl", columns), text_col=TEXT,
                                   id_col=ID)  # fmt: skip
    return dataclasses.replace(options, data=write_rows(folder / "data.jsonl", columns_of(options.data)))


def run_index_command(options: IndexOptions, *, progress: Progress = silent) -> IndexRun:
    """Check the options (before any model loads), read the corpus, and embed it into the store (a rerun continues
    where a killed one stopped)."""
    from bertlens.experiments.index import run_index
    from bertlens.io.sheets import parse_sheet
    from bertlens.stores.open import open_store
    from bertlens.tasks.corpus import load_corpus

    checked = options.check()
    with tempfile.TemporaryDirectory(prefix="bertlens-data-") as folder:
        readable = _documents_file(checked, Path(folder))
        try:
            corpus = load_corpus(readable.data, readable.text_col, readable.id_col, readable.encoding,
                                 drop_invalid=readable.drop_invalid, sheet=parse_sheet(readable.sheet))  # fmt: skip
        except OptionError as error:  # about the temporary file: worded about the in-memory data
            raise OptionError(in_memory_words(error.template, folder), *error.options, values=error.values) from None
        except BertlensError as error:
            raise BertlensError(in_memory_words(str(error), folder)) from None
    encoder = encoder_of(checked)
    if checked.ann and getattr(encoder, "multi_vector", False) and getattr(encoder, "first_stage", None) is None:
        raise OptionError(
            "{ann} builds an approximate index of one vector per row; a multi-vector recipe's search is exact MaxSim: "
            "leave out {ann}, or give the recipe a pooled first_stage (the approximate index is built on it)",
            "ann",
        )
    store = open_store(checked.out or checked.store)
    summary = run_index(corpus.documents, encoder, store, restart=checked.restart, batch=checked.batch,
                        progress=progress)  # fmt: skip
    notes = [f"resumed: {summary.skipped} documents were already there"] if summary.skipped else []
    if corpus.dropped:
        notes.append(f"dropped {corpus.describe_dropped()}, as asked")
    if checked.ann:
        notes.append("approximate index: " + store.build_ann())
    return IndexRun(summary, tuple(notes), checked)


def index(**options: Any) -> IndexRun:
    """Embed a corpus with a recipe into a vector store: the keywords are `bertlens index`'s long flags (see
    `IndexOptions`); the documents may be given in memory."""
    return python_call(IndexOptions, run_index_command, options)
