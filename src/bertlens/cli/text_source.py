"""Where a command gets plain texts from: a file (--texts) or every text of a catalog task (--task)."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from bertlens.errors import BertlensError
from bertlens.io.tables import is_blank, parse_column, read_texts
from bertlens.tasks.catalog import CATALOG, data_dir, get_task
from bertlens.tasks.loaders import TaskData, load_catalog_task


def add_text_source(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--texts", type=Path, help=".txt (one text a line), .csv/.tsv (--column) or .jsonl (--field)")
    source.add_argument("--task", help=f"every text of a catalog task: {', '.join(CATALOG)}")
    parser.add_argument("--column", help="for --texts CSV/TSV/JSONL: the text column or field")
    parser.add_argument("--data-dir", help="where catalog tasks live (default $BERTLENS_DATA or ../shared/data)")
    parser.add_argument("--max-texts", type=int, help="a seeded sample of at most N texts")


def load_texts(args: argparse.Namespace, seed: int = 0) -> tuple[list[str], str, TaskData | None]:
    """(texts, a description of where they came from, the task when --task was used)."""
    if args.max_texts is not None and args.max_texts < 2:
        raise BertlensError("--max-texts must be at least 2")
    task = None
    if args.task:
        task = load_catalog_task(get_task(args.task), data_dir(args.data_dir))
        texts, source = task.all_texts(), f"task {args.task}"
    else:
        texts = [t for t in read_texts(args.texts, parse_column(args.column) if args.column else None) if not is_blank(t)]
        source = str(args.texts)
    if len(texts) < 2:
        raise BertlensError(f"{source}: need at least 2 non-empty texts, found {len(texts)}")
    if args.max_texts and len(texts) > args.max_texts:
        keep = np.sort(np.random.default_rng(seed).choice(len(texts), args.max_texts, replace=False))
        texts = [texts[i] for i in keep]
    return texts, source, task
