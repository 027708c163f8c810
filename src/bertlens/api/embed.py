"""`embed` as one definition: its options, their checks, the run, and the result a notebook reads.

    import bertlens
    vectors = bertlens.embed(["a review", "another"], recipe="out/sweep/recipe.json")   # texts in memory
    run = bertlens.embed("reviews.csv", column="text", out="vectors.parquet")           # a file, resumable
    run.vectors, run.to_pandas(), run.plot(), run.save("vectors.npy")

`bertlens embed reviews.csv --column text --out vectors.parquet` parses its flags into the same `EmbedOptions`
(INPUT is the one positional option) and calls the same `run_embed_command`: the same vectors, the same checks and
messages, worded for each caller.
"""

from __future__ import annotations

import dataclasses
import html
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from bertlens.api.memory import in_memory_words
from bertlens.api.options import at_least, finite, one_of, python_call
from bertlens.api.recipe_options import BackendOptions, RecipeOptions, default_precision, encoder_of, recipe_of
from bertlens.api.results import RowsResult
from bertlens.errors import BertlensError, OptionError, literal
from bertlens.progress import Progress, silent

if TYPE_CHECKING:
    import numpy as np

    from bertlens.embedding.job import EmbedSummary
    from bertlens.representation.recipe import Recipe

TEXT = "text"  # the field texts given in memory are written under (a temporary JSON-lines file)


@dataclass(frozen=True)
class EmbedInput:
    """The one positional option (`bertlens embed FILE`): declared apart so that it comes first among the fields."""

    input: Any = None
    """.txt (one text a line), .csv/.tsv/.parquet (--column) or .jsonl (--field); from Python also a list of
    strings"""


@dataclass(frozen=True, kw_only=True)
class EmbedOptions(BackendOptions, RecipeOptions, EmbedInput):
    """Every option of `bertlens embed`, by the name of its long flag; the recipe and what runs it:
    `RecipeOptions` and `BackendOptions`."""

    out: Path | None = None
    """output .npy (rows in input order) or .parquet (id, embedding); required on the command line. From Python,
    None keeps the vectors in memory (save them with save())"""
    column: str | None = None
    """the text column (CSV/TSV/Parquet: header name or 0-based index) or field (JSONL)"""
    no_header: bool = False
    """the CSV/TSV file has no header row"""
    multiline: bool = False
    """CSV quoted fields really span lines (see docs/guide.md)"""
    encoding: str = "utf-8"
    """the file's encoding (e.g. latin-1); a UTF-16/32 file with a byte-order mark is read as such"""
    delimiter: str | None = None
    """CSV: comma, semicolon, tab or pipe (default: detected from the file)"""
    sheet: str | None = None
    """an Excel workbook's (.xlsx, .xlsm) sheet, by name or 0-based index (default: the first)"""
    field: str | None = None
    """JSONL field holding the text (the same as --column)"""
    empty: Literal["error", "skip", "keep"] = "error"
    """what to do with empty texts: error (the default: name their lines), skip (drop them; ids keep the input
    lines) or keep (embed them as empty text)"""
    shard_size: int = 4096
    """texts per resumable shard"""
    restart: bool = False
    """discard an unfinished run for OUT and start over"""
    role: Literal["query", "document"] | None = None
    """retrieval: embed the texts as queries or as documents (the recipe's query_prompt or document_prompt goes
    before each one)"""
    quiet: bool = False
    """no progress bar"""

    def check(self) -> EmbedOptions:
        """Every check that needs no model, in the options' own names; the options, normalised."""
        finite(self)
        one_of(self)
        if self.input is None:
            raise OptionError("{input} is required: a file of texts (or, from Python, a list of strings)", "input")
        at_least(self, "shard_size", 1, "a shard holds one text or more")
        at_least(self, "ray_workers", 1, "a Ray pool has one actor or more")
        at_least(self, "max_length", 2, "a model reads at least 2 tokens")
        if self.field is not None and self.column is not None:
            raise OptionError("{field} and {column} say the same thing; give one", "field", "column")
        if not isinstance(self.input, str | Path):
            if not isinstance(self.input, Sequence) or not all(isinstance(text, str) for text in self.input):
                raise OptionError("{input} must be a file path or a list of strings", "input")
            if self.column is not None or self.field is not None:
                raise OptionError("{input} given as a list has no {column}; leave it out", "input", "column")
        else:
            from bertlens.io.tables import check_file

            check_file(Path(self.input))
        if self.out is not None:
            from bertlens.embedding.job import check_output

            check_output(Path(self.out))  # before the model loads: a bad out fails in a second, not after the run
        paths = {
            name: Path(getattr(self, name))
            for name in ("out", "recipe", "postprocess")
            if isinstance(getattr(self, name), str | Path)  # a Recipe given from Python stays one
        }
        return dataclasses.replace(self, **paths)


