"""Where a run gets its data: a task (catalog name, hf:NAME, or the user's file) or plain texts.

These read the run's options by name (`options.task`, `options.data`, ...), so every command that reads a task or
texts loads them the same way, with the same checks; the command line's flags are derived from these classes.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from bertlens.errors import BertlensError, OptionError, literal
from bertlens.io.dialect import parse_delimiter
from bertlens.io.sheets import parse_sheet
from bertlens.io.tables import is_blank, iter_texts, parse_column
from bertlens.tasks.catalog import CATALOG
from bertlens.tasks.catalog_fetch import load_catalog
from bertlens.tasks.kinds import CLASSIFICATION, RETRIEVAL, SIMILARITY

# no `from __future__ import annotations`: DataOptions' field types must be objects, since a subclass in another
# module (SweepOptions) has its fields' string annotations resolved in that module (dataclasses' generated __init__)
if TYPE_CHECKING:  # annotations only: the module loads without heavy imports (`--help`)
    from bertlens.tasks.loaders import TaskData


@dataclass(frozen=True, kw_only=True)  # keywords only: the command line has no positional argument
class DataOptions:
    """Where a run's data comes from: exactly one of `task` (a catalog name, or hf:NAME[:CONFIG]), `data` (a
    CSV/TSV/JSONL file or a BEIR directory; from Python also a dict of columns, a pandas DataFrame or a pyarrow
    Table) or `texts` (texts alone, no labels: a file; from Python also a list of strings, and with `labels` a
    labelled task), and how to read it. Each field is a flag of the command line (`text_col` is --text-col), its
    docstring the flag's help."""

    task: str | None = None
    """a catalog task (sst2, mr, subj, trec, stsb, movie_reviews, cranfield, cisi, npl); or hf:NAME[:CONFIG] for a
    Hugging Face dataset (online; needs `pip install 'bertlens[datasets]'` and --text-col/--label-col)"""
    data: Any = None
    """your own CSV/TSV/JSONL file (with --text-col and --label-col), or a BEIR retrieval directory; from Python also
    a dict of columns, a pandas DataFrame or a pyarrow Table"""
    texts: Any = None
    """texts alone, no labels: .txt (one a line), .csv/.tsv/.parquet or .jsonl (with --column); from Python also a
    list of strings"""
    labels: Sequence | None = None
    """Python only: the labels (or scores) of `texts` given as a list, making them a labelled task"""
    column: str | None = None
    """for --texts CSV/TSV/Parquet/JSONL: the text column (header name or 0-based index) or field"""
    data_dir: str | None = None
    """where the shared data lives: catalog tasks, UD EWT (default $BERTLENS_DATA or ../shared/data)"""
    task_type: (
        Literal["classification", "pair_classification", "similarity", "regression", "multi_label", "retrieval"] | None
    ) = None
    """for --data: classification, regression (a number per text) or multi_label (a set of labels per text), read
    from the label column with one text column (said in the report); pair_classification or similarity (default)
    with two; or retrieval (a BEIR directory, or --text-col QUERY --text-col2 RELEVANT_DOCUMENT; the default for a
    directory)"""
    text_col: str | None = None
    """for --data: text column (header name or 0-based index)"""
    text_col2: str | None = None
    """for --data: second text column (pair tasks)"""
    label_col: str | None = None
    """for --data: label or score column"""
    label_sep: str | None = None
    """for --data, multi-label: the label column holds each text's labels separated by this (e.g. ',' or '|');
    JSONL, Parquet and in-memory list columns need no separator"""
    label_cols: str | None = None
    """for --data, multi-label: one 0/1 column per label instead of a label column, comma-separated names (e.g.
    anger,joy,sadness) or 0-based indices"""
    no_header: bool = False
    """for --data: the CSV/TSV has no header row"""
    folds: int | None = None
    """cross-validation folds for data without a test split (default 10, lowered to what the rarest class allows,
    never below 2, with classes of a single row set aside, both said in the report; a count given here is kept)"""
    split_col: str | None = None
    """for --data: a column of train / dev (or validation) / test values: your own split instead of cross-validation
    (dev is carved from train when absent)"""
    test: Path | None = None
    """for --data: a test file with the same columns (--data is then train)"""
    dev: Path | None = None
    """for --data with --test: a dev file with the same columns"""
    drop_invalid: bool = False
    """drop rows with a blank text, a blank or missing-value label (nan, NA, null) or a non-finite score, and count
    them, instead of failing"""
    multiline: bool = False
    """for --data CSV: quoted fields really span lines (otherwise a field whose inner lines look like rows is reported
    as an unbalanced quote)"""
    label_first: bool = False
    """for --data: a SentEval-style text file, one 'LABEL TEXT' per line (like MR/SUBJ's .all files)"""
    encoding: str = "utf-8"
    """for --data: the file's encoding (e.g. latin-1); a UTF-16/32 file with a byte-order mark is read as such, and a
    file that is not UTF-8 is refused with the encoding it reads as"""
    delimiter: str | None = None
    """for --data CSV: comma, semicolon, tab or pipe (default: detected from the file, and said in the report)"""
    decimal: Literal["comma", "point"] | None = None
    """for --data: the decimal mark of a score column (0,347 or 0.347; default: read per column, never mixed, and
    said in the report)"""
    sheet: str | None = None
    """for --data, --test, --dev Excel workbooks (.xlsx, .xlsm; needs `pip install 'bertlens[excel]'`): the sheet,
    by name or 0-based index (default: the first, said in the report)"""

    def check_source(self) -> None:
        """Exactly one source of data, and labels only beside texts given as a list."""
        from bertlens.errors import OptionError

        given = [name for name in SOURCES if getattr(self, name) is not None]
        if len(given) != 1:
            got = " (got " + ", ".join("{" + name + "}" for name in given) + ")" if given else ""
            raise OptionError("give exactly one of {task}, {data} or {texts}" + got, *SOURCES)


