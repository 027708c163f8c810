"""Turn files into TaskData: texts (one or two sides), labels or scores, and splits.

Bad rows are reported with file and line; `drop_invalid` drops them instead (and counts them).
"""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from bertlens.errors import BertlensError, OptionError, check_whole, did_you_mean, literal
from bertlens.extras import require
from bertlens.io.tables import TableSpec, check_file, describe_reading, first_lines, iter_records
from bertlens.tasks.catalog import TaskSpec
from bertlens.tasks.fitted_folds import DEFAULT_FOLDS, MIN_CLASS_ROWS, class_fits, fit_folds
from bertlens.tasks.kinds import JUDGEMENTS, RETRIEVAL, SCORE, TEXTS, TaskKind, task_kind, user_kinds
from bertlens.tasks.retrieval import Collection, load_beir, load_pairs
from bertlens.tasks.targets import (
    check_regression_column,
    classes_note,
    indicator_field,
    label_flag,
    numbers_in_disguise,
    parse_label_set,
    rare_classes,
    read_decimal,
    read_tags,
    read_target_kind,
)


@dataclass(frozen=True)
class Split:
    texts_a: tuple[str, ...]
    texts_b: tuple[str, ...] | None
    targets: np.ndarray  # [n] int64 class ids, [n] float64 scores, or [n, L] bool label sets

    def __len__(self) -> int:
        return len(self.texts_a)

    def subset(self, rows: np.ndarray) -> Split:
        pick = lambda seq: tuple(seq[i] for i in rows)  # noqa: E731
        return Split(pick(self.texts_a), None if self.texts_b is None else pick(self.texts_b), self.targets[rows])


@dataclass(frozen=True)
class TaskData:
    """A loaded task. `splits` has 'train'/'dev'/'test' or just 'all' (cross-validated)."""

    name: str
    kind: TaskKind  # a name is resolved (tasks/kinds.py): an unknown one fails here, in one line
    splits: dict[str, Split]
    class_names: tuple[str, ...] = ()
    folds: int = 10
    dropped: int = 0
    source: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)
    collection: Collection | None = None  # a retrieval task's corpus, queries and judgements (no splits)
    folds_chosen: bool = True  # the caller gave `folds` (kept, a class too small refused); False: bertlens' default,
    # lowered to what the data allows (tasks/fitted_folds.py)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", task_kind(self.kind))

    @property
    def metric(self) -> str:
        return self.kind.metric

    @property
    def uses_cv(self) -> bool:
        return self.collection is None and "test" not in self.splits

    def all_texts(self) -> list[str]:
        """Every distinct text of every split, in first-seen order (what the bank encodes)."""
        if self.collection is not None:
            return list(dict.fromkeys((*self.collection.documents, *self.collection.queries)))
        seen: dict[str, None] = {}
        for split in self.splits.values():
            seen.update(dict.fromkeys(split.texts_a))
            if split.texts_b is not None:
                seen.update(dict.fromkeys(split.texts_b))
        return list(seen)


def texts_task(name: str, texts: list[str]) -> TaskData:
    """Distinct texts alone (first-seen order) as a task of kind 'texts': what `sweep --texts` and `recommend --texts`
    work on."""
    distinct = tuple(dict.fromkeys(texts))
    return TaskData(name, TEXTS, {"all": Split(distinct, None, np.zeros(len(distinct)))})


def _label_prefixed(path: Path, encoding: str) -> list[tuple[int, tuple[str, ...]]]:
    rows = []
    for line, (raw,) in iter_records(TableSpec(path, encoding=encoding, file_format=".txt")):
        label, _, text = raw.partition(" ")
        rows.append((line, (text.strip(), label)))
    return rows


def _sts_csv(path: Path, encoding: str) -> list[tuple[int, tuple[str, ...]]]:
    check_file(path)
    with open(path, newline="", encoding=encoding) as handle:
        reader = csv.reader(handle)
        return [(reader.line_num, tuple(row[:3])) for row in reader]


def _text_label_jsonl(path: Path, encoding: str) -> list[tuple[int, tuple[str, ...]]]:
    return list(iter_records(TableSpec(path, ("text", "label"), encoding=encoding, file_format=".jsonl")))


READERS = {"label_prefixed": _label_prefixed, "sts_csv": _sts_csv, "jsonl": _text_label_jsonl}


# What spreadsheet and pandas exports write for a missing value: never a label or a score
MISSING = frozenset({"nan", "na", "n/a", "<na>", "null", "none", "nat", "-nan", "#n/a"})


