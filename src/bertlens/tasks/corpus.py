"""A corpus to index: {document id: text}, in file order, from a BEIR directory, a table or a text file.

Ids are what search results name, so they are checked: none blank, none repeated. A text file's ids are its
line numbers; a table's come from `--id-col`, else from its line numbers too.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from bertlens.errors import BertlensError
from bertlens.io.tables import TableSpec, first_lines, is_blank, iter_records, parse_column
from bertlens.tasks.retrieval import load_beir_corpus


def load_corpus(
    path: Path, text_col: str | None = None, id_col: str | None = None, encoding: str = "utf-8"
) -> dict[str, str]:
    """{id: text} of every document; one line naming the file and the row for a blank text or a repeated id."""
    path = Path(path)
    if path.is_dir():
        if text_col is not None or id_col is not None:
            raise BertlensError(f"--text-col and --id-col apply to tables; {path} is a BEIR directory (corpus.jsonl)")
        return load_beir_corpus(path, encoding=encoding)
    if not path.exists():
        raise BertlensError(f"--data {path} does not exist; give a BEIR directory or a corpus file")
    text_file = path.suffix == ".txt"
    if text_file and (text_col is not None or id_col is not None):
        raise BertlensError(f"{path}: a .txt file has one document a line and no columns; drop --text-col/--id-col")
    if not text_file and text_col is None:
        raise BertlensError(f"{path}: name the text column with --text-col (and the ids with --id-col)")
    columns = () if text_file else tuple(parse_column(c) for c in (text_col, id_col) if c is not None)
    records = list(iter_records(TableSpec(path, columns, encoding=encoding)))
    if not records:
        raise BertlensError(f"{path} holds no documents")
    ids = [str(fields[1]).strip() if id_col is not None else str(line) for line, fields in records]
    texts = [fields[0] for _, fields in records]
    blank = [line for (line, _), text in zip(records, texts, strict=True) if is_blank(text)]
    if blank:
        raise BertlensError(f"{path}: {len(blank)} empty documents (lines {first_lines(blank)}); remove them")
    missing = [line for (line, _), i in zip(records, ids, strict=True) if not i]
    if missing:
        raise BertlensError(f"{path}: {len(missing)} rows have an empty id (lines {first_lines(missing)})")
    repeated = [i for i, n in Counter(ids).items() if n > 1]
    if repeated:
        lines = [line for (line, _), i in zip(records, ids, strict=True) if i == repeated[0]]
        raise BertlensError(
            f"{path}: {len(repeated)} ids are repeated, e.g. '{repeated[0]}' on lines {first_lines(lines)}; "
            "give every document its own id"
        )
    return dict(zip(ids, texts, strict=True))
