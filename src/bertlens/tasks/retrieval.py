"""Retrieval collections: a corpus, queries and relevance judgements (qrels), checked before anything is encoded.

Two sources: a BEIR-layout directory (`corpus.jsonl`, `queries.jsonl`, `qrels/{test,dev,train}.tsv`;
Thakur et al. 2021) and a table of (query, relevant document) pairs. Bad layouts (unknown ids in
qrels, duplicate ids, queries without judgements, empty documents) raise one line each, or are
counted and dropped with `drop_invalid`.
"""

from __future__ import annotations

import contextlib
import csv
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bertlens.errors import BertlensError, OptionError, literal
from bertlens.io.tables import TableSpec, first_lines, is_blank, iter_records

QRELS_SPLITS = ("test", "dev", "train")
Judgements = dict[int, dict[int, int]]  # query row -> {document row: relevance grade (> 0: relevant)}


@dataclass(frozen=True)
class Collection:
    """Documents and queries by row; qrels per split name ('test', and 'dev'/'train' when given)."""

    doc_ids: tuple[str, ...]
    documents: tuple[str, ...]  # title and text joined, as BEIR and MTEB embed them
    query_ids: tuple[str, ...]
    queries: tuple[str, ...]
    qrels: dict[str, Judgements]
    dropped: dict[str, int] = field(default_factory=dict)  # what --drop-invalid removed, by reason

    def judged(self, split: str) -> np.ndarray:
        """Query rows with at least one judgement in `split`, ascending."""
        return np.array(sorted(self.qrels.get(split, {})), dtype=np.int64)

    def describe(self) -> str:
        judged = {split: len(q) for split, q in self.qrels.items()}
        return (
            f"{len(self.documents)} documents, {len(self.queries)} queries "
            f"({', '.join(f'{n} judged in {split}' for split, n in judged.items())})"
        )


def document_text(title: str, text: str) -> str:
    """BEIR's convention: the title, a space, the text (either may be empty)."""
    return f"{title} {text}".strip()


def _reading(encoding: str) -> str:
    """UTF-8 read as 'utf-8-sig': a byte-order mark before the first line is not part of the data."""
    return "utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding


@contextlib.contextmanager
def _decoding(path: Path, encoding: str):
    """A file that is not text in `encoding` is one line naming the file and the byte, not a traceback."""
    try:
        yield
    except UnicodeDecodeError as exc:
        raise BertlensError(
            f"{path}: not {encoding} text (byte {exc.start}: {exc.object[exc.start : exc.start + 1]!r}); give "
            "--encoding (e.g. latin-1) or save the file as UTF-8"
        ) from None


def _jsonl_rows(path: Path, fields: tuple[str, ...], encoding: str = "utf-8") -> list[tuple[int, dict]]:
    if not path.is_file():
        raise BertlensError(
            f"{path} does not exist; a BEIR directory has corpus.jsonl, queries.jsonl and qrels/test.tsv"
        )
    rows = []
    with _decoding(path, encoding), open(path, encoding=_reading(encoding)) as handle:
        for line, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise BertlensError(f"{path}:{line}: not valid JSON ({exc.msg})") from None
            if not isinstance(record, dict) or "_id" not in record:
                raise BertlensError(f"{path}:{line}: a record needs an '_id' field (and {', '.join(fields)})")
            rows.append((line, record))
    return rows


def _unique_ids(path: Path, rows: list[tuple[int, dict]]) -> None:
    counts = Counter(str(record["_id"]) for _, record in rows)
    repeated = [i for i, n in counts.items() if n > 1]
    if repeated:
        lines = [line for line, record in rows if str(record["_id"]) == repeated[0]]
        raise BertlensError(
            f"{path}: {len(repeated)} duplicate _id values, e.g. '{repeated[0]}' on lines {first_lines(lines)}; "
            "give every record its own _id"
        )


def _qrels(path: Path, encoding: str = "utf-8") -> list[tuple[int, str, str, int]]:
    """(line, query id, document id, grade) from a BEIR qrels TSV (header `query-id corpus-id score`)."""
    rows = []
    with _decoding(path, encoding), open(path, encoding=_reading(encoding), newline="") as handle:
        for line, row in enumerate(csv.reader(handle, delimiter="\t"), start=1):
            if not row or (line == 1 and row[0].strip().lower() in ("query-id", "query_id", "qid")):
                continue
            if len(row) == 4:
                raise BertlensError(
                    f"{path}:{line}: 4 tab-separated fields {row}: this looks like TREC qrels (query-id iteration "
                    "doc-id relevance); BEIR's have 3 (query-id corpus-id score): drop the second column"
                )
            if len(row) < 3:
                raise BertlensError(f"{path}:{line}: expected 3 tab-separated fields (query-id corpus-id score)")
            try:
                grade = int(row[2])
            except ValueError:
                raise BertlensError(
                    f"{path}:{line}: relevance '{row[2]}' is not an integer grade (0 = not relevant, 1 or more = relevant)"
                ) from None
            rows.append((line, row[0].strip(), row[1].strip(), grade))
    return rows