def _target_problem(target: str, kind: TaskKind, label_sep: str | None = None) -> str | None:
    """Why a label, score or label set cannot be used (None when it can)."""
    field = "score" if kind.target == SCORE else "label"
    if not target:
        return f"blank {field}"
    if target.lower() in MISSING:
        return f"missing value {target!r} as {field}"
    if kind.label_sets:
        if parse_label_set(target, label_sep) is None:
            return f"label set {target[:40]!r} is neither a list nor separated by {label_sep!r}"
        return None
    if kind.target == SCORE:
        try:
            value = float(target)
        except ValueError:
            return f"score {target!r} is not a number"
        if not np.isfinite(value):
            return f"score {target!r} is not a finite number"
    return None


@dataclass(frozen=True)
class LabelColumn:
    """How a label field is read: its name in what is said of it, and the separator of a multi-label field; and the
    text columns' names, for a blank text to name the option that chose them (a user's file or data)."""

    name: str = "label column"
    sep: str | None = None
    text_cols: tuple[str, ...] = ()
    decimal: str | None = None  # the decimal mark of a numeric label column, as the caller forced it (None: read)


TEXT_OPTIONS = ("text_col", "text_col2")  # the options naming a user's first and second text column


def _validate(rows, kind: TaskKind, where: str, drop_invalid: bool, label: LabelColumn = LabelColumn()):
    """Check text and target fields; returns clean rows and how many were dropped.

    A blank text, a blank or missing-value label ('nan', 'NA', 'null', ...) and a score that is not a
    finite number are errors naming their lines (and, for a user's columns, the option that chose the text column);
    `drop_invalid` drops those rows and counts them.
    """
    label_sep = label.sep
    bad: dict[str, list[int]] = {}  # problem -> lines, in file order
    clean = []
    for line, values in rows:
        texts, target = values[:-1], values[-1].strip()
        blank = [i for i, t in enumerate(texts) if not t.strip()]
        problem = f"blank text{blank[0]}" if blank else _target_problem(target, kind, label_sep)
        if problem:
            bad.setdefault(problem, []).append(line)
        else:
            clean.append((line, values))
    if bad and not drop_invalid:
        named = [(_blank_text(what, label.text_cols), lines) for what, lines in list(bad.items())[:3]]
        shown = "; ".join(f"{what} on line {first_lines(lines, 3)}" for what, lines in named)
        more = f"; {len(bad) - 3} more kinds" if len(bad) > 3 else ""
        raise OptionError(
            f"{literal(where)}: {shown}{more}; fix those rows or pass {{drop_invalid}} to drop them (they are counted)",
            "drop_invalid",
            *TEXT_OPTIONS[: len(label.text_cols)],
        )
    return clean, sum(len(v) for v in bad.values())


def _blank_text(problem: str, text_cols: tuple[str, ...]) -> str:
    """A problem for an OptionError's template: 'blank text<i>' names the text column (and its option), if known."""
    if not problem.startswith("blank text"):
        return literal(problem)
    column = int(problem.removeprefix("blank text"))
    if column >= len(text_cols):
        return "blank text"
    return f"blank text in {{{TEXT_OPTIONS[column]}}} '{literal(text_cols[column])}'"


def _to_split(rows, kind: TaskKind, class_index: dict[str, int] | None, label_sep: str | None = None) -> Split:
    texts_a = tuple(v[0] for _, v in rows)
    texts_b = tuple(v[1] for _, v in rows) if kind.pair else None
    raw = [v[-1].strip() for _, v in rows]
    if kind.label_sets:
        targets = np.zeros((len(raw), len(class_index)), dtype=bool)  # [n, L]
        for i, field in enumerate(raw):
            targets[i, [class_index[label] for label in parse_label_set(field, label_sep)]] = True
    elif kind.classes:
        targets = np.array([class_index[t] for t in raw])
    else:
        targets = np.array([float(t) for t in raw])
    return Split(texts_a, texts_b, targets)


def _labels_of(rows, kind: TaskKind, label_sep: str | None) -> set[str]:
    if kind.label_sets:
        return {label for _, v in rows for label in parse_label_set(v[-1].strip(), label_sep)}
    return {v[-1].strip() for _, v in rows}


def _class_index(all_rows, kind: TaskKind, label_sep: str | None = None) -> dict[str, int]:
    labels = sorted(set().union(*(_labels_of(rows, kind, label_sep) for rows in all_rows)))
    if all(label.lstrip("-").isdigit() for label in labels):
        labels.sort(key=int)
    return {label: i for i, label in enumerate(labels)}


