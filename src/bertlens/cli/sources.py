"""Where commands get their data: a task (catalog name, hf:NAME, or the user's file) or plain texts."""

from __future__ import annotations

import argparse
from pathlib import Path

from bertlens.api.sources import (  # noqa: F401 - the loaders, for the commands that import them from here
    FOLDS,
    file_texts,
    folds_of,
    load_task,
    load_texts,
    training_texts,
)
from bertlens.tasks.catalog import CATALOG
from bertlens.tasks.kinds import user_kinds

TEXT_FILES = ".txt (one a line), .csv/.tsv/.parquet or .jsonl (with --column)"


def add_task_options(parser: argparse.ArgumentParser, texts: str | None = None) -> None:
    """--task / --data and their column flags; with `texts`, --texts FILE (no labels) as a third source, so described."""
    source = parser.add_mutually_exclusive_group(required=True)
    if texts:
        add_texts_options(parser, texts, target=source)
    source.add_argument(
        "--task",
        help=f"a catalog task: {', '.join(CATALOG)}; or hf:NAME[:CONFIG] for a Hugging Face "
        "dataset (online; needs `pip install 'bertlens[datasets]'` and --text-col/--label-col)",
    )
    source.add_argument(
        "--data",
        type=Path,
        help="your own CSV/TSV/JSONL file (with --text-col and --label-col), or a BEIR retrieval directory",
    )
    add_data_dir_option(parser)
    parser.add_argument(
        "--task-type",
        choices=user_kinds(),
        help="for --data: classification (default with one text column), "
        "pair_classification, similarity (default with two text columns), or retrieval (a BEIR directory, or "
        "--text-col QUERY --text-col2 RELEVANT_DOCUMENT; the default for a directory)",
    )
    parser.add_argument("--text-col", help="for --data: text column (header name or 0-based index)")
    parser.add_argument("--text-col2", help="for --data: second text column (pair tasks)")
    parser.add_argument("--label-col", help="for --data: label or score column")
    parser.add_argument("--no-header", action="store_true", help="for --data: the CSV/TSV has no header row")
    parser.add_argument(
        "--folds", type=int, help=f"cross-validation folds for data without a test split (default {FOLDS})"
    )
    parser.add_argument(
        "--split-col",
        help="for --data: a column of train / dev (or validation) / test values: your own split instead of "
        "cross-validation (dev is carved from train when absent)",
    )
    parser.add_argument(
        "--test", type=Path, help="for --data: a test file with the same columns (--data is then train)"
    )
    parser.add_argument("--dev", type=Path, help="for --data with --test: a dev file with the same columns")
    parser.add_argument(
        "--drop-invalid",
        action="store_true",
        help="drop rows with a blank text, a blank or missing-value label (nan, NA, null) or a non-finite score, "
        "and count them, instead of failing",
    )
    parser.add_argument(
        "--multiline",
        action="store_true",
        help="for --data CSV: quoted fields really span lines (otherwise a field whose inner lines look like rows "
        "is reported as an unbalanced quote)",
    )
    parser.add_argument(
        "--label-first",
        action="store_true",
        help="for --data: a SentEval-style text file, one 'LABEL TEXT' per line (like MR/SUBJ's .all files)",
    )
    parser.add_argument("--encoding", default="utf-8", help="for --data: the file's encoding (e.g. latin-1)")


def add_data_dir_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        help="where the shared data lives: catalog tasks, UD EWT (default $BERTLENS_DATA or ../shared/data)",
    )


def add_texts_options(
    parser: argparse.ArgumentParser,
    what: str,
    *,
    target: argparse._ActionsContainer | None = None,
    required: bool = False,
    many: bool = False,
) -> None:
    """--texts FILE (or several with `many`; in `target`, e.g. a group of exclusive sources) and its --column."""
    (target or parser).add_argument(
        "--texts", type=Path, nargs="+" if many else None, required=required, help=f"{what}: {TEXT_FILES}"
    )
    parser.add_argument(
        "--column", help="for --texts CSV/TSV/Parquet/JSONL: the text column (header name or 0-based index) or field"
    )


def add_text_source(parser: argparse.ArgumentParser, required: bool = True) -> argparse._MutuallyExclusiveGroup:
    source = parser.add_mutually_exclusive_group(required=required)
    add_texts_options(parser, "your texts", target=source)
    source.add_argument("--task", help=f"every text of a catalog task: {', '.join(CATALOG)}")
    add_data_dir_option(parser)
    parser.add_argument("--max-texts", type=int, help="a seeded sample of at most N texts")
    return source
