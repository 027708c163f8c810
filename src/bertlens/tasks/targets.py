"""What a label column holds, read rather than assumed: class names, numbers, or sets of labels.

scikit-learn's `type_of_target` (binary, multiclass, continuous, multilabel-indicator) is the model: a column of
numbers that are not a small set of integers is a regression target; a few integers (ratings 1-5) stay classes, with
a note naming the option that reads them as numbers; a column of lists (JSON lists, a delimited column with
`label_sep`, or one 0/1 column per label) is a set of labels per text. Whatever is read is said in the task's notes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from bertlens.errors import OptionError, literal

MAX_INTEGER_CLASSES = 20  # at most this many distinct integers read as classes; more is a numeric scale
TRUE_VALUES = frozenset({"1", "1.0", "true", "yes", "y", "t"})  # a 0/1 label column's "has this label"
FALSE_VALUES = frozenset({"0", "0.0", "false", "no", "n", "f", ""})
LIST_OPEN = "["  # a JSON list (JSONL, Parquet and in-memory list columns are written as JSON)


def as_number(value: str) -> float | None:
    """The finite number a label field holds, or None."""
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


@dataclass(frozen=True)
class TargetReading:
    """The kind a label column was read as, and the sentence the report and stderr show."""

    kind: str
    note: str = ""


def read_target_kind(values: Sequence[str], column: str) -> TargetReading:
    """The kind of one text column's labels `values` (stripped, blanks and missing values already out).

    Lists -> multi_label; numbers that are not a few integers -> regression; anything else -> classification (with a
    note when they are integers of a scale, which a user may have meant as numbers)."""
    if values and all(v.startswith(LIST_OPEN) for v in values):
        return TargetReading("multi_label", f"{column}: lists of labels, read as a multi-label task")
    numbers = [as_number(v) for v in values]
    if not values or any(n is None for n in numbers):
        return TargetReading("classification")
    distinct = set(numbers)
    integers = all(n == int(n) for n in distinct)
    if integers and len(distinct) <= MAX_INTEGER_CLASSES:
        if len(distinct) <= 2:
            return TargetReading("classification")
        return TargetReading(
            "classification",
            f"{column}: {len(distinct)} distinct integers ({_span(distinct)}), read as classes; --task-type "
            "regression reads them as numbers",
        )
    what = "integers" if integers else "numbers"
    return TargetReading(
        "regression",
        f"{column}: {len(distinct)} distinct {what} ({_span(distinct)}), read as a regression target (scored by "
        "Spearman); --task-type classification reads them as classes",
    )


def _span(numbers: set[float]) -> str:
    low, high = min(numbers), max(numbers)
    return f"{low:g} to {high:g}"


def classes_note(values: Sequence[str], column: str) -> str:
    """Forced classification of a column that reads as numbers on a scale: say how many classes that made."""
    reading = read_target_kind(values, column)
    if reading.kind != "regression":
        return ""
    distinct = len(set(values))
    return (
        f"{column}: {distinct} distinct numeric values read as {distinct} classes, as --task-type classification "
        "asks; --task-type regression scores them as numbers"
    )


def check_regression_column(values: Sequence[str], column: str) -> None:
    """A regression target must be numbers: a column most of whose values are not is the wrong column (one line),
    not rows to fix one by one."""
    text = [v for v in values if as_number(v) is None]
    if values and len(text) * 2 > len(values):
        shown = ", ".join(repr(v) for v in list(dict.fromkeys(text))[:3])
        raise OptionError(
            f"the {literal(column)} holds text ({literal(shown)}), not numbers: a regression target is a number per "
            "text; choose a numeric {label_col}, or {task_type} classification for labels",
            "label_col",
            "task_type",
        )
    if values and len({as_number(v) for v in values} - {None}) == 1:
        raise OptionError(
            f"the {literal(column)}: every row holds the same number ({literal(values[0])}); a regression target "
            "needs at least two values: choose another {label_col}",
            "label_col",
        )


def parse_label_set(raw: str, sep: str | None) -> tuple[str, ...] | None:
    """The labels of one field: a JSON list, or the field split on `sep`; None when it is neither (an error the
    caller words with the line). Labels are stripped strings; repeats count once; an empty list is no label."""
    if raw.startswith(LIST_OPEN):
        try:
            items = json.loads(raw)
        except json.JSONDecodeError:
            items = None
        if not isinstance(items, list) or not all(isinstance(i, str | int) and not isinstance(i, bool) for i in items):
            return None
        return tuple(dict.fromkeys(str(i).strip() for i in items if str(i).strip()))
    if sep is None:
        return None
    return tuple(dict.fromkeys(part.strip() for part in raw.split(sep) if part.strip()))


def label_flag(value: str) -> bool | None:
    """A 0/1 label column's cell: has the label, has it not, or None (neither)."""
    flag = value.strip().lower()
    return True if flag in TRUE_VALUES else False if flag in FALSE_VALUES else None


def indicator_field(values: Sequence[str], names: Sequence[str]) -> str | None:
    """One row of 0/1 label columns as the JSON list of the labels it has; None when a value is not 0/1."""
    flags = [label_flag(v) for v in values]
    if None in flags:
        return None
    return json.dumps([name for name, flag in zip(names, flags, strict=True) if flag])