def _check_label_sets(data: TaskData, where: str) -> TaskData:
    """Labels too rare for what follows (the folds under cross-validation, two training rows otherwise) are set
    aside from every split, named in the notes; fewer than two labels left is one line."""
    fitted = data.splits.get("train") or data.splits["all"]
    floor = class_floor(data, "all" if data.uses_cv else "train")
    counts = fitted.targets.sum(axis=0)  # [L]
    rare = np.flatnonzero(counts < floor)
    kept = np.flatnonzero(counts >= floor)
    if len(kept) < 2:
        raise BertlensError(
            f"{where}: {len(kept)} label(s) with at least {floor} rows ({len(data.class_names)} labels in all); a "
            "multi-label probe needs two or more"
        )
    if not len(rare):
        return data
    names = ", ".join(f"{data.class_names[i]!r} ({int(counts[i])})" for i in rare[:10])
    more = f" and {len(rare) - 10} more" if len(rare) > 10 else ""
    need = "rows the folds need" if data.uses_cv else "training rows a fit and a choice need"
    note = f"{len(rare)} labels set aside, in fewer than the {floor} {need}: {names}{more}"
    splits = {name: Split(s.texts_a, s.texts_b, s.targets[:, kept]) for name, s in data.splits.items()}
    names_kept = tuple(data.class_names[i] for i in kept)
    return replace(data, splits=splits, class_names=names_kept, notes=(*data.notes, note))


def _check_classes(data: TaskData, where: str) -> TaskData:
    if data.kind.label_sets:
        return _check_label_sets(data, where)
    if not data.kind.classes:
        return data
    for name, split in data.splits.items():
        if name in ("train", "all"):
            counts = Counter(split.targets.tolist())
            if len(counts) < 2:
                raise BertlensError(
                    f"{where}: only one class ({data.class_names[0]!r}) in the labels; a probe needs two or more"
                )
            rare = min(counts, key=counts.get)
            if data.uses_cv and not class_fits(counts[rare], data.folds):
                short = "fewer than" if counts[rare] < data.folds else "too few for (two to train on and one to test)"
                raise OptionError(
                    f"{literal(where)}: class {literal(repr(data.class_names[rare]))} has {counts[rare]} examples, "
                    f"{short} the {data.folds} folds; add examples, merge classes, lower {{folds}} or leave it out "
                    f"(the default fits the data){_tag_hint(data)}",
                    "folds",
                    "label_sep",
                )
    return data


def _tag_hint(data: TaskData) -> str:
    """'; if a value holds several labels separated by ...' when the class names look like joined labels."""
    tags = read_tags(list(data.class_names))
    return tags.hint() if tags else ""


def build_task(
    name: str,
    kind: str | TaskKind | None,
    raw_splits: dict[str, list],
    where: str,
    *,
    drop_invalid: bool,
    folds: int | None,
    source: str,
    wheres: dict[str, str] | None = None,
    label: LabelColumn = LabelColumn(),
) -> TaskData:
    """Rows checked (`wheres`: the file of each split, when they differ) and turned into splits; `label` says how
    to read the label field and what to call it. `kind` None: read from the labels (tasks/targets.py), and said in
    the notes."""
    read = kind is None  # the kind is read from the labels, so the guard checks that reading
    kind, label, tag_notes = _read_tags(kind, raw_splits, label)
    raw_splits, decimal_notes = _read_decimals(kind, raw_splits, label)
    label_sep, label_column = label.sep, label.name
    kind, notes = _read_kind(kind, raw_splits, label_column)
    notes = (*tag_notes, *decimal_notes, *notes)
    if read and kind.single_text_classes:
        refusal = numbers_in_disguise(_plain_targets(raw_splits), label_column, label.decimal)
        if refusal is not None:
            raise refusal
    if folds is not None:
        check_whole("folds", folds, 2, "cross-validation needs two folds or more")
    if kind.target == SCORE and not kind.pair:
        check_regression_column(_plain_targets(raw_splits), label_column)
    cleaned, dropped = {}, 0
    for split, rows in raw_splits.items():
        at = (wheres or {}).get(split, where)
        if not rows:
            named = "" if len(raw_splits) == 1 else f" ({split})"
            raise BertlensError(f"{at}{named}: no rows under the header; add labelled rows")
        rows, n = _validate(rows, kind, f"{at}" if len(raw_splits) == 1 else f"{at} ({split})", drop_invalid, label)
        if not rows:
            raise BertlensError(f"{where} ({split}): no valid rows")
        cleaned[split], dropped = rows, dropped + n
    index = _class_index(cleaned.values(), kind, label_sep) if kind.named_labels else None
    splits = {split: _to_split(rows, kind, index, label_sep) for split, rows in cleaned.items()}
    chosen = DEFAULT_FOLDS if folds is None else folds
    data = TaskData(name, kind, splits, tuple(index) if index else (), chosen, dropped, source, notes)
    data = replace(data, folds_chosen=folds is not None)
    _guard_rare_classes(data, label_column)
    return _check_classes(_fit_folds(data), where)


