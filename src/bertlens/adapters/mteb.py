"""A recipe as an MTEB encoder, and STS-B from local files as an MTEB STS task (so MTEB runs offline).

`RecipeEncoder(recipe)` satisfies MTEB's encoder protocol (`encode(DataLoader, *, task_metadata,
hf_split, hf_subset, prompt_type)`): it gathers the batch texts and returns the recipe's vectors.
`local_sts_task(csv)` is an `AbsTaskSTS` whose test split is read from a headerless
`sentence1,sentence2,score` CSV (the layout of `$BERTLENS_DATA/stsb/test.csv`), scored 0-5 as
MTEB's STSBenchmark is. `mteb` is imported only when these are used (`pip install mteb`).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np

from bertlens.embedding.embedder import Embedder
from bertlens.embedding.protocol import TextEncoder
from bertlens.errors import BertlensError
from bertlens.representation.recipe import Recipe


def _mteb():
    try:
        import mteb
    except ImportError:
        raise BertlensError("the MTEB adapter needs the mteb package: pip install mteb") from None
    return mteb


def read_sts_csv(path: Path) -> dict[str, list]:
    """sentence1, sentence2, score columns of a headerless STS CSV; a bad score names its line."""
    columns: dict[str, list] = {"sentence1": [], "sentence2": [], "score": []}
    with open(path, newline="", encoding="utf-8") as handle:
        for line, row in enumerate(csv.reader(handle), start=1):
            try:
                score = float(row[2])
            except (IndexError, ValueError):
                raise BertlensError(f"{path}:{line}: expected sentence1,sentence2,score with a numeric score") from None
            if not np.isfinite(score) or not row[0].strip() or not row[1].strip():
                raise BertlensError(f"{path}:{line}: a blank sentence or a non-finite score")
            columns["sentence1"].append(row[0])
            columns["sentence2"].append(row[1])
            columns["score"].append(score)
    if len(columns["score"]) < 2:
        raise BertlensError(f"{path}: need at least 2 scored pairs")
    return columns


def local_sts_task(path: str | Path, name: str = "LocalSTSBenchmark"):
    """An MTEB STS task (test split) read from a local CSV, scored on a 0-5 scale like STSBenchmark."""
    _mteb()
    from datasets import Dataset, DatasetDict
    from mteb.abstasks.sts import AbsTaskSTS
    from mteb.abstasks.task_metadata import TaskMetadata

    path = Path(path)
    columns = read_sts_csv(path)

    class LocalSTS(AbsTaskSTS):
        metadata = TaskMetadata(
            type="STS",
            name=name,
            main_score="cosine_spearman",
            description=f"STS pairs read from {path} (offline)",
            reference="https://ixa2.si.ehu.eus/stswiki/index.php/STSbenchmark",
            dataset={"path": str(path), "revision": "local"},
            category="t2t",
            eval_splits=["test"],
            eval_langs=["eng-Latn"],
            date=("2017-01-01", "2017-12-31"),
            dialect=[],
            domains=[],
            task_subtypes=[],
            license="cc-by-sa-4.0",
            annotations_creators="human-annotated",
            modalities=["text"],
            sample_creation="found",
            bibtex_citation="",
        )
        min_score = 0
        max_score = 5

        def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
            self.dataset = DatasetDict({"test": Dataset.from_dict(columns)})
            self.data_loaded = True

    return LocalSTS()


def recipe_encoder(recipe: Recipe | TextEncoder, trust_remote_code: bool = False):
    """An MTEB encoder for a recipe (run with the PyTorch backend) or any `TextEncoder` (an ONNX export, ...):
    an `AbsEncoder` subclass, built when mteb is importable."""
    _mteb()
    from mteb.models.abs_encoder import AbsEncoder

    class RecipeEncoder(AbsEncoder):
        def __init__(self) -> None:
            self.model = Embedder(recipe, trust_remote_code=trust_remote_code) if isinstance(recipe, Recipe) else recipe

        def encode(self, inputs, *, task_metadata, hf_split, hf_subset, prompt_type=None, **kwargs) -> np.ndarray:
            texts = [text for batch in inputs for text in batch["text"]]
            return self.model.encode(texts)  # [n, D] in input order

    return RecipeEncoder()


def evaluate_sts(recipe: Recipe | TextEncoder, path: str | Path) -> float:
    """MTEB's cosine Spearman of the recipe on a local STS CSV (no results cache, no network)."""
    mteb = _mteb()
    result = mteb.evaluate(recipe_encoder(recipe), local_sts_task(path), cache=None, show_progress_bar=False)
    return float(result.task_results[0].scores["test"][0]["cosine_spearman"])