SOURCES = ("task", "data", "texts")


@dataclass(frozen=True, kw_only=True)
class TextSourceOptions:
    """Texts without labels for a command that measures or fits on them (geometry, postprocess): exactly one of
    `texts` (a file; from Python also a list of strings) or `task` (every text of a catalog task)."""

    texts: Any = None
    """your texts: .txt (one a line), .csv/.tsv/.parquet or .jsonl (with --column); from Python also a list of
    strings"""
    column: str | None = None
    """for --texts CSV/TSV/Parquet/JSONL: the text column (header name or 0-based index) or field"""
    task: str | None = None
    """every text of a catalog task: sst2, mr, subj, trec, stsb, movie_reviews, cranfield, cisi, npl"""
    data_dir: str | None = None
    """where the shared data lives: catalog tasks, UD EWT (default $BERTLENS_DATA or ../shared/data)"""
    max_texts: int | None = None
    """a seeded sample of at most N texts"""

    def check_texts(self) -> None:
        """One source, a sample of at least two texts, and a list of strings when given in memory."""
        from bertlens.errors import check_whole

        given = [name for name in ("texts", "task") if getattr(self, name) is not None]
        if len(given) != 1:
            raise OptionError("give exactly one of {texts} or {task}", "texts", "task")
        if self.max_texts is not None:
            check_whole("max_texts", self.max_texts, 2, "leave it out for every text")
        if self.texts is not None and not isinstance(self.texts, str | Path):
            if not isinstance(self.texts, Sequence) or not all(isinstance(t, str) for t in self.texts):
                raise OptionError("{texts} must be a file path or a list of strings", "texts")