def _read_tags(kind, raw_splits: dict[str, list], label: LabelColumn) -> tuple:
    """(kind, label, notes): a label column read as classes whose values are sets of labels joined by a separator
    (tasks/targets.py: read_tags) is read as multi-label, split on it, and said, when the evidence is strong; weaker
    evidence is refused naming both readings; otherwise as given."""
    if kind is not None:
        return kind, label, ()
    values = _plain_targets(raw_splits)
    tags = read_tags(values)
    if tags is None or read_target_kind(values, label.name).kind != "classification":
        return kind, label, ()
    if not tags.strong:
        raise tags.refusal(label.name)
    with_sep = sum(tags.sep in v for v in values)
    return task_kind("multi_label"), replace(label, sep=tags.sep), (tags.note(label.name, len(values), with_sep),)


def _read_decimals(kind, raw_splits: dict[str, list], label: LabelColumn) -> tuple[dict[str, list], tuple[str, ...]]:
    """A score column's numbers written with a decimal comma rewritten with a point (tasks/targets.py: read_decimal),
    and said; a column of classes (or of label sets) is left as written."""
    if kind is not None and task_kind(kind).target != SCORE:
        if label.decimal is not None:
            raise OptionError(
                f"{{decimal}} reads the numbers of a score column; a {task_kind(kind).name} task's labels are classes: "
                "leave it out",
                "decimal",
            )
        return raw_splits, ()
    reading = read_decimal(_plain_targets(raw_splits), label.name, label.decimal)
    if reading.mark is None:
        return raw_splits, ()
    rewritten = {
        split: [(line, (*values[:-1], reading.rewrite(values[-1]))) for line, values in rows]
        for split, rows in raw_splits.items()
    }
    return rewritten, (reading.note,)


def _guard_rare_classes(data: TaskData, column: str) -> None:
    """A class column whose rows sit mostly in classes too small for any folds is refused (tasks/targets.py:
    rare_classes): under cross-validation, fewer than MIN_CLASS_ROWS (what fitted folds set aside); in a training
    split, fewer than two. Classes too small for the folds a caller gave are refused by name (_check_classes)."""
    if not data.kind.classes:
        return
    fitted = "all" if data.uses_cv else "train"
    if fitted not in data.splits:
        return
    floor = MIN_CLASS_ROWS if data.uses_cv else 2
    targets = data.splits[fitted].targets
    counts = {data.class_names[c]: n for c, n in sorted(Counter(targets.tolist()).items())}
    refusal = rare_classes(counts, floor, column, _tag_hint(data))
    if refusal is not None:
        raise refusal


def _fit_folds(data: TaskData) -> TaskData:
    """Default folds lowered to what the data allows, classes (labels) with a single row set aside, said in the
    notes (tasks/fitted_folds.py); folds the caller chose are left to the checks."""
    if data.folds_chosen or not data.uses_cv:
        return data
    targets = data.splits["all"].targets
    if data.kind.label_sets:
        counts = dict(zip(data.class_names, targets.sum(axis=0).tolist(), strict=True))
    elif data.kind.classes:
        counts = {data.class_names[c]: n for c, n in sorted(Counter(targets.tolist()).items())}
    else:
        counts = {}
    fit = fit_folds(counts, data.folds, len(targets), "label" if data.kind.label_sets else "class")
    splits, names = data.splits, data.class_names
    if fit.set_aside and len(fit.set_aside) < len(names) - 1:  # else the class check names what is left
        aside = {names.index(name) for name in fit.set_aside}
        if data.kind.label_sets:
            kept = [i for i in range(len(names)) if i not in aside]
            splits = {k: Split(s.texts_a, s.texts_b, s.targets[:, kept]) for k, s in splits.items()}
            names = tuple(names[i] for i in kept)
        else:
            splits, names = _without_classes(splits, names, aside)
    return replace(data, splits=splits, class_names=names, folds=fit.folds, notes=(*data.notes, *fit.notes))


def _read_kind(kind, raw_splits: dict[str, list], column: str) -> tuple[TaskKind, tuple[str, ...]]:
    """The kind given (with a note when classes were forced on numbers of a scale), or the one the labels read as;
    and what to say of it."""
    if kind is None:
        reading = read_target_kind(_plain_targets(raw_splits), column)
        return task_kind(reading.kind), (reading.note,) if reading.note else ()
    kind = task_kind(kind, user_kinds())
    note = classes_note(_plain_targets(raw_splits), column) if kind.single_text_classes else ""
    return kind, (note,) if note else ()


def _plain_targets(raw_splits: dict[str, list]) -> list[str]:
    """Every split's label fields, stripped, without blanks and missing values (their rows are reported apart)."""
    values = (v[-1].strip() for rows in raw_splits.values() for _, v in rows)
    return [v for v in values if v and v.lower() not in MISSING]