@dataclass(frozen=True)
class EmbedRun(RowsResult):
    """Embedded texts: the vectors (one row per text, or per chunk for a chunk recipe) with their input ids, what
    the run skipped or truncated, and `save(path)` writing what `bertlens embed --out PATH` writes."""

    # pyarrow Table: id, the chunk columns of a chunk recipe, embedding. An id is the text's line in the input file
    # (as a .parquet output says; a .npy output without OUT.ids.npy has its row numbers), its position in a list
    table: Any
    summary: EmbedSummary
    recipe: Recipe
    options: EmbedOptions
    max_length: int | None = None  # tokens a text was cut to
    precision_note: str = ""  # 'precision auto -> bf16 (why)' when the precision was this machine's choice

    @property
    def vectors(self) -> np.ndarray:
        """[rows, dim] float32."""
        import numpy as np

        flat = self.table.column("embedding").combine_chunks().flatten().to_numpy()
        return np.asarray(flat, dtype=np.float32).reshape(self.table.num_rows, -1)

    @property
    def ids(self) -> np.ndarray:
        return self.table.column("id").to_numpy()

    def rows(self) -> list[dict]:
        return self.table.to_pylist()

    def to_arrow(self):
        return self.table

    def notes(self) -> list[str]:
        """What the run did besides embedding: what `bertlens embed` prints after 'wrote ...'."""
        summary, notes = self.summary, []
        if summary.truncated:
            notes.append(f"{summary.truncated} texts were longer than {self.max_length} tokens and were truncated")
        if summary.skipped_empty:
            notes.append(f"{summary.skipped_empty} empty texts skipped")
        if summary.resumed_shards:
            notes.append(f"resumed after {summary.resumed_shards} finished shards")
        if self.precision_note:
            notes.append(self.precision_note)
        if self.options.role and not self.recipe.prompt(self.options.role):
            notes.append(f"the recipe has no {self.options.role}_prompt: texts embedded as given")
        return notes

    def save(self, out: str | Path) -> Path:
        """The vectors as `bertlens embed --out OUT` writes them: .npy (with OUT.ids.npy when empty texts were skipped,
        OUT.chunks.npy for a chunk recipe) or .parquet."""
        from bertlens.embedding.job import save_table

        return save_table(self.table, Path(out), ids_needed=self.summary.skipped_empty > 0)

    def plot(self):
        """The vectors' first two principal components as a matplotlib Figure (a first look at their spread)."""
        import matplotlib

        matplotlib.use("Agg")  # no display needed: the figure is returned, a notebook shows it
        import matplotlib.pyplot as plt
        import numpy as np

        vectors = self.vectors
        if len(vectors) < 2:
            raise BertlensError("plot() needs two vectors or more")
        centred = vectors - vectors.mean(axis=0)  # [N, D]
        _, values, axes = np.linalg.svd(centred, full_matrices=False)
        points = centred @ axes[:2].T  # [N, 2]
        share = values[:2] ** 2 / max(float((values**2).sum()), 1e-12)
        figure, ax = plt.subplots(figsize=(5, 4))
        ax.scatter(points[:, 0], points[:, 1], s=6, alpha=0.6)
        ax.set_xlabel(f"PC1 ({share[0]:.0%} of the variance)")
        ax.set_ylabel(f"PC2 ({share[1]:.0%})" if len(share) > 1 else "PC2")
        ax.set_title(f"{len(vectors):,} vectors, {described(self.recipe)}", fontsize=9)
        figure.tight_layout()
        return figure

    def __repr__(self) -> str:
        return f"EmbedRun({self.table.num_rows} x {self.summary.dim} vectors, recipe {described(self.recipe)!r})"

    def _repr_html_(self) -> str:
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes())
        return (
            f"<div><p><b>{self.table.num_rows:,} x {self.summary.dim}</b> vectors, "
            f"{html.escape(described(self.recipe))}</p>" + (f"<ul>{notes}</ul>" if notes else "") + "</div>"
        )


def check_role(recipe: Recipe, role: str | None) -> None:
    """A recipe with prompts embeds each text as a query or a document: without a role the prompts would be
    silently left out, and the vectors would not be the ones the sweep scored."""
    prompts = {name: p for name, p in (("query", recipe.query_prompt), ("document", recipe.document_prompt)) if p}
    if role is None and recipe.tokens_differ_by_role:
        raise OptionError(
            "the multi-vector recipe reads queries and documents differently (query_augment, drop_punctuation): say "
            "which these texts are with {role} query or {role} document",
            "role",
        )
    if role is None and prompts:
        shown = literal(", ".join(f"{name} {p!r}" for name, p in prompts.items()))
        raise OptionError(
            f"the recipe has prompts ({shown}): say which these texts are with {{role}} query or {{role}} document",
            "role",
        )