class _Problems:
    """Bad layout findings: raised as one line each, or counted when dropping."""

    def __init__(self, drop: bool) -> None:
        self.drop, self.dropped = drop, Counter()

    def found(self, reason: str, count: int, message: str) -> None:
        if not count:
            return
        if not self.drop:
            raise OptionError(
                literal(message) + "; fix the collection or pass {drop_invalid} to drop them", "drop_invalid"
            )
        self.dropped[reason] += count


def load_beir(directory: Path, *, drop_invalid: bool = False, encoding: str = "utf-8") -> Collection:
    """A BEIR-layout directory; every id, judgement and document checked (see the module docstring)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise BertlensError(f"{directory} is not a directory; a retrieval task needs a BEIR layout directory")
    problems = _Problems(drop_invalid)
    documents = _corpus(directory, problems, encoding)
    query_rows = _jsonl_rows(directory / "queries.jsonl", ("text",), encoding)
    if not query_rows:
        raise BertlensError(f"{directory}/queries.jsonl holds no queries")
    _unique_ids(directory / "queries.jsonl", query_rows)
    splits = {s: directory / "qrels" / f"{s}.tsv" for s in QRELS_SPLITS if (directory / "qrels" / f"{s}.tsv").is_file()}
    if "test" not in splits:
        raise BertlensError(f"{directory}/qrels/test.tsv does not exist; it holds the judgements the sweep scores on")
    queries = {str(r["_id"]): str(r.get("text") or "") for _, r in query_rows}
    blank = [line for line, r in query_rows if is_blank(queries[str(r["_id"])])]
    problems.found(
        "empty queries",
        len(blank),
        f"{directory}/queries.jsonl: {len(blank)} queries are empty (lines {first_lines(blank)})",
    )
    queries = {i: text for i, text in queries.items() if not is_blank(text)}
    judgements = {split: _checked_qrels(path, documents, queries, problems, encoding) for split, path in splits.items()}
    return _collection(documents, queries, judgements, problems, f"{directory}/queries.jsonl")


def load_beir_corpus(
    directory: Path, *, drop_invalid: bool = False, encoding: str = "utf-8"
) -> tuple[dict[str, str], dict[str, int]]:
    """A BEIR directory's documents only ({id: title and text joined}, in file order) and what `drop_invalid`
    dropped ({reason: count}): what `index` embeds; queries and qrels are not needed to index a corpus."""
    directory = Path(directory)
    if not directory.is_dir():
        raise BertlensError(f"{directory} is not a directory; give a BEIR layout directory (corpus.jsonl)")
    problems = _Problems(drop_invalid)
    documents = _corpus(directory, problems, encoding)
    return documents, dict(problems.dropped)


def _corpus(directory: Path, problems: _Problems, encoding: str) -> dict[str, str]:
    corpus_rows = _jsonl_rows(directory / "corpus.jsonl", ("title", "text"), encoding)
    if not corpus_rows:
        raise BertlensError(f"{directory}/corpus.jsonl holds no documents; a retrieval task needs a corpus")
    _unique_ids(directory / "corpus.jsonl", corpus_rows)
    documents = {
        str(r["_id"]): document_text(str(r.get("title") or ""), str(r.get("text") or "")) for _, r in corpus_rows
    }
    empty = [line for line, r in corpus_rows if is_blank(documents[str(r["_id"])])]
    problems.found(
        "empty documents",
        len(empty),
        f"{directory}/corpus.jsonl: {len(empty)} documents have an empty title and text (lines {first_lines(empty)})",
    )
    return {i: text for i, text in documents.items() if not is_blank(text)}


def _checked_qrels(
    path: Path, documents: dict, queries: dict, problems: _Problems, encoding: str = "utf-8"
) -> list[tuple[str, str, float]]:
    rows = _qrels(path, encoding)
    if not rows:
        raise BertlensError(
            f"{path} holds no judgements (only a header, or nothing); add query-id corpus-id score rows"
        )
    unknown_query = [(line, q) for line, q, _, _ in rows if q not in queries]
    problems.found(
        "judgements of unknown queries",
        len(unknown_query),
        f"{path}: {len(unknown_query)} judgements name a query id that queries.jsonl lacks (e.g. "
        f"'{unknown_query[0][1] if unknown_query else ''}'; lines {first_lines([n for n, _ in unknown_query])})",
    )
    unknown_doc = [(line, d) for line, q, d, _ in rows if q in queries and d not in documents]
    problems.found(
        "judgements of unknown documents",
        len(unknown_doc),
        f"{path}: {len(unknown_doc)} judgements name a document id that corpus.jsonl lacks (e.g. "
        f"'{unknown_doc[0][1] if unknown_doc else ''}'; lines {first_lines([n for n, _ in unknown_doc])})",
    )
    seen: dict[tuple[str, str], int] = {}
    for line, q, d, _ in rows:
        if (q, d) in seen:
            raise BertlensError(
                f"{path}:{line}: query '{q}' and document '{d}' are judged twice (first on line {seen[q, d]})"
            )
        seen[q, d] = line
    return [(q, d, grade) for _, q, d, grade in rows if q in queries and d in documents]


def _collection(documents: dict, queries: dict, judgements: dict, problems: _Problems, where: str) -> Collection:
    """Rows from ids; queries that no split judges (or that judge nothing relevant) are left out and counted, as
    BEIR and MTEB leave them out (a collection kept with only qrels/test.tsv lists every query of the others)."""
    if len(documents) < 2:
        raise BertlensError(
            f"{where}: the corpus has {len(documents)} document; ranking needs at least 2 (a useful sweep, hundreds)"
        )
    relevant = {q for rows in judgements.values() for q, _, grade in rows if grade > 0}
    unjudged = [q for q in queries if q not in relevant]
    if unjudged:
        problems.dropped["queries without a relevant judgement (ignored, as BEIR and MTEB do)"] += len(unjudged)
    doc_ids, query_ids = tuple(documents), tuple(q for q in queries if q in relevant)
    doc_row, query_row = {d: i for i, d in enumerate(doc_ids)}, {q: i for i, q in enumerate(query_ids)}
    qrels: dict[str, Judgements] = {}
    for split, rows in judgements.items():
        table: Judgements = {}
        for q, d, grade in rows:
            table.setdefault(query_row[q], {})[doc_row[d]] = grade
        qrels[split] = {q: docs for q, docs in table.items() if any(g > 0 for g in docs.values())}
    if not qrels["test"]:
        raise BertlensError(f"{where}: no query has a relevant document in the test judgements")
    return Collection(
        doc_ids,
        tuple(documents[d] for d in doc_ids),
        query_ids,
        tuple(queries[q] for q in query_ids),
        qrels,
        dict(problems.dropped),
    )


def load_pairs(
    path: Path,
    query_col,
    document_col,
    *,
    header: bool = True,
    drop_invalid: bool = False,
    encoding: str = "utf-8",
    sheet: str | int | None = None,
) -> Collection:
    """A table of (query, relevant document) rows: the corpus is every distinct document, each query's
    relevant set the documents it is paired with (grade 1). Scored on every query (no dev split)."""
    spec = TableSpec(Path(path), (query_col, document_col), header, encoding, texts=2, sheet=sheet)
    problems = _Problems(drop_invalid)
    rows = list(iter_records(spec))
    blank = [line for line, (q, d) in rows if is_blank(q) or is_blank(d)]
    problems.found(
        "rows with a blank query or document",
        len(blank),
        f"{path}: {len(blank)} rows have a blank query or document (lines {first_lines(blank)})",
    )
    documents: dict[str, str] = {}
    queries: dict[str, str] = {}
    judged = []
    for _, (q, d) in rows:
        if is_blank(q) or is_blank(d):
            continue
        documents.setdefault(d, d)
        queries.setdefault(q, q)
        judged.append((q, d, 1))
    if not judged:
        raise BertlensError(f"{path}: no (query, document) row left")
    return _collection(documents, queries, {"test": list(dict.fromkeys(judged))}, problems, str(path))


@dataclass(frozen=True)
class QuerySplit:
    """Which judged queries choose (dev) and which score (test), with each one's judgements."""

    dev: np.ndarray  # [Q_dev] query rows
    test: np.ndarray  # [Q_test] query rows
    dev_judgements: tuple[dict[int, int], ...]
    test_judgements: tuple[dict[int, int], ...]
    description: str


def query_split(collection: Collection, seed: int = 0) -> QuerySplit:
    """The dev qrels choose when given (queries also judged in test are left out of dev); otherwise a
    seeded half of the test-judged queries chooses and the other half scores."""
    test = collection.judged("test")
    if "dev" in collection.qrels and len(np.setdiff1d(collection.judged("dev"), test)):
        dev = np.setdiff1d(collection.judged("dev"), test)
        dev_qrels, description = collection.qrels["dev"], f"the dev qrels' {len(dev)} queries chose"
    else:
        if len(test) < 4:
            raise BertlensError(
                f"{len(test)} judged queries: a retrieval sweep needs at least 4 (half choose, half score); "
                "add judged queries or give qrels/dev.tsv"
            )
        order = np.random.default_rng(seed).permutation(test)
        dev, test = np.sort(order[: len(order) // 2]), np.sort(order[len(order) // 2 :])
        dev_qrels = collection.qrels["test"]
        description = (
            f"no dev qrels: a seeded half of the judged queries ({len(dev)}) chose, the other half ({len(test)}) scores"
        )
    return QuerySplit(
        dev,
        test,
        tuple(dev_qrels[q] for q in dev),
        tuple(collection.qrels["test"][q] for q in test),
        description,
    )