def load_catalog_task(
    spec: TaskSpec,
    root: Path,
    *,
    drop_invalid: bool = False,
    max_examples: int | None = None,
    seed: int = 0,
    folds: int | None = None,
) -> TaskData:
    """A catalog task from the data directory; `folds` (None: the default, fitted to the data) for a cross-validated
    one."""
    if spec.file_format == "beir":  # public collections with known gaps (empty documents, unjudged queries): dropped
        return retrieval_task(spec.name, load_beir(root / spec.splits[0][1], drop_invalid=True), str(root))
    reader = READERS[spec.file_format]
    raw = {split: reader(root / rel, spec.encoding) for split, rel in spec.splits}
    data = build_task(
        spec.name,
        spec.kind,
        raw,
        str(root / spec.splits[0][1]),
        drop_invalid=drop_invalid,
        folds=folds,
        source=str(root),
    )
    return limit_examples(data, max_examples, seed)


@dataclass(frozen=True)
class UserTable:
    """What a user's file holds: its kind of task (None: read from the labels) and where the texts, labels and
    splits are."""

    kind: str | TaskKind | None
    text_cols: tuple[str | int, ...] = ()  # one (single texts) or two (pairs); header names or 0-based indices
    label_col: str | int | None = None  # the label or score column
    header: bool = True
    multiline: bool = False  # a quoted CSV field may span lines
    label_first: bool = False  # a SentEval-style text file instead: one "LABEL TEXT" per line (classification)
    encoding: str = "utf-8"
    split_col: str | int | None = None  # a column of train/dev/test values: the user's own split
    split_files: dict[str, Path] | None = None  # {'test': FILE, 'dev': FILE} with the same columns
    label_sep: str | None = None  # multi-label: the labels of a row in the label column, separated by this
    label_cols: tuple[str | int, ...] = ()  # multi-label: one 0/1 column per label instead of a label column
    delimiter: str | None = None  # CSV: None reads it from the file (io/dialect.py)
    decimal: str | None = None  # a score column's decimal mark, comma or point (None: read per column)
    sheet: str | int | None = None  # a workbook's sheet, by name or 0-based index (None: the first)


def load_user_task(
    path: Path,
    table: UserTable,
    *,
    drop_invalid: bool = False,
    folds: int | None = None,
    max_examples: int | None = None,
    seed: int = 0,
) -> TaskData:
    """A user's CSV/TSV/JSONL: one text column (classification) or two (pairs), plus a label/score column.

    `table.label_first`: a SentEval-style text file instead, one "LABEL TEXT" per line (classification).
    The user's own splits, instead of cross-validation: `split_col` names a column of train/dev/test values,
    or `split_files` gives {'test': FILE, 'dev': FILE} with the same columns (`path` is then the training data).
    """
    kind, text_cols, label_col, header = table.kind, table.text_cols, table.label_col, table.header
    multiline, label_first, encoding = table.multiline, table.label_first, table.encoding
    split_col, split_files = table.split_col, table.split_files
    kind = _table_kind(table)
    if label_first:
        kind = kind or task_kind("classification")
        if not kind.single_text_classes:
            raise BertlensError("--label-first files hold one 'LABEL TEXT' per line, so they are classification tasks")
        data = build_task(
            path.stem,
            kind,
            {"all": _label_prefixed(path, encoding)},
            str(path),
            drop_invalid=drop_invalid,
            folds=folds,
            source=str(path),
        )
        return _check_fold_size(limit_examples(data, max_examples, seed), str(path))
    if kind is not None and kind.target == JUDGEMENTS:
        return _user_retrieval(path, table, drop_invalid)
    needed = 2 if kind is not None and kind.pair else 1
    if len(text_cols) != needed:
        raise BertlensError(
            f"task type '{kind.name}' needs {needed} text column(s) (--text-col{' and --text-col2' if needed == 2 else ''})"
        )
    labels = table.label_cols or (label_col,)
    columns = (*text_cols, *labels, *(() if split_col is None else (split_col,)))
    spec = TableSpec(
        path,
        columns,
        header,
        encoding,
        texts=len(text_cols),
        multiline=multiline,
        delimiter=table.delimiter,
        sheet=table.sheet,
    )
    said: list[str] = []  # what each file was read as (io/dialect.py), for the report

    def read(spec: TableSpec) -> list:
        rows = list(iter_records(spec))
        said.extend(filter(None, [describe_reading(spec)]))
        return _indicator_rows(rows, table, str(spec.path)) if table.label_cols else rows

    rows = read(spec)
    raw, wheres = {"all": rows}, {"all": str(path)}
    if split_col is not None:
        raw = _by_split_column(rows, str(path))
        wheres = dict.fromkeys(raw, str(path))
    elif split_files:
        raw, wheres = {"train": rows}, {"train": str(path)}
        for split, file in split_files.items():
            raw[split] = read(replace(spec, path=Path(file)))
            wheres[split] = str(file)
    data = build_task(
        path.stem,
        kind,
        raw,
        str(path),
        drop_invalid=drop_invalid,
        folds=folds,
        source=str(path),
        wheres=wheres,
        label=LabelColumn(
            f"label column {label_col!r}" if not table.label_cols else "label columns",
            table.label_sep,
            text_cols,
            table.decimal,
        ),
    )
    data = replace(data, notes=(*data.notes, *said))
    if split_col is not None or split_files:
        data = separated_splits(data)
    return _check_fold_size(limit_examples(data, max_examples, seed), str(path))


