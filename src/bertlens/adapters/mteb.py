"""A recipe as an MTEB encoder, and local files as MTEB tasks (STS-B, any BEIR-layout collection), so MTEB runs
offline.

`recipe_encoder(recipe)` satisfies MTEB's encoder protocol (`encode(DataLoader, *, task_metadata,
hf_split, hf_subset, prompt_type)`): it gathers the batch texts and returns the recipe's vectors, queries
with the recipe's query prompt and documents with its document prompt (MTEB's `prompt_type`); its
`mteb_model_meta` carries the recipe (name, revision = recipe fingerprint, width, token limit).
`local_retrieval_task(dir)` is an `AbsTaskRetrieval` over a BEIR-layout directory.
`local_sts_task(csv)` is an `AbsTaskSTS` whose test split is read from a headerless
`sentence1,sentence2,score` CSV (the layout of `$BERTLENS_DATA/stsb/test.csv`), scored 0-5 as
MTEB's STSBenchmark is. `mteb` is imported only when these are used (`pip install 'bertlens[mteb]'`).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np

from bertlens.embedding.embedder import Embedder
from bertlens.embedding.prompted import with_role
from bertlens.embedding.protocol import TextEncoder
from bertlens.errors import BertlensError, did_you_mean
from bertlens.extras import require
from bertlens.representation.fingerprint import recipe_fingerprint
from bertlens.representation.recipe import ROLES, Recipe
from bertlens.tasks.retrieval import load_beir

# what every local task's TaskMetadata says the same way: English text, human judgements, found data
LOCAL_TASK = {
    "category": "t2t",
    "eval_langs": ["eng-Latn"],
    "dialect": [],
    "domains": [],
    "task_subtypes": [],
    "annotations_creators": "human-annotated",
    "modalities": ["text"],
    "sample_creation": "found",
    "bibtex_citation": "",
}


def _mteb():
    require("mteb", "the MTEB adapter (bertlens.adapters.mteb)")
    import mteb

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
            eval_splits=["test"],
            date=("2017-01-01", "2017-12-31"),
            license="cc-by-sa-4.0",
            **LOCAL_TASK,
        )
        min_score = 0
        max_score = 5

        def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
            self.dataset = DatasetDict({"test": Dataset.from_dict(columns)})
            self.data_loaded = True

    return LocalSTS()


# MTEB's abstract task of each kind it evaluates with a model fitted on the embeddings (mteb.abstasks): its type name,
# main score and label column
LABELLED_TASKS = {
    "regression": ("regression", "AbsTaskRegression", "Regression", "kendalltau"),
    "multi_label": ("multilabel_classification", "AbsTaskMultilabelClassification", "MultilabelClassification",
                    "accuracy"),
}  # fmt: skip


def local_labelled_task(kind: str, train: dict[str, list], test: dict[str, list], name: str = "LocalLabelled"):
    """An MTEB regression or multi-label task over in-memory splits ({'text': [...], 'label': [...]}: a number per text,
    or a list of labels), offline: MTEB's own evaluator (a linear regression; kNN on the embeddings) scores a recipe
    on it, as on its published tasks."""
    _mteb()
    import importlib

    from datasets import Dataset, DatasetDict
    from mteb.abstasks.task_metadata import TaskMetadata

    if kind not in LABELLED_TASKS:
        raise BertlensError(f"no MTEB task for kind '{kind}': {did_you_mean(kind, tuple(LABELLED_TASKS))}")
    module, base_name, task_type, main_score = LABELLED_TASKS[kind]
    base = getattr(importlib.import_module(f"mteb.abstasks.{module}"), base_name)

    class LocalLabelled(base):
        metadata = TaskMetadata(
            type=task_type,
            name=name,
            main_score=main_score,
            description=f"{kind} rows given in memory (offline)",
            reference="https://github.com/embeddings-benchmark/mteb",
            dataset={"path": name, "revision": "local"},
            eval_splits=["test"],
            date=("2020-01-01", "2020-12-31"),
            license="not specified",
            **{**LOCAL_TASK, "category": "t2c"},
        )
        label_column_name = "label"

        def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
            self.dataset = DatasetDict({"train": Dataset.from_dict(train), "test": Dataset.from_dict(test)})
            self.data_loaded = True

    return LocalLabelled()


def evaluate_labelled(recipe: Recipe | TextEncoder, kind: str, train: dict[str, list], test: dict[str, list]) -> dict:
    """MTEB's scores of the recipe on a local regression or multi-label task (no results cache, no network): for
    regression kendalltau, r2, rmse, ...; for multi-label accuracy, f1, lrap, ... (averaged over its experiments)."""
    mteb = _mteb()
    task = local_labelled_task(kind, train, test)
    result = mteb.evaluate(recipe_encoder(recipe), task, cache=None, show_progress_bar=False)
    return dict(result.task_results[0].scores["test"][0])


def model_meta(encoder: TextEncoder):
    """MTEB's `ModelMeta` for a recipe's encoder: named after the recipe's model, revision = the recipe fingerprint
    (model weights and every reading choice, representation/fingerprint.py), its width and token limit, cosine."""
    from mteb.models.model_meta import ModelMeta

    fingerprint = recipe_fingerprint(encoder.recipe, encoder.fingerprint)
    model = Path(str(encoder.recipe.model)).name or "default"
    multi_vector = bool(getattr(encoder, "multi_vector", False))
    return ModelMeta(
        loader=None,
        name=f"bertlens/{model}",
        revision=fingerprint,
        release_date=None,
        languages=None,
        n_parameters=None,
        memory_usage_mb=None,
        max_tokens=encoder.max_length,
        embed_dim=encoder.dim,
        license=None,
        open_weights=None,
        public_training_code=None,
        public_training_data=None,
        framework=["PyTorch"],
        similarity_fn_name="MaxSim" if multi_vector else "cosine",
        use_instructions=bool(encoder.recipe.query_prompt or encoder.recipe.document_prompt),
        training_datasets=None,
        model_type=["late-interaction"] if multi_vector else ["dense"],
    )


def _role(prompt_type) -> str | None:
    """MTEB's prompt type as a recipe role: queries read with the query prompt, documents with the document prompt
    (as `bertlens embed --role` does); None (STS, classification, ...) reads texts plainly."""
    value = getattr(prompt_type, "value", prompt_type)
    return value if value in ROLES else None


def recipe_encoder(recipe: Recipe | TextEncoder, trust_remote_code: bool = False):
    """An MTEB encoder for a recipe (run with the PyTorch backend) or any `TextEncoder` (an ONNX export, ...):
    an `AbsEncoder` subclass, built when mteb is importable. MTEB's `prompt_type` picks the recipe's role, so a
    recipe with query and document prompts embeds each side as bertlens does."""
    _mteb()
    from mteb.models.abs_encoder import AbsEncoder

    model = Embedder(recipe, trust_remote_code=trust_remote_code) if isinstance(recipe, Recipe) else recipe
    meta = model_meta(model)
    if getattr(model, "multi_vector", False):
        return _multi_vector_encoder(model, meta)

    class RecipeEncoder(AbsEncoder):
        mteb_model_meta = meta

        def __init__(self) -> None:
            self.model = model

        def encode(self, inputs, *, task_metadata, hf_split, hf_subset, prompt_type=None, **kwargs) -> np.ndarray:
            texts = [text for batch in inputs for text in batch["text"]]
            return with_role(self.model, _role(prompt_type)).encode(texts)  # [n, D] in input order

    return RecipeEncoder()


def _multi_vector_encoder(model: TextEncoder, meta):
    """A multi-vector recipe through MTEB's late-interaction interface (2.x: `MultiVectorSearchEncoderWrapper`,
    MaxSim scoring): each text is its kept tokens' vectors, queries read as the recipe reads queries."""
    import torch
    from mteb.models.abs_encoder import AbsEncoder
    from mteb.models.sentence_transformer_wrapper import MultiVectorSearchEncoderWrapper

    from bertlens.representation.late_interaction import PackedTokens, maxsim

    def packed(embeddings) -> PackedTokens:
        return PackedTokens.from_list([np.asarray(torch.as_tensor(e).float()) for e in embeddings])

    class RecipeMultiVectorEncoder(MultiVectorSearchEncoderWrapper, AbsEncoder):
        mteb_model_meta = meta

        def __init__(self) -> None:
            self.model = model

        def encode(self, inputs, *, task_metadata, hf_split, hf_subset, prompt_type=None, **kwargs) -> list:
            texts = [text for batch in inputs for text in batch["text"]]
            tokens = with_role(self.model, _role(prompt_type)).embed_tokens(texts)  # [T, D] with offsets
            return [torch.from_numpy(np.ascontiguousarray(tokens.of(i))) for i in range(tokens.texts)]

        _encode = encode  # what the late-interaction search calls

        def similarity(self, embeddings1, embeddings2) -> torch.Tensor:
            return torch.from_numpy(maxsim(packed(embeddings1), packed(embeddings2)))  # [Q, D]

    return RecipeMultiVectorEncoder()


