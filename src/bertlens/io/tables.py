"""Stream records from .txt, .csv, .tsv, .jsonl, .parquet and Excel (.xlsx, .xlsm) files, naming the line of any
bad input.

Every reader yields (line_number, values) where line_number is 1-based and points at the first physical line of the
record (for Parquet: the row; for a workbook: the sheet's row), so every error can say where to look. A JSON field
or Parquet column may be named by a dotted path into nested objects (`review.body`), as pandas' `json_normalize`
and jq write it; a key that itself holds the dot wins.
"""

from __future__ import annotations

import csv
import functools
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from bertlens.errors import BertlensError, OptionError, did_you_mean, literal
from bertlens.io.dialect import WIDE, Dialect, file_encoding, read_dialect, suggest_encoding
from bertlens.io.sheets import WORKBOOKS, cell_text, is_date, read_sheet

FORMATS = (".txt", ".csv", ".tsv", ".jsonl", ".parquet", *WORKBOOKS)
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
    sheet: str | int | None = None  # a workbook's sheet: its name or 0-based index (None: the first)

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
        old_excel = " (an old Excel workbook: save it as .xlsx)" if path.suffix.lower() == ".xls" else ""
        raise BertlensError(
            f"input file {path}: unsupported extension '{path.suffix}'{old_excel}; use one of {', '.join(FORMATS)}"
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
    cells = _SpanningCells(spec, delimiter)
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
            if not spec.multiline:
                cells.check(row, start, last, width)
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
    cells.finish()


MAX_EVIDENCE_VALUES = 1000  # a column with more distinct values (texts, ids) is no evidence of a swallowed row


class _SpanningCells:
    """RFC 4180 lets a quoted cell hold line breaks, and every spreadsheet writes such cells. What must be refused is
    an unbalanced quote, which merges the rows after it into one cell: then the record has the wrong width, or one of
    its inner lines is a row of its own, recognisable by carrying, in some column, a value that column holds in the
    file's single-line rows (a label, a split name). A prose line that happens to hold the delimiter carries none.
    A record is judged when it is read if the evidence is already there, else when the file has been read."""

    def __init__(self, spec: TableSpec, delimiter: str) -> None:
        self.spec, self.delimiter = spec, delimiter
        self.seen: dict[int, set[str] | None] = {}  # column -> its values in single-line rows (None: too many)
        self.pending: list[tuple[int, int, list[list[str]]]] = []  # (start, end, inner lines that parse as rows)

    def check(self, row: list[str], start: int, end: int, width: int) -> None:
        if end == start:
            for k, value in enumerate(row):
                values = self.seen.setdefault(k, set())
                if values is not None:
                    values.add(value.strip())
                    if len(values) > MAX_EVIDENCE_VALUES:
                        self.seen[k] = None
            return
        if len(row) != width and width > 1:
            self._refuse(start, end, f"{len(row)} fields where the header has {width}")
        inner = [line for field in row for line in field.split("\n")[1:] if line.strip()]
        parsed = [next(csv.reader([line], delimiter=self.delimiter), []) for line in inner]
        row_like = [fields for fields in parsed if len(fields) == width > 1]
        if row_like:
            self.pending.append((start, end, row_like))
            self._judge(len(self.pending) - 1)

    def _judge(self, at: int) -> None:
        start, end, row_like = self.pending[at]
        for fields in row_like:
            known = [
                k
                for k, value in enumerate(fields)
                if self.seen.get(k) and value.strip() in self.seen[k]  # type: ignore[operator]
            ]
            if known:
                k = known[0]
                self._refuse(start, end, f"line(s) that are rows of their own (one ends in {fields[k].strip()!r})")

    def finish(self) -> None:
        for at in range(len(self.pending)):
            self._judge(at)

    def _refuse(self, start: int, end: int, what: str) -> None:
        raise BertlensError(
            f"{self.spec.path} line {start}: a quoted field runs to line {end} and swallows {what} (an unbalanced "
            "quote?); fix the quote, or pass --multiline if those line breaks are really inside the text"
        )


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
            value = field_value(record, str(key))
            if value is _ABSENT:
                raise BertlensError(
                    f"{spec.path} line {number}: no field '{key}': {did_you_mean(str(key), field_paths(record))}"
                )
            if k < spec.texts and _missing(value):
                value = ""  # a missing text reads as empty, as a Parquet null: the empty-text checks name the row
            if k < spec.texts and not isinstance(value, str):
                raise BertlensError(
                    f"{spec.path} line {number}: field '{key}' holds {type(value).__name__} "
                    f"({json.dumps(value)[:40]}), not text; fix the record or choose another text column"
                )
            values.append(value if isinstance(value, str) else json.dumps(value) if value is not None else "")
        yield number, tuple(values)


_ABSENT = object()  # a field a record does not have (None is JSON's null, which it may have)


def field_value(record: dict, key: str):
    """record[key], or the value at a dotted path into nested objects ('review.body'); a key holding the dot wins."""
    if key in record:
        return record[key]
    head, dot, rest = key.partition(".")
    while dot:
        if isinstance(record.get(head), dict):
            found = field_value(record[head], rest)
            if found is not _ABSENT:
                return found
        more, dot, rest = rest.partition(".")
        head = f"{head}.{more}"  # a key that itself holds a dot: 'a.b' of {'a.b': {'c': 1}} for 'a.b.c'
    return _ABSENT


def field_paths(record: dict, prefix: str = "") -> list[str]:
    """Every field of a record, nested objects' fields as dotted paths (what did-you-mean lists)."""
    paths = []
    for key, value in record.items():
        paths.append(prefix + str(key))
        if isinstance(value, dict):
            paths.extend(field_paths(value, f"{prefix}{key}."))
    return paths


def _missing(value) -> bool:
    """null, or a float NaN (what pandas holds for a missing text)."""
    return value is None or (isinstance(value, float) and value != value)


def _flat_names(schema) -> list[str]:
    """A Parquet schema's columns, a struct's fields as dotted paths after the struct itself."""
    import pyarrow as pa

    def walk(field, prefix: str) -> list[str]:
        name = prefix + field.name
        inner = [walk(child, name + ".") for child in field.type] if pa.types.is_struct(field.type) else []
        return [name, *(n for names in inner for n in names)]

    return [n for field in schema for n in walk(field, "")]


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


def _struct_path(kind, rest: str) -> list[str]:
    """The fields of struct `kind` that the dotted `rest` walks through (a field name holding a dot wins)."""
    import pyarrow as pa

    names = [kind.field(i).name for i in range(kind.num_fields)] if pa.types.is_struct(kind) else []
    if rest in names:
        return [rest]
    for name in names:
        if rest.startswith(name + "."):
            return [name, *_struct_path(kind.field(name).type, rest[len(name) + 1 :])]
    raise KeyError(rest)  # unreachable for a name _flat_names listed


def _top_column(schema, name: str) -> tuple[str, list[str]]:
    """(the top-level column, the struct fields below it) that a column name or dotted path reads."""
    if name in schema.names:
        return name, []
    top = next(n for n in schema.names if name.startswith(n + "."))
    return top, _struct_path(schema.field(top).type, name[len(top) + 1 :])


def _parquet_field_type(schema, name: str):
    top, path = _top_column(schema, name)
    kind = schema.field(top).type
    for part in path:
        kind = kind.field(part).type
    return kind


def _parquet_values(batch, schema, name: str) -> list:
    """One column of a record batch as Python values: a top-level column, or a dotted path into its structs."""
    import pyarrow.compute as pc

    top, path = _top_column(schema, name)
    column = batch.column(top)
    return (pc.struct_field(column, path) if path else column).to_pylist()


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
    nested = any(isinstance(c, str) and c not in schema.names for c in spec.columns)  # a dotted path, or a typo
    columns = _parquet_columns(spec, _flat_names(schema) if nested else schema.names)
    for name in columns[: spec.texts]:
        kind = _parquet_field_type(schema, name)
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            raise BertlensError(f"{spec.path}: column '{name}' holds {kind}, not text; choose the text column")
    tops = list(dict.fromkeys(_top_column(schema, name)[0] for name in columns))
    number = 0
    for batch in table.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=tops):
        values = [_parquet_values(batch, schema, name) for name in columns]
        for row in zip(*values, strict=True):
            number += 1
            # a null text reads as empty, so the empty-text policy (--empty) decides, naming the row
            yield number, tuple(_parquet_field(v) for v in row)