def _table_kind(table: UserTable) -> TaskKind | None:
    """The kind the table names; multi-label when only its label options say so; None: read from the labels."""
    multi = table.label_sep is not None or bool(table.label_cols)
    if table.kind is None:
        return task_kind("multi_label") if multi else None
    kind = task_kind(table.kind, user_kinds())
    if multi and not kind.label_sets:
        given = "label_sep" if table.label_sep is not None else "label_cols"
        raise OptionError(
            f"{{{given}}} reads a set of labels per text; it goes with {{task_type}} multi_label, not {kind.name}",
            given,
            "task_type",
        )
    return kind


def _indicator_rows(rows: list, table: UserTable, where: str) -> list:
    """Rows of (texts..., one 0/1 field per label[, split]) as (texts..., the JSON list of its labels[, split])."""
    texts, count = len(table.text_cols), len(table.label_cols)
    names = [str(c) for c in table.label_cols]
    out = []
    for line, values in rows:
        field = indicator_field(values[texts : texts + count], names)
        if field is None:
            bad = next(v for v in values[texts : texts + count] if label_flag(v) is None)
            raise OptionError(
                f"{literal(where)} line {line}: {literal(repr(bad))} in a label column; {{label_cols}} reads one 0/1 "
                "column per label (1, 0, true, false or blank)",
                "label_cols",
            )
        out.append((line, (*values[:texts], field, *values[texts + count :])))
    return out


def separated_splits(data: TaskData) -> TaskData:
    """A user's own splits kept apart: a training row that is also in the test or dev split (the same text, or the
    same pair) is dropped from training, and test labels training never saw are named; both said in the notes, as
    the sweep's report and the CLI print them. Scoring what was trained on would report a memorised score."""
    train = data.splits.get("train")
    held_names = [name for name in ("test", "dev") if name in data.splits]
    if train is None or not held_names:
        return data

    def key(split: Split, i: int) -> tuple:
        return split.texts_a[i], split.texts_b[i] if split.texts_b is not None else None

    held = {key(data.splits[name], i) for name in held_names for i in range(len(data.splits[name]))}
    keep = np.array([i for i in range(len(train)) if key(train, i) not in held], dtype=np.int64)
    notes = list(data.notes)
    if len(keep) < len(train):
        notes.append(
            f"{len(train) - len(keep)} training rows are also in the {' or '.join(held_names)} split (the same "
            f"{'pair' if train.texts_b is not None else 'text'}): dropped from training, so no score is on rows "
            "the probe was trained on"
        )
    if not len(keep):
        raise BertlensError(f"{data.source}: every training row is also in the {' or '.join(held_names)} split")
    splits = {**data.splits, "train": train.subset(keep)}
    if data.kind.classes and "test" in data.splits:
        unseen = sorted(set(data.splits["test"].targets.tolist()) - set(splits["train"].targets.tolist()))
        if unseen:
            rows = int(np.isin(data.splits["test"].targets, unseen).sum())
            names = ", ".join(repr(data.class_names[i]) for i in unseen[:5])
            notes.append(
                f"{rows} test rows carry labels training never saw ({names}): no probe can predict them, so they "
                "count as errors"
            )
    return replace(data, splits=splits, notes=tuple(notes))


SPLIT_VALUES = {"train": "train", "dev": "dev", "validation": "dev", "valid": "dev", "test": "test"}


def _by_split_column(rows: list[tuple[int, tuple[str, ...]]], where: str) -> dict[str, list]:
    """Rows grouped by their last field (train, dev/validation, test); anything else is named with its lines."""
    raw: dict[str, list] = {}
    bad: list[int] = []
    for line, record in rows:
        split = SPLIT_VALUES.get(record[-1].strip().lower())
        if split is None:
            bad.append(line)
            continue
        raw.setdefault(split, []).append((line, record[:-1]))
    if bad:
        raise BertlensError(
            f"{where}: the split column holds a value other than train, dev (or validation) and test on line "
            f"{first_lines(bad)}; fix those rows"
        )
    if "test" not in raw or "train" not in raw:
        missing = "test" if "test" not in raw else "train"
        raise BertlensError(f"{where}: no '{missing}' rows in the split column; a split needs train and test rows")
    return raw