def run_embed_command(options: EmbedOptions, *, progress: Progress = silent) -> EmbedRun:
    """Check the options (before any model loads), embed every text (resumable when `out` is given), and return the
    vectors. `progress(stage, done, total)` is the front end's to show."""
    from bertlens.embedding.job import run_embed
    from bertlens.embedding.prompted import with_role

    checked = options.check()
    if checked.backend == "torch":
        check_role(recipe_of(checked), checked.role)  # before the model loads
    backend = encoder_of(checked)
    check_role(backend.recipe, checked.role)
    embedder = with_role(backend, checked.role)
    with tempfile.TemporaryDirectory(prefix="bertlens-embed-") as folder:
        spec = _table_spec(checked, Path(folder))
        out = checked.out or Path(folder) / "vectors.parquet"
        try:
            summary = run_embed(
                spec,
                out,
                embedder,
                empty=checked.empty,
                shard_size=checked.shard_size,
                restart=checked.restart,
                progress=progress,
            )
        except OptionError as error:  # about the temporary file: worded about the in-memory texts
            raise OptionError(in_memory_words(error.template, folder), *error.options, values=error.values) from None
        except BertlensError as error:
            raise BertlensError(in_memory_words(str(error), folder)) from None
        table = _read_table(summary.out)
    if not isinstance(checked.input, str | Path):  # a list's rows are its positions, not the file's lines
        import pyarrow.compute as pc

        table = table.set_column(0, "id", pc.subtract(table.column("id"), 1))
    note = ""
    if checked.backend == "torch" and default_precision(checked) is not checked:  # this machine chose the precision
        reason = getattr(getattr(backend, "encoder", None), "precision_reason", "")
        note = f"precision auto -> {embedder.recipe.precision}" + (f" ({reason})" if reason else "")
    return EmbedRun(table, summary, embedder.recipe, checked, embedder.max_length, note)


def _table_spec(options: EmbedOptions, folder: Path):
    """The input as a table spec: a file as given, a list of texts written to a JSON-lines file (one field)."""
    from bertlens.io.dialect import parse_delimiter
    from bertlens.io.sheets import parse_sheet
    from bertlens.io.tables import TableSpec, parse_column

    if isinstance(options.input, str | Path):
        column = options.field if options.field is not None else options.column
        return TableSpec(
            Path(options.input),
            () if column is None else (parse_column(column),),
            header=not options.no_header,
            encoding=options.encoding,
            multiline=options.multiline,
            delimiter=parse_delimiter(options.delimiter),
            sheet=parse_sheet(options.sheet),
        )
    import json

    path = folder / "texts.jsonl"
    with open(path, "w", encoding="utf-8") as handle:
        for text in options.input:
            handle.write(json.dumps({TEXT: text}) + "\n")
    return TableSpec(path, (parse_column(TEXT),))


def _read_table(path: Path):
    """What run_embed wrote, as the Arrow table a .parquet output holds (a .npy output: its ids or chunks file, else
    the row numbers)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    if path.suffix.lower() == ".parquet":
        return pq.read_table(path)
    vectors = np.load(path, allow_pickle=False)  # [N, D]
    column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), vectors.shape[1])
    chunks, ids_file = path.with_name(path.stem + ".chunks.npy"), path.with_name(path.stem + ".ids.npy")
    if chunks.is_file():
        spans = np.load(chunks, allow_pickle=False)  # [N, 4]: id, chunk, start, end
        columns = {name: pa.array(spans[:, i]) for i, name in enumerate(("id", "chunk", "start", "end"))}
        return pa.table({**columns, "embedding": column})
    ids = np.load(ids_file, allow_pickle=False) if ids_file.is_file() else np.arange(len(vectors), dtype=np.int64)
    return pa.table({"id": pa.array(ids), "embedding": column})


def embed(input: str | Path | Sequence[str] | None = None, **options: Any) -> EmbedRun:
    """Embed texts (a file, or a list of strings) with a recipe: the keywords are `bertlens embed`'s long flags
    (see `EmbedOptions`); with `out`, the vectors are also written there (resumable), as the command writes them."""
    return python_call(EmbedOptions, run_embed_command, options, input)


def described(recipe: Recipe) -> str:
    """'mean of layers -1 (single), default': a recipe in a few words (a notebook's title line)."""
    layers = ",".join(map(str, recipe.layers))
    return f"{recipe.pooler} of layers {layers} ({recipe.mixer}), {recipe.model}"
