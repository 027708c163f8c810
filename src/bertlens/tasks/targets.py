"""What a label column holds, read rather than assumed: class names, numbers, or sets of labels.

scikit-learn's `type_of_target` (binary, multiclass, continuous, multilabel-indicator) is the model: a column of
numbers that are not a small set of integers is a regression target; a few integers (ratings 1-5) stay classes, with
a note naming the option that reads them as numbers; a column of lists (JSON lists, a delimited column with
`label_sep`, or one 0/1 column per label) is a set of labels per text. Whatever is read is said in the task's notes.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
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


# --- Decimal marks -------------------------------------------------------------------------------------------------
# A spreadsheet saved in a comma locale writes 0,347 and 1.234,5 (or 1 234,5). Read as classes, such a column makes a
# class of every value; so the mark is read per label column: a column whose every value is a number with a decimal
# comma (at least one has one) is read so, a column whose every value is a number with a point as today, and a column
# that mixes them is neither (the guard below names --decimal).
DECIMALS = ("comma", "point")
_GROUPS = "[.\u00a0\u202f ']"  # what separates thousands where the decimal mark is a comma
COMMA_NUMBER = re.compile(rf"[+-]?(?:[1-9]\d{{0,2}}(?:{_GROUPS}\d{{3}})+|\d+)(?:,\d+)?")
POINT_NUMBER = re.compile(r"[+-]?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?")  # 1,234.5: a float() reads the rest
THOUSANDS_OR_DECIMAL = re.compile(r"[+-]?[1-9]\d{0,2},\d{3}")  # 1,234: 1.234 in one locale, 1234 in another


def number_in(value: str, mark: str) -> float | None:
    """The finite number `value` writes with decimal `mark` ('comma' or 'point'), or None."""
    if mark == "comma":
        if not COMMA_NUMBER.fullmatch(value):
            return None
        return as_number(re.sub(_GROUPS, "", value).replace(",", "."))
    if POINT_NUMBER.fullmatch(value):
        return as_number(value.replace(",", ""))
    return as_number(value)


@dataclass(frozen=True)
class DecimalReading:
    """How a label column's numbers are written: `mark` None leaves the values as they are (a decimal point, or not
    numbers), 'comma' rewrites them with a point; `note` says so in the report."""

    mark: str | None
    note: str = ""

    def rewrite(self, value: str) -> str:
        """A value as the rest of bertlens reads numbers (a point, no thousands separators); other values as given."""
        if self.mark is None:
            return value
        number = number_in(value.strip(), self.mark)
        if number is None:
            return value
        return str(int(number)) if number.is_integer() and abs(number) < 1e15 else repr(number)


def read_decimal(values: Sequence[str], column: str, forced: str | None = None) -> DecimalReading:
    """The decimal mark of a label column's values (stripped, blanks and missing values out); `forced` is the
    caller's --decimal. An ambiguous column (every comma followed by three digits, no other mark: 1,234 is 1.234 in
    one locale and 1234 in another) is refused in one line naming {decimal}."""
    if forced is not None:
        if forced not in DECIMALS:
            raise OptionError(f"{{decimal}} {literal(repr(forced))} is not one of comma, point", "decimal")
        if forced == "point" and not any(POINT_NUMBER.fullmatch(v) for v in values):
            return DecimalReading(None)
        return DecimalReading(forced, f"{column}: numbers read with a decimal {forced}, as --decimal says")
    if not values or all(as_number(v) is not None for v in values):
        return DecimalReading(None)
    if not all(COMMA_NUMBER.fullmatch(v) for v in values):
        return DecimalReading(None)
    marked = [v for v in values if "," in v]
    if not marked:  # 1.234 with dots alone: a float() read them all, so they are not here
        return DecimalReading(None)
    if all(THOUSANDS_OR_DECIMAL.fullmatch(v) for v in marked) and not any(re.search(_GROUPS, v) for v in values):
        shown = ", ".join(repr(v) for v in list(dict.fromkeys(marked))[:3])
        raise OptionError(
            f"the {literal(column)} holds numbers like {literal(shown)}, whose comma may be a decimal comma (1,234 = "
            "1.234) or a thousands separator (1,234 = 1234); say which with {decimal} comma or {decimal} point",
            "decimal",
        )
    example = marked[0]
    return DecimalReading(
        "comma",
        f"{column}: numbers with a decimal comma ({example!r} read as {number_in(example, 'comma'):g}); --decimal "
        "point reads them otherwise",
    )


# --- The guard: a column read as classes must be classes -----------------------------------------------------------
# Setting a few rare classes aside (tasks/fitted_folds.py) is for a few. A column most of whose values are numbers
# that do not read as numbers (a stray word, two decimal marks), or whose rows sit mostly in classes too small to
# cross-validate (an id, a free-text or a tags column picked as labels), would turn into a recommendation scored on
# what is left, with exit 0. Those stop in one line naming the option that settles the reading.
RARE_SHARE = 0.10  # at most this share of the rows may sit in classes too small for the folds
RARE_CLASSES = 3  # and fewer rare classes than this are a few (set aside, or refused by name), whatever their share
TAG_SEPARATORS = ("|", ";", ",")


@dataclass(frozen=True)
class TagReading:
    """A class column that holds several labels per value: its separator, whether the evidence is strong enough to
    read it so (else a hint for a refusal), and what to say."""

    sep: str
    strong: bool
    labels: int
    combinations: int

    def note(self, column: str, rows: int, with_sep: int) -> str:
        return (
            f"{column}: {with_sep} of {rows} values hold {self.sep!r}-separated labels ({self.labels} labels in "
            f"{self.combinations} distinct values), read as a multi-label task split on {self.sep!r}: --label-sep "
            f"{self.sep!r} says so, --task-type classification reads each value as one class"
        )

    def refusal(self, column: str) -> OptionError:
        return OptionError(
            f"the {literal(column)} may hold several labels per text: {self.combinations} distinct values split on "
            f"{literal(repr(self.sep))} into {self.labels} labels; pass {{label_sep}} {literal(repr(self.sep))} for a "
            "multi-label task, or {task_type} classification if each value is one class",
            "label_sep",
            "task_type",
        )

    def hint(self) -> str:
        return f"; if a value holds several labels separated by {self.sep!r}, pass {{label_sep}} {self.sep!r}"


def read_tags(values: Sequence[str]) -> TagReading | None:
    """Whether a class column's values (one a row) are sets of labels joined by a separator.

    A joined value is tag-like when each of its parts recurs: stands alone as a value, or in another joined value
    ('joy' in 'joy' and 'joy|love'); a single-label column whose class names hold commas ('Arts, Culture', 'Science,
    Tech') has parts that occur once. Strong evidence (read as multi-label): two or more values hold the separator,
    splitting gives at most half as many labels as distinct values, and at least half of the labels stand alone (rows
    with one label), as tags do. Weaker evidence (a tenth of the distinct values hold the separator and one of them is
    tag-like) is refused naming both readings when the kind was read from the labels, and is a hint in any other
    refusal. A column whose every value reads as a number in one decimal mark or the other ('0,5', '1.5') is numbers
    (read_decimal, numbers_in_disguise), not tags."""
    distinct = set(values)
    if all(number_in(v, "comma") is not None or number_in(v, "point") is not None for v in distinct):
        return None
    best = None
    for sep in TAG_SEPARATORS:
        parts = {v: {p.strip() for p in v.split(sep) if p.strip()} for v in distinct}
        holders = Counter(p for v in distinct for p in parts[v])  # label -> distinct values holding it
        joined = [v for v in distinct if len(parts[v]) > 1]
        if not any(all(holders[p] >= 2 for p in parts[v]) for v in joined) or 10 * len(joined) < len(distinct):
            continue
        labels = set(holders)
        strong = len(joined) >= 2 and 2 * len(labels) <= len(distinct) and 2 * len(labels & distinct) >= len(labels)
        reading = TagReading(sep, strong, len(labels), len(distinct))
        if best is None or (reading.strong, -reading.labels) > (best.strong, -best.labels):
            best = reading
    return best


def numbers_in_disguise(values: Sequence[str], column: str, forced: str | None = None) -> OptionError | None:
    """The refusal for a column read as classes whose values are mostly numbers that would read as a numeric scale
    (None when it is not one): two decimal marks, decimal commas that `forced` --decimal point does not read, or a
    few words among numbers."""
    if not values:
        return None
    point = [number_in(v, "point") for v in values]
    comma = [number_in(v, "comma") for v in values]
    either = [p if p is not None else c for p, c in zip(point, comma, strict=True)]
    numeric = [n for n in either if n is not None]
    if 2 * len(numeric) <= len(values) or read_target_kind([repr(n) for n in numeric], column).kind != "regression":
        return None
    comma_only = [v for v, p, c in zip(values, point, comma, strict=True) if p is None and c is not None]
    point_only = [v for v, p, c in zip(values, point, comma, strict=True) if c is None and p is not None and "." in v]
    words = [v for v, n in zip(values, either, strict=True) if n is None]
    if comma_only and point_only:
        why = f"both decimal marks ({literal(repr(point_only[0]))} and {literal(repr(comma_only[0]))})"
        fix = "say which with {decimal} comma or {decimal} point, or fix the column"
    elif comma_only and forced == "point":
        why = f"decimal commas ({literal(repr(comma_only[0]))}) that {{decimal}} point does not read"
        fix = "pass {decimal} comma, or leave it out to read the mark per column"
    elif words:
        shown = ", ".join(repr(w) for w in list(dict.fromkeys(words))[:3])
        why = f"{len(words)} values that are not numbers ({literal(shown)})"
        fix = "{task_type} regression scores them as numbers (with {drop_invalid} to drop the other rows)"
    else:
        return None
    return OptionError(
        f"the {literal(column)} reads as numbers on {len(numeric)} of {len(values)} rows but holds {why}, so "
        f"it would be read as {len(set(values))} classes; {fix}, or {{task_type}} classification if they are classes",
        "task_type",
        "decimal",
        "drop_invalid",
    )


def rare_classes(counts: dict[str, int], floor: int, column: str, hint: str = "") -> OptionError | None:
    """The refusal for a class column whose classes with fewer than `floor` rows (too few for the folds) are
    RARE_CLASSES or more and hold more than RARE_SHARE of the rows (None otherwise: a few rare classes are set aside,
    or refused by name)."""
    rows = sum(counts.values())
    rare = {name: n for name, n in counts.items() if n < floor}
    held = sum(rare.values())
    if not rows or len(rare) < RARE_CLASSES or held <= RARE_SHARE * rows:
        return None
    shown = ", ".join(repr(name) for name in list(rare)[:3])
    return OptionError(
        f"the {literal(column)} does not read as classes: {len(rare)} of its {len(counts)} classes ({literal(shown)}, "
        f"...) have fewer than {floor} rows and hold {held} of its {rows} rows ({held / rows:.0%}, more than "
        f"{RARE_SHARE:.0%}); an id or free-text column? choose the labels with {{label_col}}, or {{task_type}} "
        f"regression if they are numbers{hint}",
        "label_col",
        "task_type",
        "label_sep",
    )