def retrieval_task(name: str, collection: Collection, source: str) -> TaskData:
    """A retrieval collection as a task; what was dropped becomes its notes."""
    notes = tuple(f"dropped {n} {reason}" for reason, n in collection.dropped.items())
    return TaskData(
        name,
        RETRIEVAL,
        {},
        dropped=sum(collection.dropped.values()),
        source=source,
        notes=notes,
        collection=collection,
    )


def _user_retrieval(path: Path, table: UserTable, drop_invalid: bool) -> TaskData:
    """A BEIR directory, or a table of (query, relevant document) rows (--text-col, --text-col2)."""
    text_cols, encoding = table.text_cols, table.encoding
    if path.is_dir():
        return retrieval_task(path.name, load_beir(path, drop_invalid=drop_invalid, encoding=encoding), str(path))
    if len(text_cols) != 2:
        raise BertlensError(
            f"{path}: a retrieval table needs --text-col (the query) and --text-col2 (a relevant document); "
            "or pass a BEIR directory (corpus.jsonl, queries.jsonl, qrels/test.tsv)"
        )
    collection = load_pairs(
        path, *text_cols, header=table.header, drop_invalid=drop_invalid, encoding=encoding, sheet=table.sheet
    )
    return retrieval_task(path.stem, collection, str(path))


def _check_fold_size(data: TaskData, where: str) -> TaskData:
    """Cross-validation needs rows to spare in every fold; say so before anything is encoded."""
    if not data.uses_cv:
        return data
    data = _fit_folds(data)  # a draw of --max-examples may have left fewer rows than the default folds need
    rows = len(data.splits["all"])
    if rows < 2 * data.folds:
        raise OptionError(
            f"{literal(where)}: {rows} rows; {data.folds}-fold cross-validation needs at least {2 * data.folds}; "
            f"use {{folds}} {max(2, rows // 2)} or add rows",
            "folds",
        )
    return data


def check_max_examples(max_examples: int | None) -> None:
    """`max_examples` is a whole number of at least 1, or None for no limit (the command line checks
    `--max-examples` the same way first)."""
    if max_examples is not None:
        check_whole("max_examples", max_examples, 1, "leave it out for no limit")


def class_floor(data: TaskData, split: str) -> int:
    """Texts every kept class needs in `split` for what follows: the folds under cross-validation, two in a
    training split (a fit and a held-out choice of strength), one elsewhere."""
    if split == "all":
        return data.folds
    return 2 if split == "train" else 1


def _stratified_rows(targets: np.ndarray, size: int, floor: int, rng: np.random.Generator) -> tuple[np.ndarray, list]:
    """(rows, dropped classes) of a seeded draw of `size` rows in which every kept class has at least `floor` rows
    and the rest is spread in proportion to what each class has beyond that. Classes with fewer than `floor` rows
    in the data keep them all (the class check names them: that is the data, not the draw); when the floors of
    all classes do not fit in `size`, the rarest classes are dropped."""
    classes, counts = np.unique(targets, return_counts=True)
    short = classes[counts < floor]
    order = np.argsort(-counts, kind="stable")
    room = size - int(counts[counts < floor].sum())
    kept = [c for c in classes[order] if counts[classes == c][0] >= floor]
    dropped = []
    while kept and floor * len(kept) > room:
        dropped.append(kept.pop())  # the rarest of those left
    spare = {c: int((targets == c).sum()) - floor for c in kept}
    extra = max(room - floor * len(kept), 0)
    total_spare = sum(spare.values()) or 1
    shares = {c: extra * spare[c] / total_spare for c in kept}
    take = {c: floor + min(spare[c], int(shares[c])) for c in kept}
    leftover = extra - sum(take[c] - floor for c in kept)
    for c in sorted(kept, key=lambda c: shares[c] - int(shares[c]), reverse=True):
        if leftover <= 0:
            break
        if take[c] < floor + spare[c]:
            take[c] += 1
            leftover -= 1
    rows = [np.flatnonzero(targets == c) for c in short]
    rows += [rng.choice(np.flatnonzero(targets == c), take[c], replace=False) for c in kept]
    return np.sort(np.concatenate(rows)) if rows else np.array([], dtype=np.int64), dropped


def _draw(data: TaskData, name: str, split: Split, max_examples: int, rng, seed: int) -> tuple[Split, list, bool]:
    """A seeded random subset of the split (the draw every earlier release made); when that leaves a class of a
    classification task below what follows needs, a stratified draw instead. (subset, dropped classes, stratified)"""
    rows = np.sort(rng.choice(len(split), max_examples, replace=False))
    if not data.kind.classes:
        return split.subset(rows), [], False
    floor = class_floor(data, name)
    full = Counter(split.targets.tolist())
    drawn = Counter(split.targets[rows].tolist())
    if all(drawn[c] >= floor for c, n in full.items() if n >= floor):
        return split.subset(rows), [], False
    own = np.random.default_rng([seed, len(split), max_examples])  # its own stream: other splits' draws unchanged
    rows, dropped = _stratified_rows(split.targets, max_examples, floor, own)
    return split.subset(rows), dropped, True


