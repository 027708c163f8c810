"""Stream records from .txt, .csv, .tsv, .jsonl and .parquet files, naming the line of any bad input.

Every reader yields (line_number, values) where line_number is 1-based and points at the
first physical line of the record (for Parquet: the row), so every error can say where to look.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from bertlens.errors import BertlensError, OptionError, did_you_mean, literal
from bertlens.io.dialect import WIDE, file_encoding, read_dialect, suggest_encoding

FORMATS = (".txt", ".csv", ".tsv", ".jsonl", ".parquet")
PARQUET_BATCH_ROWS = 4096  # rows read at a time: a Parquet file larger than memory streams too
Column = str | int

EMPTY_POLICIES = ("error", "skip", "keep")  # what to do with a blank text in a file to embed


@dataclass(frozen=True)
class TableSpec:
    """Which file, and which columns (CSV/TSV: header names or 0-based indices; JSONL: keys)."""

    path: Path
    columns: tuple[Column, ...] = ()
    header: bool = True
    encoding: str = "utf-8"
    file_format: str | None = None  # overrides the extension, e.g. '.txt' for SentEval's '.all' files
    texts: int = 1  # how many leading columns hold texts (in JSONL they must be strings; labels may be numbers)
    multiline: bool = False  # CSV: accept quoted fields whose embedded lines look like rows of their own
    delimiter: str | None = None  # CSV/TSV: None reads it from the file (.csv) or takes tab (.tsv): io/dialect.py

    @property
    def format(self) -> str:
        return self.file_format or self.path.suffix.lower()


def parse_column(value: str) -> Column:
    """'3' -> 3 (a 0-based index), anything else stays a header name."""
    return int(value) if value.strip().lstrip("-").isdigit() else value


def check_file(path: Path, file_format: str | None = None) -> None:
    if not path.exists():
        raise BertlensError(f"input file {path} does not exist")
    if not path.is_file():
        raise BertlensError(f"input {path} is not a file")
    if path.stat().st_size == 0:
        raise BertlensError(f"input file {path} is empty; give a file with at least one text")
    if (file_format or path.suffix.lower()) not in FORMATS:
        raise BertlensError(
            f"input file {path}: unsupported extension '{path.suffix}'; use one of {', '.join(FORMATS)}"
        )


def _decoded_lines(path: Path, encoding: str = "utf-8") -> Iterator[str]:
    """The file's lines decoded (a leading byte-order mark dropped); a UTF-16/32 file (by its mark) is read in text
    mode, anything else line by line so that a byte that does not decode is named with its line."""
    encoding, _ = file_encoding(path, encoding)
    if encoding in WIDE:
        with open(path, encoding=encoding, newline="") as handle:
            yield from handle
        return
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode(encoding)
            except UnicodeDecodeError as exc:
                guess = suggest_encoding(path)
                raise OptionError(
                    f"{literal(path)} line {number}: not {literal(encoding.upper())} (byte {exc.start} of the line); it "
                    f"reads as {guess}: pass {{encoding}}, or re-save the file as UTF-8",
                    "encoding",
                    values={"encoding": guess},
                ) from None
            yield line.removeprefix("\ufeff") if number == 1 else line


def _text_records(spec: TableSpec) -> Iterator[tuple[int, tuple[str, ...]]]:
    if spec.columns not in ((), (0,)):
        raise BertlensError(
            f"{spec.path}: a .txt file has one text per line and no columns; for tab-separated columns name the file "
            ".tsv, for SentEval-style 'LABEL TEXT' lines pass --label-first, or drop the column flag"
        )
    for number, line in enumerate(_decoded_lines(spec.path, spec.encoding), start=1):
        yield number, (line.rstrip("\r\n"),)


def _column_indices(spec: TableSpec, header: list[str] | None) -> list[int]:
    indices = []
    for column in spec.columns:
        if isinstance(column, int):
            indices.append(column)
        elif header is None:
            raise BertlensError(f"{spec.path} has no header row, so column '{column}' must be a 0-based index")
        elif column not in header:
            raise BertlensError(f"{spec.path}: no column '{column}' in the header: {did_you_mean(column, header)}")
        else:
            indices.append(header.index(column))
    return indices


def _delimited_records(spec: TableSpec) -> Iterator[tuple[int, tuple[str, ...]]]:
    if not spec.columns:
        raise BertlensError(f"{spec.path}: name the text column with --column (a header name or 0-based index)")
    dialect = read_dialect(spec.path, spec.encoding, spec.delimiter, spec.format == ".tsv")
    delimiter = dialect.delimiter
    quoting = csv.QUOTE_NONE if spec.format == ".tsv" and spec.delimiter is None else csv.QUOTE_MINIMAL
    lines = _decoded_lines(spec.path, dialect.encoding)
    reader = csv.reader(lines, delimiter=delimiter, quotechar=dialect.quotechar, quoting=quoting)
    header = None
    indices: list[int] | None = None
    width: int | None = None  # fields per row: the header's, else the first row's
    last = 0
    try:
        for row in reader:
            start, last = last + 1, reader.line_num
            if header is None and spec.header:
                header = [name.strip() for name in row]
                indices = _column_indices(spec, header)
                width = len(header)
                continue
            if indices is None:
                indices = _column_indices(spec, None)
            if not row:
                raise BertlensError(f"{spec.path} line {start}: blank line; remove it")
            width = width or len(row)
            if last > start and not spec.multiline:
                _check_spanning_record(spec, row, start, last, width, delimiter)
            missing = [spec.columns[k] for k, i in enumerate(indices) if not -len(row) <= i < len(row)]
            if missing:
                raise BertlensError(
                    f"{spec.path} line {start}: column {missing[0]!r} is missing (the row has {len(row)} fields); "
                    "fix the row or choose another column"
                )
            yield start, tuple(row[i] for i in indices)
    except csv.Error as exc:
        raise BertlensError(
            f"{spec.path} line {reader.line_num}: malformed {spec.format[1:].upper()} ({exc})"
        ) from None


def _jsonl_records(spec: TableSpec) -> Iterator[tuple[int, tuple[str, ...]]]:
    if not spec.columns:
        raise BertlensError(f"{spec.path}: name the JSON field with --column")
    for number, line in enumerate(_decoded_lines(spec.path, spec.encoding), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BertlensError(
                f"{spec.path} line {number}: invalid JSON ({exc.msg}); one JSON object per line"
            ) from None
        if not isinstance(record, dict):
            raise BertlensError(f"{spec.path} line {number}: expected a JSON object, got {type(record).__name__}")
        values = []
        for k, key in enumerate(spec.columns):
            if key not in record:
                raise BertlensError(f"{spec.path} line {number}: no field '{key}': {did_you_mean(str(key), record)}")
            value = record[key]
            if k < spec.texts and _missing(value):
                value = ""  # a missing text reads as empty, as a Parquet null: the empty-text checks name the row
            if k < spec.texts and not isinstance(value, str):
                raise BertlensError(
                    f"{spec.path} line {number}: field '{key}' holds {type(value).__name__} "
                    f"({json.dumps(value)[:40]}), not text; fix the record or choose another text column"
                )
            values.append(value if isinstance(value, str) else json.dumps(value) if value is not None else "")
        yield number, tuple(values)


def _missing(value) -> bool:
    """null, or a float NaN (what pandas holds for a missing text)."""
    return value is None or (isinstance(value, float) and value != value)


def _parquet_columns(spec: TableSpec, names: list[str]) -> list[str]:
    chosen = []
    for column in spec.columns:
        if isinstance(column, int):
            if not -len(names) <= column < len(names):
                raise BertlensError(f"{spec.path}: no column {column}; it has {len(names)}: {', '.join(names)}")
            chosen.append(names[column])
        elif column not in names:
            raise BertlensError(f"{spec.path}: no column '{column}': {did_you_mean(column, names)}")
        else:
            chosen.append(column)
    return chosen


def _parquet_records(spec: TableSpec) -> Iterator[tuple[int, tuple[str, ...]]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not spec.columns:
        raise BertlensError(f"{spec.path}: name the text column with --column (a column name or 0-based index)")
    try:
        table = pq.ParquetFile(spec.path)
    except (pa.ArrowException, OSError) as exc:
        raise BertlensError(f"{spec.path}: not a readable Parquet file ({exc})") from None
    schema = table.schema_arrow
    columns = _parquet_columns(spec, schema.names)
    for name in columns[: spec.texts]:
        kind = schema.field(name).type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            raise BertlensError(f"{spec.path}: column '{name}' holds {kind}, not text; choose the text column")
    number = 0
    for batch in table.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=list(dict.fromkeys(columns))):
        values = [batch.column(name).to_pylist() for name in columns]
        for row in zip(*values, strict=True):
            number += 1
            # a null text reads as empty, so the empty-text policy (--empty) decides, naming the row
            yield number, tuple(_parquet_field(v) for v in row)


def _parquet_field(value) -> str:
    """A Parquet cell as text: a list (a multi-label column) as JSON, as a JSONL list reads."""
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value) if isinstance(value, list) else str(value)


def _check_spanning_record(spec: TableSpec, row: list[str], start: int, end: int, width: int, delimiter: str) -> None:
    """A quoted field over several lines is fine, unless its inner lines look like rows of their own:
    then an unbalanced quote has merged rows, and using the record would silently lose them."""
    inner = [line for field in row for line in field.split("\n")[1:] if line.strip()]
    row_like = [line for line in inner if len(next(csv.reader([line], delimiter=delimiter), [])) == width]
    if width > 1 and (row_like or len(row) != width):
        raise BertlensError(
            f"{spec.path} line {start}: a quoted field runs to line {end} and swallows "
            f"{len(row_like) or 'the rest of'} line(s) that look like rows of their own (an unbalanced quote?); "
            "fix the quote, or pass --multiline if those line breaks are really inside the text"
        )


_READERS = {
    ".txt": _text_records,
    ".csv": _delimited_records,
    ".tsv": _delimited_records,
    ".jsonl": _jsonl_records,
    ".parquet": _parquet_records,
}


def describe_reading(spec: TableSpec) -> str | None:
    """What a CSV/TSV file was read as (delimiter, encoding, mark, line ends), for the report; None for other
    formats, whose reading has nothing to detect."""
    if spec.format not in (".csv", ".tsv"):
        return None
    return read_dialect(spec.path, spec.encoding, spec.delimiter, spec.format == ".tsv").describe(spec.path)


def iter_records(spec: TableSpec) -> Iterator[tuple[int, tuple[str, ...]]]:
    """Records of the chosen columns, with the line each starts on; errors name file and line."""
    check_file(spec.path, spec.file_format)
    return _READERS[spec.format](spec)


def iter_texts(path: str | Path, column: Column | None = None, header: bool = True) -> Iterator[str]:
    """Every text of one column (the whole line for .txt), streamed: corpora larger than memory read fine."""
    spec = TableSpec(Path(path), () if column is None else (column,), header)
    for _, values in iter_records(spec):
        yield values[0]


def read_texts(path: str | Path, column: Column | None = None, header: bool = True) -> list[str]:
    """All texts of one column, as a list (small files and the Python API)."""
    return list(iter_texts(path, column, header))


def is_blank(text: str) -> bool:
    return not text.strip()


def first_lines(numbers: Sequence[int], limit: int = 5) -> str:
    shown = ", ".join(str(n) for n in numbers[:limit])
    return shown + (f" and {len(numbers) - limit} more" if len(numbers) > limit else "")