def load_task(args: Any) -> "TaskData":
    """The task named by --task / --data and their column flags."""
    from bertlens.tasks.loaders import UserTable, load_hf_task, load_user_task

    own_split = [flag for flag in ("split_col", "test", "dev") if getattr(args, flag, None) is not None]
    if own_split and (args.task or args.label_first or args.task_type == "retrieval"):
        raise BertlensError(
            f"--{own_split[0].replace('_', '-')} applies to --data tables (catalog tasks, --label-first files and "
            "retrieval data bring their own splits)"
        )
    file_only = [flag for flag in ("sheet", "decimal") if getattr(args, flag, None) is not None]
    if file_only and (args.task or args.label_first):
        raise OptionError(
            f"{{{file_only[0]}}} applies to {{data}} tables (CSV, TSV, JSONL, Parquet, Excel); "
            f"{'a catalog task' if args.task else 'a --label-first text file'} has none: leave it out",
            file_only[0],
            "data",
        )
    if args.data is not None and not args.data.exists():
        raise OptionError(
            f"{{data}} {literal(args.data)} does not exist; give a CSV/TSV/JSONL file or a BEIR directory", "data"
        )
    _refuse_on_retrieval(args)
    max_examples = getattr(args, "max_examples", None)
    folds = getattr(args, "folds", None)  # None: the default, fitted to the data (tasks/fitted_folds.py)
    if args.task and args.task.startswith("hf:"):
        name, _, config = args.task[3:].partition(":")
        if args.text_col is None or args.label_col is None:
            raise BertlensError("--task hf:NAME needs --text-col and --label-col (and --text-col2 for pairs)")
        texts = tuple(c for c in (args.text_col, args.text_col2) if c is not None)
        kind = args.task_type or _default_kind(texts)
        return load_hf_task(
            name,
            kind=kind,
            text_cols=texts,
            label_col=args.label_col,
            config=config or None,
            drop_invalid=args.drop_invalid,
            folds=folds,
            max_examples=max_examples,
            seed=args.seed,
        )
    if args.task:
        return load_catalog(
            args.task,
            args.data_dir,
            drop_invalid=args.drop_invalid,
            max_examples=max_examples,
            seed=args.seed,
            folds=folds,
        )
    if args.label_first:
        table = UserTable(args.task_type or CLASSIFICATION.name, (), 0, label_first=True, encoding=args.encoding)
        return load_user_task(
            args.data,
            table,
            drop_invalid=args.drop_invalid,
            folds=folds,
            max_examples=max_examples,
            seed=args.seed,
        )
    if args.task_type == RETRIEVAL.name or args.data.is_dir():
        return _user_retrieval(args)
    label_cols = _label_columns(args)
    if args.text_col is None or (args.label_col is None and not label_cols):
        raise BertlensError(
            "--data needs --text-col and --label-col (or --label-cols; and --text-col2 for pairs), or --label-first"
        )
    texts = tuple(parse_column(c) for c in (args.text_col, args.text_col2) if c is not None)
    kind = args.task_type or _default_kind(texts)
    table = UserTable(
        kind,
        texts,
        None if args.label_col is None else parse_column(args.label_col),
        label_sep=args.label_sep,
        label_cols=label_cols,
        header=not args.no_header,
        multiline=args.multiline,
        encoding=args.encoding,
        split_col=parse_column(args.split_col) if args.split_col else None,
        split_files=_split_files(args),
        delimiter=parse_delimiter(args.delimiter),
        decimal=args.decimal,
        sheet=parse_sheet(args.sheet),
    )
    return load_user_task(
        args.data, table, drop_invalid=args.drop_invalid, folds=folds, max_examples=max_examples, seed=args.seed
    )


def _split_files(args: Any) -> dict[str, Path]:
    """--test / --dev files (checked together with --split-col, which they replace)."""
    files = {name: getattr(args, name) for name in ("test", "dev") if getattr(args, name, None) is not None}
    if files and args.split_col:
        raise BertlensError("give the split either as --split-col or as --test/--dev files, not both")
    if "dev" in files and "test" not in files:
        raise BertlensError("--dev needs --test: without a test split the data is cross-validated")
    return files


def _user_retrieval(args: Any) -> "TaskData":
    """--data DIR (BEIR layout) or --data FILE --text-col QUERY --text-col2 DOCUMENT, as a retrieval task."""
    from bertlens.tasks.loaders import UserTable, load_user_task

    if args.task_type not in (None, RETRIEVAL.name):
        raise BertlensError(f"--data {args.data} is a directory: only --task-type retrieval reads one (a BEIR layout)")
    texts = tuple(parse_column(c) for c in (args.text_col, args.text_col2) if c is not None)
    table = UserTable(
        RETRIEVAL.name, texts, None, header=not args.no_header, encoding=args.encoding, sheet=parse_sheet(args.sheet)
    )
    return load_user_task(args.data, table, drop_invalid=args.drop_invalid)


def file_texts(path: Path, column: str | None, sheet: str | None = None) -> list[str]:
    """Non-blank texts of a .txt/.csv/.tsv/.jsonl/.parquet file or an Excel workbook's sheet (the first: None)."""
    chosen = parse_column(column) if column else None
    return [t for t in iter_texts(path, chosen, sheet=parse_sheet(sheet)) if not is_blank(t)]


LABELLED_FLAGS = (
    "label_col",
    "label_sep",
    "label_cols",
    "text_col2",
    "split_col",
    "test",
    "dev",
    "task_type",
    "label_first",
)
MIN_UNLABELLED = 8  # label-free scores need a spread of texts