def _without_classes(splits: dict[str, Split], class_names: tuple, dropped: set) -> tuple[dict, tuple]:
    """Every split less the rows of `dropped` classes, the kept classes numbered 0.. again (as loading numbers them)."""
    kept = [c for c in range(len(class_names)) if c not in dropped]
    number = np.full(len(class_names), -1, dtype=np.int64)
    number[kept] = np.arange(len(kept))
    out = {}
    for name, split in splits.items():
        split = split.subset(np.flatnonzero(~np.isin(split.targets, sorted(dropped))))
        out[name] = Split(split.texts_a, split.texts_b, number[split.targets.astype(np.int64)])
    return out, tuple(class_names[c] for c in kept)


def limit_examples(data: TaskData, max_examples: int | None, seed: int) -> TaskData:
    """Keep at most `max_examples` rows per split (a seeded random subset, order preserved). For classification,
    every class kept has at least the texts what follows needs (the folds under cross-validation): a draw that
    would leave one short is made stratified, and classes that cannot all fit are dropped from every split, named
    in the task's notes."""
    check_max_examples(max_examples)
    check_whole("seed", seed, 0, "a seed is a non-negative whole number")
    if not max_examples:
        return data
    rng = np.random.default_rng(seed)
    splits, dropped, notes = {}, set(), []
    for name, split in data.splits.items():
        if len(split) > max_examples:
            split, lost, stratified = _draw(data, name, split, max_examples, rng, seed)
            dropped.update(lost)
            if stratified:
                notes.append(
                    f"--max-examples {max_examples}: the {name} split drawn by class, so every class keeps at least "
                    f"{class_floor(data, name)} texts"
                )
        splits[name] = split
    if dropped:
        names = ", ".join(repr(data.class_names[c]) for c in sorted(dropped))
        notes.append(
            f"--max-examples {max_examples}: {len(dropped)} rarest classes dropped, as {max_examples} texts cannot give "
            f"every class what the folds need: {names}"
        )
        splits, class_names = _without_classes(splits, data.class_names, dropped)
    else:
        class_names = data.class_names
    limited = replace(data, splits=splits, class_names=class_names, notes=(*data.notes, *notes))
    return _check_classes(limited, data.source)


HF_SPLITS = {"train": "train", "validation": "dev", "dev": "dev", "test": "test"}


def load_hf_task(
    name: str,
    *,
    kind: str | TaskKind | None,
    text_cols: tuple[str, ...],
    label_col: str,
    config: str | None = None,
    drop_invalid: bool = False,
    folds: int | None = None,
    max_examples: int | None = None,
    seed: int = 0,
) -> TaskData:
    """A Hugging Face dataset (for users who are online), e.g. name='glue', config='sst2'.

    Splits named train/validation/test map to train/dev/test. A split whose labels are hidden
    (all negative, as in GLUE's test sets) is dropped; the dev split then serves as test and a
    seeded 10% of train becomes dev.
    """
    require("datasets", "a Hugging Face dataset (--task hf:NAME)")
    import datasets

    try:
        loaded = datasets.load_dataset(name, config)
    except Exception as exc:  # noqa: BLE001 - network, missing dataset or config: one user-facing line
        raise BertlensError(
            f"could not load Hugging Face dataset '{name}'{f' ({config})' if config else ''}: {exc}"
        ) from None
    raw: dict[str, list] = {}
    for split, rows in loaded.items():
        ours = HF_SPLITS.get(split)
        if ours is None:
            continue
        missing = [c for c in (*text_cols, label_col) if c not in rows.column_names]
        if missing:
            raise BertlensError(
                f"dataset '{name}' split '{split}' has no column '{missing[0]}': {did_you_mean(missing[0], rows.column_names)}"
            )
        labels = [str(v) for v in rows[label_col]]
        if kind is not None and task_kind(kind).classes and all(v.lstrip("-").isdigit() and int(v) < 0 for v in labels):
            continue  # hidden test labels
        columns = [rows[c] for c in text_cols]
        raw[ours] = [(i + 1, (*(str(col[i]) for col in columns), labels[i])) for i in range(len(labels))]
    if "train" not in raw:
        raise BertlensError(f"dataset '{name}' has no labelled train split")
    if "test" not in raw and "dev" in raw:
        raw["test"] = raw.pop("dev")
    if "test" not in raw:
        raw = {"all": raw["train"]}
    data = build_task(
        name if not config else f"{name}/{config}",
        kind,
        raw,
        f"hf:{name}",
        drop_invalid=drop_invalid,
        folds=folds,
        source=f"hf:{name}",
    )
    return limit_examples(data, max_examples, seed)
