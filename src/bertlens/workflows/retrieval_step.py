"""`recommend` on retrieval data: the representation (with prompts and long-document readings) from a retrieval
sweep, and frozen vs contrastively fine-tuned when the collection has training judgements.

Fine-tuning is the training loop's Contrastive objective on (query, relevant document) pairs of qrels/train.tsv
with in-batch negatives (as sentence-transformers' MultipleNegativesRankingLoss; Henderson et al. 2017), then
both models retrieve for the same test queries, compared by a paired bootstrap over those queries.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from bertlens.embedding.embedder import Embedder
from bertlens.embedding.prompted import with_role
from bertlens.experiments.contrastive import Examples, run_contrastive
from bertlens.experiments.sweep import SweepConfig, SweepResult, run_sweep
from bertlens.metrics.bootstrap import paired_difference
from bertlens.metrics.ranking import RANKING_METRICS, ranking_metrics, top_k, top_k_maxsim
from bertlens.probing.candidates import PromptSet
from bertlens.progress import Progress, silent
from bertlens.representation.recipe import Recipe
from bertlens.tasks.loaders import TaskData
from bertlens.tasks.retrieval import query_split
from bertlens.training.config import TrainConfig
from bertlens.workflows.decision import Budget, Decision

LONG_SHARE = 0.1  # documents over the limit above which the sweep also scores long-document readings
MAX_TRAIN_PAIRS = 4000
TRAIN = TrainConfig(epochs=1, batch_size=32, lr=3e-5, min_steps=20, patience=1)


def step_retrieval_representation(
    task: TaskData,
    model: str,
    cache_dir: Path,
    seed: int,
    over_limit: float,
    progress: Progress = silent,
    prompt_sets: tuple[PromptSet, ...] = (),
) -> tuple[Decision, Decision, Recipe, SweepResult]:
    """The retrieval sweep (long-document readings too when many documents are cut): the representation decision,
    the long-document decision, the recipe."""
    long_documents = over_limit >= LONG_SHARE
    config = SweepConfig(resamples=500, seed=seed, long_documents=long_documents, prompt_sets=prompt_sets)
    result = run_sweep(task, model, cache_dir=cache_dir, config=config, progress=progress)
    protocol = result.main
    names = [c.name for c in protocol.candidates]
    i = names.index(result.recommended.name)
    t = protocol.test
    tied = [n for n, flag in zip(names, t.tied_with_best, strict=True) if flag and n != names[i]]
    representation = Decision(
        "representation",
        f"use {result.recommended.name}",
        f"{result.recommended.name}: nDCG@10 {t.value[i]:.4f} [{t.low[i]:.4f}, {t.high[i]:.4f}] on {protocol.n_test} "
        f"test queries; tied with the best: {', '.join(tied[:6]) or 'none'}; {protocol.description}",
        "the candidate with the best nDCG@10 on the choosing queries (never the scoring ones)",
        "measured",
        ("bertlens embed TEXTS --recipe OUT/recipe.json --role document --out docs.npy",),
    )
    return representation, _long_document_decision(result, over_limit, long_documents), result.recipe, result


def _long_document_decision(result: SweepResult, over_limit: float, measured: bool) -> Decision:
    share = f"{100 * over_limit:.1f}% of the documents are over the model's limit"
    rule = f"documents are read whole when more than {100 * LONG_SHARE:.0f}% are cut and a reading beats truncation"
    if not measured:
        return Decision("long documents", "truncate at the limit (the default)", share, rule, "measured")
    protocol = result.main
    readings = {c.long_text: k for k, c in enumerate(protocol.candidates) if c.long_text}
    parts = [
        f"{name} {protocol.test.value[k]:.4f}" + (" (tied with the best)" if protocol.test.tied_with_best[k] else "")
        for name, k in readings.items()
    ]
    chosen = result.recommended.long_text or "head (truncation)"
    return Decision(
        "long documents",
        f"read documents as {chosen}",
        f"{share}; nDCG@10 on the test queries by reading: {', '.join(parts)}",
        rule + "; a maxp reading keeps one vector per chunk: deploy it with `bertlens index`, which stores the chunks",
        "measured",
    )


def _retrieve(recipe: Recipe, task: TaskData, rows: np.ndarray, judgements: list[dict[int, int]]) -> np.ndarray:
    """nDCG@10 per query [Q] of `recipe` (documents and queries with their prompts, a maxp recipe's documents as
    their chunks, each document scored by its best) over the whole corpus."""
    import torch

    collection = task.collection
    embedder = Embedder(recipe)
    documents, queries = list(collection.documents), [collection.queries[q] for q in rows]
    query_vectors = torch.nn.functional.normalize(
        torch.from_numpy(with_role(embedder, "query").encode(queries)), dim=1
    )  # [Q, D]
    reader = with_role(embedder, "document")
    if recipe.long_text_strategy is not None and recipe.long_text_strategy.per_piece:
        chunks = reader.embed_chunks(documents)
        owner = torch.from_numpy(chunks.owner.astype(np.int64))  # [C]
        chunk_vectors = torch.nn.functional.normalize(torch.from_numpy(chunks.vectors), dim=1)  # [C, D]
        _, ranked = top_k_maxsim(query_vectors, chunk_vectors, owner, len(documents))  # [Q, 100]
    else:
        document_vectors = torch.nn.functional.normalize(torch.from_numpy(reader.encode(documents)), dim=1)  # [N, D]
        _, ranked = top_k(query_vectors, document_vectors)  # [Q, 100]
    return ranking_metrics(ranked.numpy(), judgements)[RANKING_METRICS[0]]


def training_pairs(task: TaskData, recipe: Recipe, limit: int, seed: int) -> tuple[Examples, int]:
    """(query, relevant document) pairs of the training judgements, prompts applied, a seeded sample of `limit`;
    and how many training queries were left out because they are also judged for choosing or scoring (by row or by
    identical text): fine-tuning on them would score the model on queries it was trained on."""
    collection = task.collection
    held = {q for split, judged in collection.qrels.items() if split != "train" for q in judged}
    held_texts = {collection.queries[q] for q in held}
    train = collection.qrels["train"]
    kept = {q: judged for q, judged in train.items() if q not in held and collection.queries[q] not in held_texts}
    pairs = [
        (recipe.prompt("query") + collection.queries[q], recipe.prompt("document") + collection.documents[d])
        for q, judged in kept.items()
        for d, grade in judged.items()
        if grade >= 1
    ]
    examples = Examples([q for q, _ in pairs], [d for _, d in pairs], "qrels/train.tsv")
    return examples.sample(limit, seed), len(train) - len(kept)


def step_retrieval_fine_tune(
    task: TaskData, recipe: Recipe, out: Path, seed: int, budget: Budget, progress: Progress = silent
) -> Decision:
    """Frozen vs contrastively fine-tuned, measured on the test queries, when train qrels exist and time allows."""
    collection = task.collection
    rule = "with a few thousand judged pairs, contrastive fine-tuning usually helps in-domain retrieval"
    if "train" not in collection.qrels:
        return Decision(
            "frozen or fine-tuned",
            "frozen (no training judgements to fine-tune on)",
            "the collection has no qrels/train.tsv",
            rule,
            "rule of thumb: nothing to measure",
            (
                "bertlens contrastive --mode pairs --pairs PAIRS.csv --text-col query --text-col2 document "
                "--recipe OUT/recipe.json --out OUT/tuned",
            ),
        )
    split = query_split(collection, seed)
    examples, shared = training_pairs(task, recipe, MAX_TRAIN_PAIRS, seed)
    removed = (
        f"; {shared} training queries also judged in the test or dev qrels were left out of training (the gain is "
        "measured on them)"
        if shared
        else ""
    )
    if not examples.anchors:
        return Decision(
            "frozen or fine-tuned",
            "frozen (no training judgements left to fine-tune on)",
            f"every training query is also judged for testing or choosing{removed}",
            rule,
            "rule of thumb: nothing to measure",
        )
    start = time.perf_counter()
    frozen = _retrieve(recipe, task, split.test, list(split.test_judgements))
    encode_seconds = time.perf_counter() - start
    planned = encode_seconds * (1 + 6 * len(examples.anchors) / max(len(collection.documents), 1))  # train ~3x/text
    if planned > 0.85 * budget.left():
        return Decision(
            "frozen or fine-tuned",
            "frozen (fine-tuning not measured)",
            f"{len(examples.anchors)} training pairs; about {planned:.0f} s to fine-tune and re-encode, "
            f"{max(budget.left(), 0):.0f} s of the budget left{removed}",
            rule,
            "rule of thumb: over the time budget",
        )
    tuning = recipe.replace(postprocess=None)
    _, tuned_recipe = run_contrastive(examples, tuning, TRAIN, out / "contrastive", progress=progress)
    tuned = _retrieve(tuned_recipe, task, split.test, list(split.test_judgements))
    gain, low, high = paired_difference(np.stack([frozen, tuned]), None, RANKING_METRICS[0], resamples=1000, seed=seed)
    better = low > 0
    return Decision(
        "frozen or fine-tuned",
        "fine-tune (contrastive, in-batch negatives)" if better else "stay frozen",
        f"nDCG@10 on {len(split.test)} test queries: frozen {frozen.mean():.4f}, fine-tuned on "
        f"{len(examples.anchors)} train pairs {tuned.mean():.4f}; gain {gain:+.4f} [{low:+.4f}, {high:+.4f}] "
        f"(paired bootstrap over queries){removed}",
        "fine-tune when the paired interval of the gain is above 0",
        "measured",
        (f"bertlens embed TEXTS --model {tuned_recipe.model} --role document --out docs.npy",) if better else (),
        {"model": tuned_recipe.model, "postprocess": None} if better else {},
    )
