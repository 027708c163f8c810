"""Named tasks: which files, which kind of task, which protocol and metric (data only)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from bertlens.errors import OptionError, did_you_mean, literal
from bertlens.tasks.kinds import TaskKind, task_kind


@dataclass(frozen=True)
class TaskSpec:
    """A named task. `splits` maps split name -> file under the data directory.

    With no 'test' split the task is scored by stratified k-fold cross-validation (tasks/fitted_folds.py: the
    default folds, lowered when the data cannot fill them, or the caller's).
    """

    name: str
    kind: TaskKind  # a name is resolved (tasks/kinds.py)
    file_format: str  # 'label_prefixed' ("LABEL text" lines), 'sts_csv' (s1,s2,score; no header), 'jsonl' (text,
    # label), 'beir' (a retrieval directory: corpus.jsonl, queries.jsonl, qrels/)
    splits: tuple[tuple[str, str], ...]
    description: str = ""
    encoding: str = "utf-8"  # MR, SUBJ and TREC train are Latin-1, as SentEval reads them

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", task_kind(self.kind))

    @property
    def metric(self) -> str:
        return self.kind.metric

    @property
    def uses_cv(self) -> bool:
        return "test" not in dict(self.splits)


CATALOG: dict[str, TaskSpec] = {
    spec.name: spec
    for spec in (
        TaskSpec(
            "sst2",
            "classification",
            "label_prefixed",
            (("train", "sst2/train.txt"), ("dev", "sst2/dev.txt"), ("test", "sst2/test.txt")),
            description="SST-2 binary sentiment (sentence level)",
        ),
        TaskSpec(
            "mr",
            "classification",
            "label_prefixed",
            (("all", "mr/rt-polarity.all"),),
            description="MR movie-review polarity, 10-fold CV",
            encoding="latin-1",
        ),
        TaskSpec(
            "subj",
            "classification",
            "label_prefixed",
            (("all", "subj/subj.all"),),
            description="SUBJ subjective vs objective, 10-fold CV",
            encoding="latin-1",
        ),
        TaskSpec(
            "trec",
            "classification",
            "label_prefixed",
            (("train", "trec/train.txt"), ("test", "trec/test.txt")),
            description="TREC question type (6 classes); dev carved from train",
            encoding="latin-1",
        ),
        TaskSpec(
            "stsb",
            "similarity",
            "sts_csv",
            (("train", "stsb/train.csv"), ("dev", "stsb/dev.csv"), ("test", "stsb/test.csv")),
            description="STS Benchmark sentence-pair similarity (0-5)",
        ),
        TaskSpec(
            "movie_reviews",
            "classification",
            "jsonl",
            (("all", "movie_reviews/reviews.jsonl"),),
            description="long movie reviews (about 750 words, most over 512 word pieces), polarity, 10-fold CV",
        ),
        TaskSpec(
            "cranfield",
            "retrieval",
            "beir",
            (("test", "retrieval/cranfield"),),
            description="Cranfield aeronautics abstracts: 1,400 documents, 225 queries, graded relevance",
        ),
        TaskSpec(
            "cisi",
            "retrieval",
            "beir",
            (("test", "retrieval/cisi"),),
            description="CISI library-science abstracts: 1,460 documents, 76 judged queries",
        ),
        TaskSpec(
            "npl",
            "retrieval",
            "beir",
            (("test", "retrieval/vaswani-npl"),),
            description="NPL (Vaswani) physics abstracts: 11,429 short documents, 93 queries",
        ),
    )
}


def get_task(name: str) -> TaskSpec:
    if name not in CATALOG:
        raise OptionError(
            f"unknown task '{literal(name)}': {literal(did_you_mean(name, CATALOG))}; or give your own file as {{data}} "
            "with its columns",
            "data",
        )
    return CATALOG[name]


def data_dir(explicit: str | os.PathLike | None = None) -> Path:
    """--data-dir, else $BERTLENS_DATA, else ../shared/data next to the current directory."""
    candidate = Path(explicit or os.environ.get("BERTLENS_DATA") or Path.cwd().parent / "shared" / "data")
    if not candidate.is_dir():
        raise OptionError(
            f"data directory {literal(candidate)} does not exist; set BERTLENS_DATA or pass {{data_dir}}", "data_dir"
        )
    return candidate