def _parquet_field(value) -> str:
    """A Parquet cell as text: a list (a multi-label column) as JSON, as a JSONL list reads."""
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value) if isinstance(value, list) else str(value)


def _sheet_records(spec: TableSpec) -> Iterator[tuple[int, tuple[str, ...]]]:
    """A workbook sheet's rows (numbered as the sheet numbers them) of the chosen columns, cells as text; a date in a
    column after the texts (a label, a score, a split) is refused, naming its cell."""
    if not spec.columns:
        raise BertlensError(f"{spec.path}: name the text column with --column (a header name or 0-based index)")
    sheet = read_sheet(spec.path, spec.sheet)
    where = f"{spec.path} (sheet {sheet.name!r})"
    if spec.header:
        indices = _column_indices(replace(spec, path=Path(where)), list(sheet.header))
        rows = sheet.rows
    else:
        indices = _column_indices(replace(spec, path=Path(where)), None)
        rows = (sheet.first, *sheet.rows)  # the first row is data
    for number, cells in rows:
        values = []
        for k, i in enumerate(indices):
            if not -len(cells) <= i < len(cells):
                raise BertlensError(f"{where} row {number}: no column {spec.columns[k]!r} (the sheet has {len(cells)})")
            cell = cells[i]
            if k >= spec.texts and is_date(cell):
                raise BertlensError(
                    f"{where} row {number}: column {spec.columns[k]!r} holds a date ({cell_text(cell)}), not a label: "
                    "a spreadsheet turns labels like '3-4' into dates; format the column as Text and type them again"
                )
            values.append(cell_text(cell))
        yield number, tuple(values)