def unlabelled_texts(args: Any) -> tuple[list[str], str]:
    """--texts FILE for a command that chooses without labels: its distinct non-blank texts (first-seen order),
    read once, and what was skipped; a flag of labelled data, or fewer than MIN_UNLABELLED texts, is one line."""
    given = [f for f in LABELLED_FLAGS if getattr(args, f, None)]
    if given:
        raise BertlensError(
            f"--texts takes texts alone; --{given[0].replace('_', '-')} belongs to --data (a labelled file)"
        )
    if args.text_col is not None:
        raise BertlensError("--texts reads its column from --column, not --text-col")
    chosen = parse_column(args.column) if args.column else None
    lines = list(iter_texts(args.texts, chosen, sheet=parse_sheet(getattr(args, "sheet", None))))
    kept = [t for t in lines if not is_blank(t)]
    texts = list(dict.fromkeys(kept))
    if len(texts) < MIN_UNLABELLED:
        raise BertlensError(
            f"{args.texts}: {len(texts)} distinct texts; label-free scores need at least {MIN_UNLABELLED}"
        )
    skipped = (
        f"{len(lines) - len(kept)} blank and {len(kept) - len(texts)} repeated lines skipped: {len(texts)} distinct texts"
        if len(lines) > len(texts)
        else ""
    )
    return texts, skipped


def training_texts(task: "TaskData") -> list[str]:
    """A task's training texts (both sides of pairs), never a test split's: what unsupervised training may read."""
    split = task.splits.get("train") or task.splits["all"]
    return [*split.texts_a, *(split.texts_b or ())]


def load_texts(args: Any, seed: int = 0) -> tuple[list[str], str, "TaskData | None"]:
    """(texts, a description of where they came from, the task when --task was used)."""
    import numpy as np

    if args.max_texts is not None and args.max_texts < 2:
        raise OptionError(f"{{max_texts}} must be at least 2, got {args.max_texts}", "max_texts")
    task = None
    if args.task:
        task = load_catalog(args.task, args.data_dir)
        texts, source = task.all_texts(), f"task {args.task}"
    elif not isinstance(args.texts, str | Path):  # a list of strings, from Python
        texts, source = [t for t in args.texts if not is_blank(t)], f"{len(args.texts)} texts in memory"
    else:
        texts, source = file_texts(args.texts, args.column), str(args.texts)
    if len(texts) < 2:
        raise BertlensError(f"{source}: need at least 2 non-empty texts, found {len(texts)}")
    if args.max_texts and len(texts) > args.max_texts:
        keep = np.sort(np.random.default_rng(seed).choice(len(texts), args.max_texts, replace=False))
        texts = [texts[i] for i in keep]
    return texts, source, task


def _default_kind(texts: tuple) -> str | None:
    """Without --task-type: two text columns are similarity; one is read from its labels (None: classes, numbers or
    sets of labels, tasks/targets.py)."""
    return None if len(texts) == 1 else SIMILARITY.name


def _label_columns(args: Any) -> tuple:
    """--label-cols a,b,c as columns (names or 0-based indices); refused beside --label-col or --label-sep."""
    if args.label_cols is None:
        return ()
    given = [name for name in ("label_col", "label_sep") if getattr(args, name) is not None]
    if given:
        raise OptionError(
            f"{{label_cols}} names one 0/1 column per label; leave out {{{given[0]}}}", "label_cols", given[0]
        )
    columns = tuple(parse_column(c.strip()) for c in args.label_cols.split(",") if c.strip())
    if len(columns) < 2:
        raise OptionError("{label_cols} needs two or more label columns, comma-separated", "label_cols")
    return columns


RETRIEVAL_UNUSED = (
    "decimal",
    "sheet",
    "folds",
    "split_col",
    "test",
    "dev",
    "max_examples",
    "label_col",
    "label_sep",
    "label_cols",
    "label_first",
)


def _refuse_on_retrieval(args: Any) -> None:
    """A retrieval collection (a BEIR directory, a catalog collection) brings its own splits (the qrels files) and
    fields: flags that would only apply to a labelled table are refused, not silently ignored."""
    catalog = args.task in CATALOG and CATALOG[args.task].file_format == "beir" if args.task else False
    directory = args.data is not None and args.data.is_dir()
    if not (catalog or directory):
        return
    given = [f for f in RETRIEVAL_UNUSED if getattr(args, f, None) not in (None, False)]
    if directory:
        given += [f for f in ("text_col", "text_col2") if getattr(args, f, None) is not None]
    if given:
        where = f"--task {args.task}" if catalog else f"--data {args.data} (a BEIR directory)"
        raise BertlensError(
            f"--{given[0].replace('_', '-')} does not apply to {where}: a retrieval collection's splits are its qrels "
            "files and its texts are corpus.jsonl and queries.jsonl; drop it"
        )
