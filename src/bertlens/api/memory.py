"""Data given in memory (lists of texts and labels, a dict of columns, a pandas DataFrame or a pyarrow Table),
read by the same loaders, with the same checks, as a file: it is written to a temporary JSON-lines file for the
run, and an error names the row instead of that file."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from bertlens.errors import BertlensError, OptionError

TEXT, LABEL = "text", "label"  # the columns `texts=` and `labels=` become


def _plain(value: Any) -> Any:
    """A JSON value for a cell: numpy and pandas scalars as Python ones (nan stays nan: the loader refuses it)."""
    item = getattr(value, "item", None)
    return item() if callable(item) and not isinstance(value, str) else value


def columns_of(data: Any) -> dict[str, list]:
    """{column: values} of a dict of sequences, a pandas DataFrame or a pyarrow Table."""
    if hasattr(data, "to_pydict"):  # pyarrow.Table
        return {str(k): list(v) for k, v in data.to_pydict().items()}
    if hasattr(data, "columns") and hasattr(data, "__getitem__") and hasattr(data, "to_dict"):  # pandas.DataFrame
        return {str(c): list(data[c]) for c in data.columns}
    if isinstance(data, dict):
        return {str(k): list(v) for k, v in data.items()}
    raise OptionError(
        f"{{data}} must be a file path, a dict of columns, a pandas DataFrame or a pyarrow Table; got {type(data).__name__}",
        "data",
    )


def write_rows(path: Path, columns: dict[str, list]) -> Path:
    lengths = {len(v) for v in columns.values()}
    if len(lengths) > 1:
        raise OptionError(f"{{data}}: columns of different lengths ({sorted(lengths)})", "data")
    names = list(columns)
    with open(path, "w", encoding="utf-8") as handle:
        for row in zip(*columns.values(), strict=True):
            handle.write(json.dumps({n: _plain(v) for n, v in zip(names, row, strict=True)}) + "\n")
    return path


def _is_path(value: Any) -> bool:
    return isinstance(value, str | Path)


def _labelled(options: Any, folder: Path) -> dict:
    """texts= with labels=: a two-column table (text, label) named by text_col/label_col."""
    if options.text_col is not None or options.label_col is not None:
        raise OptionError("{texts} with {labels} names its own columns; leave out {text_col} and {label_col}",
                          "texts", "labels", "text_col", "label_col")  # fmt: skip
    if len(options.texts) != len(options.labels):
        raise OptionError(
            f"{{texts}} has {len(options.texts)} items and {{labels}} {len(options.labels)}", "texts", "labels"
        )
    path = write_rows(folder / "data.jsonl", {TEXT: list(options.texts), LABEL: list(options.labels)})
    return {"data": path, "texts": None, "labels": None, "text_col": TEXT, "label_col": LABEL}


def _changes(options: Any, folder: Path) -> dict:
    """The options to replace so that every source is a file."""
    if getattr(options, "labels", None) is not None:
        if options.texts is None or _is_path(options.texts):
            raise OptionError("{labels} goes with {texts} given as a list of strings", "labels", "texts")
        return _labelled(options, folder)
    if options.texts is not None and not _is_path(options.texts):
        if not isinstance(options.texts, Sequence) or not all(isinstance(t, str) for t in options.texts):
            raise OptionError("{texts} must be a file path or a list of strings", "texts")
        return {"texts": write_rows(folder / "texts.jsonl", {TEXT: list(options.texts)}), "column": TEXT}
    if options.data is not None and not _is_path(options.data):
        return {"data": write_rows(folder / "data.jsonl", columns_of(options.data))}
    return {}


@contextlib.contextmanager
def on_disk(options: Any) -> Iterator[Any]:
    """`options` with in-memory data written to a temporary file (removed afterwards); paths given as strings
    become Paths. A loader's error names 'the in-memory data' and its rows instead of the temporary file."""
    paths = {name: Path(getattr(options, name)) for name in ("data", "texts") if _is_path(getattr(options, name))}
    options = dataclasses.replace(options, **paths)
    with tempfile.TemporaryDirectory(prefix="bertlens-data-") as folder:
        changes = _changes(options, Path(folder))
        if not changes:
            yield options
            return
        try:
            yield dataclasses.replace(options, **changes)
        except OptionError as error:  # its template is reworded, so the command line still shows its flags
            raise OptionError(in_memory_words(error.template, folder), *error.options, values=error.values) from None
        except BertlensError as error:
            raise BertlensError(in_memory_words(str(error), folder)) from None


def in_memory_words(message: str, folder: str) -> str:
    """A loader's message about the temporary file, about the in-memory data: its lines are the data's rows,
    numbered from 1."""
    if folder not in message:
        return message
    for name in ("data.jsonl", "texts.jsonl"):
        message = message.replace(str(Path(folder) / name), "the in-memory data")
    return message.replace("lines ", "rows ").replace("line ", "row ").replace("field '", "column '")
