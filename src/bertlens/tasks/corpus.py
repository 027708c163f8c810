"""A corpus to index: {document id: text}, in file order, from a BEIR directory, a table or a text file.

Ids are what search results name, so they are checked: none blank, none repeated. A text file's ids are its
line numbers; a table's come from `--id-col`, else from its line numbers too. Empty documents and rows without an
id stop the load with one line naming them, or are dropped and counted with `drop_invalid` (`--drop-invalid`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bertlens.errors import BertlensError, OptionError, literal
from bertlens.io.tables import TableSpec, first_lines, is_blank, iter_records, parse_column
from bertlens.tasks.retrieval import load_beir_corpus


@dataclass(frozen=True)
class Corpus:
    documents: dict[str, str]  # id -> text, in file order
    dropped: dict[str, int] = field(default_factory=dict)  # what drop_invalid removed, by reason

    def describe_dropped(self) -> str:
        return ", ".join(f"{count} {reason}" for reason, count in self.dropped.items())


def load_corpus(
    path: Path,
    text_col: str | None = None,
    id_col: str | None = None,
    encoding: str = "utf-8",
    *,
    drop_invalid: bool = False,
    sheet: str | int | None = None,
) -> Corpus:
    """Every document; one line naming the file and the rows for an empty text, an empty id (both dropped and
    counted with `drop_invalid`) or a repeated id (never dropped: which copy is meant is the user's to say)."""
    path = Path(path)
    if path.is_dir():
        if text_col is not None or id_col is not None:
            raise OptionError(f"{{text_col}} and {{id_col}} apply to tables; {literal(path)} is a BEIR directory "
                              "(corpus.jsonl)", "text_col", "id_col")  # fmt: skip
        return Corpus(*load_beir_corpus(path, drop_invalid=drop_invalid, encoding=encoding))
    records = _table_records(path, text_col, id_col, encoding, sheet)
    ids = [str(fields[1]).strip() if id_col is not None else str(line) for line, fields in records]
    texts = [fields[0] for _, fields in records]
    blank = {line for (line, _), text in zip(records, texts, strict=True) if is_blank(text)}
    missing = {line for (line, _), i in zip(records, ids, strict=True) if not i}
    hint = "remove them or pass {drop_invalid} to drop them"
    if blank and not drop_invalid:
        raise OptionError(
            f"{literal(path)}: {len(blank)} empty documents (lines {first_lines(sorted(blank))}); {hint}",
            "drop_invalid",
        )
    if missing and not drop_invalid:
        raise OptionError(
            f"{literal(path)}: {len(missing)} rows have an empty id (lines {first_lines(sorted(missing))}); {hint}",
            "drop_invalid",
        )
    kept = [
        (line, i, text) for (line, _), i, text in zip(records, ids, texts, strict=True) if line not in blank | missing
    ]
    if not kept:
        raise BertlensError(f"{path}: every document is empty or has no id; nothing to index")
    _check_unique(path, kept)
    dropped = {
        reason: n for reason, n in (("empty documents", len(blank)), ("rows without an id", len(missing - blank))) if n
    }
    return Corpus({i: text for _, i, text in kept}, dropped)


def _table_records(path: Path, text_col: str | None, id_col: str | None, encoding: str, sheet=None) -> list:
    if not path.exists():
        raise OptionError(f"{{data}} {literal(path)} does not exist; give a BEIR directory or a corpus file", "data")
    text_file = path.suffix == ".txt"
    if text_file and (text_col is not None or id_col is not None):
        raise OptionError(f"{literal(path)}: a .txt file has one document a line and no columns; leave out "
                          "{text_col} and {id_col}", "text_col", "id_col")  # fmt: skip
    if not text_file and text_col is None:
        raise OptionError(f"{literal(path)}: name the text column with {{text_col}} (and the ids with {{id_col}})",
                          "text_col", "id_col")  # fmt: skip
    columns = () if text_file else tuple(parse_column(c) for c in (text_col, id_col) if c is not None)
    records = list(iter_records(TableSpec(path, columns, encoding=encoding, sheet=sheet)))
    if not records:
        raise BertlensError(f"{path} holds no documents")
    return records


def _check_unique(path: Path, kept: list[tuple[int, str, str]]) -> None:
    repeated = [i for i, n in Counter(i for _, i, _ in kept).items() if n > 1]
    if repeated:
        lines = [line for line, i, _ in kept if i == repeated[0]]
        raise BertlensError(
            f"{path}: {len(repeated)} ids are repeated, e.g. '{repeated[0]}' on lines {first_lines(lines)}; "
            "give every document its own id"
        )