_READERS = {
    ".txt": _text_records,
    ".csv": _delimited_records,
    ".tsv": _delimited_records,
    ".jsonl": _jsonl_records,
    ".parquet": _parquet_records,
    **dict.fromkeys(WORKBOOKS, _sheet_records),
}


def describe_reading(spec: TableSpec) -> str | None:
    """What a CSV/TSV file was read as (delimiter, encoding, mark, line ends, cells over several lines) or which
    sheet of a workbook, for the report; None for other formats, whose reading has nothing to detect."""
    if spec.format in WORKBOOKS:
        return read_sheet(spec.path, spec.sheet).describe(spec.path)
    if spec.format not in (".csv", ".tsv"):
        return None
    dialect = read_dialect(spec.path, spec.encoding, spec.delimiter, spec.format == ".tsv")
    spanning = 0 if spec.format == ".tsv" and spec.delimiter is None else multiline_cells(spec.path, dialect)
    cells = f"; {spanning} quoted cells hold line breaks (RFC 4180), read as one cell each" if spanning else ""
    return dialect.describe(spec.path) + cells


def multiline_cells(path: Path, dialect: Dialect) -> int:
    """How many records of a delimited file run over more than one line (quoted cells holding line breaks)."""
    stat = Path(path).stat()
    return _multiline_cells(str(path), stat.st_mtime_ns, stat.st_size, dialect)


@functools.lru_cache(maxsize=16)
def _multiline_cells(name: str, _mtime_ns: int, _size: int, dialect: Dialect) -> int:
    reader = csv.reader(_decoded_lines(Path(name), dialect.encoding), delimiter=dialect.delimiter,
                        quotechar=dialect.quotechar)  # fmt: skip
    count, last = 0, 0
    try:
        for _ in reader:
            count += reader.line_num > last + 1
            last = reader.line_num
    except csv.Error:
        pass  # the reader itself names a malformed line
    return count


def iter_records(spec: TableSpec) -> Iterator[tuple[int, tuple[str, ...]]]:
    """Records of the chosen columns, with the line each starts on; errors name file and line."""
    check_file(spec.path, spec.file_format)
    if spec.sheet is not None and spec.format not in WORKBOOKS:
        raise OptionError(
            f"{{sheet}} applies to Excel workbooks ({', '.join(WORKBOOKS)}); {literal(spec.path.name)} is "
            f"{literal(spec.format)}: leave it out",
            "sheet",
        )
    return _READERS[spec.format](spec)


def iter_texts(
    path: str | Path, column: Column | None = None, header: bool = True, sheet: str | int | None = None
) -> Iterator[str]:
    """Every text of one column (the whole line for .txt), streamed: corpora larger than memory read fine."""
    spec = TableSpec(Path(path), () if column is None else (column,), header, sheet=sheet)
    for _, values in iter_records(spec):
        yield values[0]


def read_texts(
    path: str | Path, column: Column | None = None, header: bool = True, sheet: str | int | None = None
) -> list[str]:
    """All texts of one column, as a list (small files and the Python API)."""
    return list(iter_texts(path, column, header, sheet))


def is_blank(text: str) -> bool:
    return not text.strip()


def first_lines(numbers: Sequence[int], limit: int = 5) -> str:
    shown = ", ".join(str(n) for n in numbers[:limit])
    return shown + (f" and {len(numbers) - limit} more" if len(numbers) > limit else "")