def local_retrieval_task(directory: str | Path, split: str = "test", name: str = "LocalRetrieval"):
    """An MTEB retrieval task read from a local BEIR-layout directory (corpus.jsonl, queries.jsonl,
    qrels/SPLIT.tsv) through bertlens' own checked reader, so both score the same documents, queries and
    judgements (a document is its title and text joined, as both embed it)."""
    _mteb()
    from datasets import Dataset
    from mteb.abstasks.retrieval import AbsTaskRetrieval
    from mteb.abstasks.task_metadata import TaskMetadata

    directory = Path(directory)
    collection = load_beir(directory)
    if split not in collection.qrels:
        raise BertlensError(f"{directory}: no qrels/{split}.tsv; name a split it has: {', '.join(collection.qrels)}")
    judged = collection.judged(split)
    relevant = {
        collection.query_ids[q]: {collection.doc_ids[d]: int(g) for d, g in collection.qrels[split][q].items()}
        for q in judged
    }
    corpus = Dataset.from_dict({"id": list(collection.doc_ids), "text": list(collection.documents)})
    queries = Dataset.from_dict(
        {"id": [collection.query_ids[q] for q in judged], "text": [collection.queries[q] for q in judged]}
    )

    class LocalRetrieval(AbsTaskRetrieval):
        metadata = TaskMetadata(
            type="Retrieval",
            name=name,
            main_score="ndcg_at_10",
            description=f"a BEIR-layout collection read from {directory} (offline)",
            reference="https://github.com/beir-cellar/beir",
            dataset={"path": str(directory), "revision": "local"},
            eval_splits=[split],
            date=("2000-01-01", "2000-12-31"),
            license="not specified",
            **LOCAL_TASK,
        )

        def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
            self.dataset = {
                "default": {
                    split: {"corpus": corpus, "queries": queries, "relevant_docs": relevant, "top_ranked": None}
                }
            }
            self.data_loaded = True

    return LocalRetrieval()


def evaluate_retrieval(recipe: Recipe | TextEncoder, directory: str | Path, split: str = "test") -> float:
    """MTEB's nDCG@10 of the recipe on a local BEIR-layout collection (no results cache, no network)."""
    mteb = _mteb()
    task = local_retrieval_task(directory, split)
    result = mteb.evaluate(recipe_encoder(recipe), task, cache=None, show_progress_bar=False)
    return float(result.task_results[0].scores[split][0]["ndcg_at_10"])


def evaluate_sts(recipe: Recipe | TextEncoder, path: str | Path) -> float:
    """MTEB's cosine Spearman of the recipe on a local STS CSV (no results cache, no network)."""
    mteb = _mteb()
    result = mteb.evaluate(recipe_encoder(recipe), local_sts_task(path), cache=None, show_progress_bar=False)
    return float(result.task_results[0].scores["test"][0]["cosine_spearman"])
