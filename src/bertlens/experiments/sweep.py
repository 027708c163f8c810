"""The sweep: one feature bank, every candidate, every protocol, honest intervals, one recommendation."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from bertlens.encoding.encoder import Encoder
from bertlens.errors import BertlensError, did_you_mean
from bertlens.features.bank import DEFAULT_POOLERS, Bank, build_bank
from bertlens.features.views import BankOptions, build_views, view_rows
from bertlens.io.cache import default_cache_dir
from bertlens.io.memory import release_freed_memory
from bertlens.metrics.bootstrap import (
    Intervals,
    bootstrap,
    bootstrap_with_extra,
    intervals_from_samples,
    point_estimates,
    spearman,
)
from bertlens.metrics.geometry import row_cosine
from bertlens.metrics.ranking import RANKING_METRICS
from bertlens.probing.candidates import LIMITATIONS, Candidate, PromptSet, candidate_features, enumerate_candidates
from bertlens.probing.clustering import SUBSAMPLE_SIZE, SUBSAMPLES, v_measures
from bertlens.probing.cores import map_on_cores
from bertlens.probing.few_labels import classification_chooser, similarity_chooser
from bertlens.probing.fold_ridge import ALPHA_GRID, ridge_over_folds
from bertlens.probing.label_free import SUBSAMPLE_SIZE as LF_SUBSAMPLE_SIZE
from bertlens.probing.label_free import SUBSAMPLES as LF_SUBSAMPLES
from bertlens.probing.label_free import LabelFreeScores, score_label_free, view_count
from bertlens.probing.label_trust import Trust, label_free_trust, last_layer_default, settle
from bertlens.probing.retrieval import LATE_CHUNK, RetrievalSweep, sweep_retrieval
from bertlens.probing.scalar_mix_fit import fit_classification_mix, fit_similarity_mix
from bertlens.probing.screened_probe import LOGISTIC, MAX_CONTENDERS, screened_probe
from bertlens.probing.selection import C_GRID
from bertlens.probing.truncation import retrieval_loss, similarity_loss
from bertlens.progress import Progress, silent
from bertlens.representation.pairs import pair_features, pair_width
from bertlens.representation.postprocess import PostProcessor, parse_steps
from bertlens.representation.recipe import Recipe
from bertlens.tasks.loaders import TEXTS_KIND, TaskData, texts_task
from bertlens.tasks.retrieval import query_split
from bertlens.tasks.splits import DEV_FRACTION, Fold, make_folds

RECIPE_PROBES = (
    LOGISTIC,
    "cosine",
    "label_free",
)  # what a recommendation may rest on (not a ridge screen, not a maxsim reading)
MIX_EXAMPLES = 1000  # training rows (a seeded sample) used to learn a classification ScalarMix


@dataclass(frozen=True)
class SweepConfig:
    poolers: tuple[str, ...] = DEFAULT_POOLERS
    layers: tuple[int, ...] | None = None
    seed: int = 0
    strengths: tuple[float, ...] = C_GRID  # logistic C grid
    alphas: tuple[float, ...] = ALPHA_GRID  # ridge grid
    resamples: int = 1000
    dev_fraction: float = DEV_FRACTION
    bank_dtype: str = "float16"
    postprocess: str | None = None  # similarity tasks: also score every candidate with these steps (fitted on train);
    # retrieval: fitted on the corpus, 'whiten' unless given
    protocols: tuple[str, ...] | None = None  # None: every protocol the task supports (similarity: cosine, probe)
    prompt_sets: tuple[PromptSet, ...] = ()  # retrieval: also score every candidate with each prompt set
    long_documents: bool = False  # retrieval: also score ways of reading long documents (a pass per way of cutting)


@dataclass(frozen=True)
class ProtocolResult:
    protocol: str
    metric: str
    candidates: tuple[Candidate, ...]
    validation: np.ndarray  # [C] score used for selection (dev, inner dev, or mean over folds)
    test: Intervals
    n_test: int
    mix_weights: dict[str, tuple[float, ...]]
    description: str
    folds: int = 1  # > 1: scores are out-of-fold (cross-validation), not a test split
    selection: Intervals | None = None  # cross-validation: the choice itself, made per fold on inner dev (nested)
    selected: tuple[str, ...] = ()  # the candidate each fold chose
    scored_by: tuple[str, ...] = ()  # per candidate, the probe behind its figures when they differ (screened probe)
    seconds: dict[str, float] = field(default_factory=dict)  # wall time of the protocol's stages
    split_name: str = ""  # where the scores come from, when neither a test split nor out-of-fold (clustering)
    outputs: np.ndarray | None = field(default=None, repr=False)  # [C, n] per-example outputs the intervals came from
    gold: np.ndarray | None = field(default=None, repr=False)  # [n] their targets (None: per-example scores)

    @property
    def split(self) -> str:
        """Where the scores come from: 'test', or 'cv10' for 10-fold out-of-fold scores."""
        return self.split_name or (f"cv{self.folds}" if self.folds > 1 else "test")


def main_protocol(kind: str) -> str:
    """Similarity and retrieval are judged by cosine (how their vectors are used), texts without labels by the
    label-free score, the others by the linear probe."""
    if kind == TEXTS_KIND:
        return "label_free"
    return "cosine" if kind in ("similarity", "retrieval") else "probe"


def protocol_key(metric: str) -> str:
    """A retrieval sweep's protocols: 'cosine' for nDCG@10 (the main one), 'cosine-<metric>' for the others."""
    return "cosine" if metric == RANKING_METRICS[0] else f"cosine-{metric}"


@dataclass(frozen=True)
class SweepResult:
    task: str
    kind: str
    model: str
    fingerprint: str
    seed: int
    protocols: dict[str, ProtocolResult]
    recommended: Candidate
    recipe: Recipe
    basis: str
    disagreement: str | None
    timings: dict[str, float]
    notes: tuple[str, ...] = field(default_factory=tuple)
    postprocessor: PostProcessor | None = None  # fitted for the recommended candidate, when it has one
    label_free: LabelFreeScores | None = None  # every label-free component, when the label_free protocol ran
    trust: Trust | None = None  # a labelled task: how far the label-free pick can be trusted on it

    @property
    def main(self) -> ProtocolResult:
        """The protocol the recommendation is made by."""
        return self.protocols[main_protocol(self.kind)]


@dataclass(frozen=True)
class _Examples:
    a: np.ndarray  # [n] bank row of the first text
    b: np.ndarray | None  # [n] bank row of the second text
    targets: np.ndarray  # [n]


def _examples(task: TaskData, index: dict[str, int]) -> tuple[_Examples, dict[str, np.ndarray]]:
    """Stack every split into one table; returns it and each split's row indices."""
    a, b, targets, where, start = [], [], [], {}, 0
    for name, split in task.splits.items():
        a += [index[t] for t in split.texts_a]
        if split.texts_b is not None:
            b += [index[t] for t in split.texts_b]
        targets.append(split.targets)
        where[name] = np.arange(start, start + len(split))
        start += len(split)
    return _Examples(np.array(a), np.array(b) if b else None, np.concatenate(targets)), where


def sweep_folds(task: TaskData, targets: np.ndarray, where: dict[str, np.ndarray], config: SweepConfig) -> list[Fold]:
    """The task's own splits (dev carved when missing), or k-fold CV when it has no test split."""
    return make_folds(
        where,
        targets,
        stratify=task.kind != "similarity",
        cv_folds=task.folds if task.uses_cv else None,
        seed=config.seed,
        dev_fraction=config.dev_fraction,
    )


def _groups(candidates: list[Candidate], bank: Bank) -> dict[int, list[int]]:
    """Candidate indices grouped by feature width (so each group stacks into one tensor)."""
    groups: dict[int, list[int]] = {}
    for i, candidate in enumerate(candidates):
        groups.setdefault(candidate.width(bank.width), []).append(i)
    return groups


def _pair_features(
    bank: Bank, candidate: Candidate, ex: _Examples, rows: np.ndarray, kind: str, mix_weights: np.ndarray | None = None
) -> np.ndarray:
    u = candidate_features(bank, candidate, ex.a[rows], mix_weights)
    v = candidate_features(bank, candidate, ex.b[rows], mix_weights) if ex.b is not None else None
    return pair_features(u, v, kind)


def _stack(bank, candidates, ids, ex, rows, kind, mixes: dict | None = None) -> torch.Tensor:
    """Features of candidates `ids` for `rows`, filled into one preallocated tensor [C, n, D]."""
    mixes = mixes or {}
    out = None
    for j, i in enumerate(ids):
        features = _pair_features(bank, candidates[i], ex, rows, kind, mixes.get(candidates[i].name))  # [n, D]
        if out is None:
            out = np.empty((len(ids), *features.shape), dtype=np.float32)
        out[j] = features
    return torch.from_numpy(out)


def _probe_classification(bank, candidates, ex, folds, kind, config, progress: Progress = silent):
    """Out-of-fold test predictions [C, n_test], dev accuracy per fold [F, C], ScalarMix weights, and which
    probe scored each candidate (a ridge screen of all, logistic probes for the contenders: screened_probe).

    ScalarMix weights are learned first (per fold, on a sample of the training rows); the mixed
    vectors then join every other candidate.
    """
    rng = np.random.default_rng(config.seed)
    samples = [np.sort(rng.choice(len(f.train), min(len(f.train), MIX_EXAMPLES), replace=False)) for f in folds]
    mixed = [c for c in candidates if c.mixer == "scalar_mix"]

    def fit(job: tuple[int, Candidate]) -> np.ndarray:
        k, c = job
        rows = folds[k].train[samples[k]]
        return fit_classification_mix(bank.pooled(c.pooler, c.layers, ex.a[rows]), ex.targets[rows])

    jobs = [(k, c) for k in range(len(folds)) for c in mixed]
    learned_weights = iter(map_on_cores(fit, jobs))
    per_fold_mixes = [{c.name: next(learned_weights) for c in mixed} for _ in folds]
    every_row = np.arange(len(ex.targets))

    def source(ids: list[int], rows: np.ndarray | None, k: int) -> torch.Tensor:
        return _stack(bank, candidates, ids, ex, every_row if rows is None else rows, kind, per_fold_mixes[k])

    default = last_layer_default([c.name for c in candidates], bank.num_layers)
    scores = screened_probe(
        source,
        [c.width(bank.width) if ex.b is None else pair_width(c.width(bank.width), kind) for c in candidates],
        {i for i, c in enumerate(candidates) if c.mixer == "scalar_mix"},
        folds,
        ex.targets,
        config.strengths,
        progress,
        always=tuple(i for i, c in enumerate(candidates) if c.name == default),
    )
    learned: dict[str, list] = {}
    for mixes in per_fold_mixes:
        for name, weights in mixes.items():
            learned.setdefault(name, []).append(weights)
    mix_weights = {name: tuple(float(x) for x in np.mean(ws, axis=0)) for name, ws in learned.items()}
    return scores.predictions, scores.per_fold, mix_weights, scores


def _all_rows(folds: list[Fold]) -> np.ndarray:
    return np.unique(np.concatenate([np.concatenate([f.train, f.dev, f.test]) for f in folds]))


def _cosine(bank, candidates, ex, folds, config, fitted: dict | None = None) -> tuple[np.ndarray, np.ndarray, dict]:
    """Cosine similarity per test pair [C, n_test]; dev Spearman per fold [F, C]; ScalarMix learned on train pairs.

    Everything learned is fitted inside each fold on that fold's training pairs only: a ScalarMix
    (to make cosine track the gold score) and post-processing (on the vectors of both sides of the
    training pairs). The recipe then gets them fitted on all rows it may use: the training pairs
    with given splits; every row under cross-validation (mix weights: the mean over folds).
    Fitted processors for the recipe are left in `fitted` by name.
    """
    scores = np.zeros((len(candidates), sum(len(f.test) for f in folds)))
    per_fold = np.zeros((len(folds), len(candidates)))
    mix_weights = {}
    for i, candidate in enumerate(candidates):
        offset, learned = 0, []
        if candidate.mixer == "scalar_mix":  # one fit per fold, independent: run them on every core

            def fit(fold: Fold, c: Candidate = candidate) -> np.ndarray:
                u, v = (bank.pooled(c.pooler, c.layers, side[fold.train]) for side in (ex.a, ex.b))
                return fit_similarity_mix(u, v, ex.targets[fold.train], seed=config.seed)

            learned = map_on_cores(fit, folds)
        for k, fold in enumerate(folds):
            mix = learned[k] if learned else None
            transform = _fit_post(bank, candidate, np.concatenate([ex.a[fold.train], ex.b[fold.train]]))
            if transform is None:  # e.g. constant vectors ([CLS] at layer 0): the candidate is undefined
                scores[i], per_fold[:, i] = np.nan, np.nan
                break

            def feats(rows, side, c=candidate, t=transform, m=mix):
                return t(candidate_features(bank, c, side[rows], m))

            scores[i, offset : offset + len(fold.test)] = row_cosine(feats(fold.test, ex.a), feats(fold.test, ex.b))
            per_fold[k, i] = spearman(row_cosine(feats(fold.dev, ex.a), feats(fold.dev, ex.b)), ex.targets[fold.dev])
            offset += len(fold.test)
        if learned:
            mix_weights[candidate.name] = tuple(float(x) for x in np.mean(learned, axis=0))
        if candidate.post and fitted is not None and np.isfinite(per_fold[:, i]).all():
            recipe_rows = folds[0].train if len(folds) == 1 else _all_rows(folds)
            processor = _fit_post(
                bank, candidate, np.concatenate([ex.a[recipe_rows], ex.b[recipe_rows]]), processor=True
            )
            if processor is not None:
                fitted[candidate.name] = processor
    return scores, per_fold, mix_weights


def _fit_post(bank: Bank, candidate: Candidate, text_rows: np.ndarray, processor: bool = False):
    """The candidate's post-processing fitted on the given texts' vectors: a transform (identity without
    post-processing), the PostProcessor itself when `processor`, or None when it cannot be fitted."""
    if not candidate.post:
        return (lambda x: x) if not processor else None
    try:
        fitted = PostProcessor.fit(
            parse_steps(candidate.post), candidate_features(bank, candidate, np.unique(text_rows))
        )
    except BertlensError:
        return None
    return fitted if processor else fitted.transform


RIDGE_BYTES = 256 * 2**20  # pair features per batch of ridge fits; each fit is independent, so this only bounds memory


def _probe_similarity(bank, candidates, ex, folds, config) -> tuple[np.ndarray, np.ndarray, dict]:
    """Ridge on (|u-v|, u*v) -> predicted score per test pair [C, n_test]; dev Spearman per fold [F, C].

    Every fold's fit comes from one pass over the pairs (probing/fold_ridge.py: the training rows'
    sufficient statistics are the whole table's minus the held-out rows'), alpha chosen on dev Spearman.
    """
    outputs = np.zeros((len(candidates), sum(len(f.test) for f in folds)))
    per_fold = np.zeros((len(folds), len(candidates)))
    every_row = np.arange(len(ex.targets))
    chunks = []
    for width, ids in _groups(candidates, bank).items():
        size = max(1, RIDGE_BYTES // (len(every_row) * pair_width(width, "similarity") * 4))  # float32, per batch
        chunks += [ids[s : s + size] for s in range(0, len(ids), size)]
    dev_rho = {}  # the last fold's dev Spearman [C, A], kept by choose()

    def choose(dev: torch.Tensor, rows: np.ndarray) -> np.ndarray:
        dev_rho["last"] = spearman(dev[..., 0].numpy(), ex.targets[rows][None, None])  # [C, A]
        return np.nanargmax(np.nan_to_num(dev_rho["last"], nan=-2), axis=1)

    for ids in chunks:
        features = _stack(bank, candidates, ids, ex, every_row, "similarity")  # [C, N, 2H]
        offset = 0
        for k, (fold, out) in enumerate(
            zip(folds, ridge_over_folds(features, ex.targets, folds, config.alphas, choose))
        ):
            picks = dev_rho["last"][np.arange(len(ids)), out.chosen]  # [C]
            outputs[ids, offset : offset + len(fold.test)] = out.test[..., 0].numpy()
            per_fold[k, ids] = picks
            offset += len(fold.test)
    return outputs, per_fold, {}


def _mean_over_folds(per_fold: np.ndarray) -> np.ndarray:
    """[F, C] -> [C], summed fold by fold (the order the published figures used)."""
    validation = np.zeros(per_fold.shape[1])
    for row in per_fold:
        validation += row / len(per_fold)
    return validation


def _rank(validation: np.ndarray, test_value: np.ndarray, candidates, width: int, scored_by=()) -> list[int]:
    """Candidates with a defined score, best validation first; ties: fewer dimensions, then a single layer.

    With a screened probe only the candidates the full probe scored can be chosen (the screen's
    figures rank, they do not recommend)."""
    defined = [
        i
        for i in range(len(candidates))
        if np.isfinite(validation[i])
        and np.isfinite(test_value[i])
        and (not scored_by or scored_by[i] in RECIPE_PROBES)
    ]
    return sorted(
        defined,
        key=lambda i: (-round(validation[i], 6), candidates[i].width(width), candidates[i].mixer != "single"),
    )


def _choose(result: ProtocolResult, width: int) -> int:
    """Best validation score among candidates whose score is defined; never an undefined one."""
    order = _rank(result.validation, result.test.value, result.candidates, width, result.scored_by)
    if not order:
        raise BertlensError(
            f"no candidate has a defined {result.metric} under protocol '{result.protocol}' (constant vectors or "
            "constant targets?); check the task's labels or scores"
        )
    return order[0]


def _nested_selection(
    per_fold: np.ndarray,
    outputs: np.ndarray,
    folds: list[Fold],
    candidates,
    bank: Bank,
    test_value: np.ndarray,
    scored_by: tuple[str, ...] = (),
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Cross-validation of the choice itself: in each fold, the candidate chosen on that fold's inner dev
    split, scored on that fold's held-out rows. Returns its out-of-fold outputs [n] and the names chosen."""
    chosen, selected, offset = [], np.zeros(outputs.shape[1]), 0
    for k, fold in enumerate(folds):
        order = _rank(per_fold[k], test_value, candidates, bank.width, scored_by)
        pick = order[0] if order else 0
        selected[offset : offset + len(fold.test)] = outputs[pick, offset : offset + len(fold.test)]
        chosen.append(candidates[pick].name)
        offset += len(fold.test)
    return selected, tuple(chosen)


PROTOCOLS = {
    "similarity": ("cosine", "probe", "label_free"),
    "classification": ("probe", "clustering", "label_free"),
    "pair_classification": ("probe",),
    "retrieval": ("cosine", "label_free"),
}


def _chosen_plans(plans: list, wanted: tuple[str, ...] | None, kind: str) -> list:
    """The protocols the user asked for; the one a recommendation is made by must be among them."""
    if wanted is None:
        return plans
    valid = PROTOCOLS[kind]
    for name in wanted:
        if name not in valid:
            raise BertlensError(f"protocol '{name}' does not apply to a {kind} task: {did_you_mean(name, valid)}")
    if valid[0] not in wanted:
        raise BertlensError(f"a {kind} task is recommended by its '{valid[0]}' protocol; include it in --protocols")
    return [plan for plan in plans if plan[0] in wanted]


def _plans(
    task: TaskData, bank: Bank, ex, folds: list[Fold], config: SweepConfig, fitted: dict, progress: Progress = silent
) -> list:
    """(protocol, candidates, compute, description) for each protocol that applies to the task's kind."""
    candidates = enumerate_candidates(bank.num_layers, config.poolers, config.layers)
    without_mix = [c for c in candidates if c.mixer != "scalar_mix"]
    if task.kind != "similarity":
        pool = candidates if task.kind == "classification" else without_mix
        basis = "an inner 10% dev split per fold" if task.uses_cv else "dev"
        return [
            (
                "probe",
                pool,
                lambda: _probe_classification(bank, pool, ex, folds, task.kind, config, progress),
                "L2 logistic regression on standardised features, C chosen on " + basis + "; every candidate "
                f"screened first by a ridge classifier (strength chosen on the same dev rows), the logistic probe fitted "
                f"for the contenders that can still tie with the best (up to {MAX_CONTENDERS}), the rest keep the "
                "screen's figures (each row names its probe)",
            )
        ]
    post = [replace(c, post=config.postprocess) for c in without_mix] if config.postprocess else []
    cosine_pool = candidates + post
    per_fold = " of each fold" if task.uses_cv else ""
    return [
        (
            "cosine",
            cosine_pool,
            lambda: _cosine(bank, cosine_pool, ex, folds, config, fitted),
            "cosine similarity of the two vectors vs gold score (no training); ScalarMix weights and "
            "post-processing fitted on the training pairs" + per_fold,
        ),
        (
            "probe",
            without_mix,
            lambda: _probe_similarity(bank, without_mix, ex, folds, config),
            "ridge regression on (|u-v|, u*v), alpha chosen on dev Spearman (SentEval-style pair features)",
        ),
    ]


def _score_protocol(plan, task: TaskData, bank: Bank, folds: list[Fold], test_gold, config) -> ProtocolResult:
    """Run one protocol's fits, then bootstrap intervals (and, under CV, the cross-validated choice)."""
    name, cands, compute, description = plan
    outputs, per_fold, mixes, *screened = compute()
    scored_by = screened[0].scored_by if screened else ()
    timings = dict(zip(("screen_seconds", "logistic_seconds"), screened[0].seconds)) if screened else {}
    if screened and screened[0].capped:
        description += (
            f"; {screened[0].capped} more candidates were within the screen's tie margin but kept its figures "
            f"(at most {MAX_CONTENDERS} logistic fits)"
        )
    validation = _mean_over_folds(per_fold)
    selection, selected = None, ()
    if task.uses_cv:  # the choice, cross-validated, on the candidates' own resamples
        scores = point_estimates(outputs, test_gold, task.metric)
        chosen_outputs, selected = _nested_selection(per_fold, outputs, folds, cands, bank, scores, scored_by)
        intervals, selection = bootstrap_with_extra(
            outputs, chosen_outputs[None], test_gold, task.metric, resamples=config.resamples, seed=config.seed
        )
    else:
        intervals = bootstrap(outputs, test_gold, task.metric, resamples=config.resamples, seed=config.seed)
    result = ProtocolResult(
        name,
        task.metric,
        tuple(cands),
        validation,
        intervals,
        len(test_gold),
        mixes,
        description,
        len(folds),
        selection,
        selected,
        scored_by,
        timings,
    )
    return replace(result, outputs=outputs, gold=test_gold)


def _retrieval(task: TaskData, encoder: Encoder, base: Recipe, cache_dir, config: SweepConfig, progress: Progress):
    """Every candidate as a cosine retriever: (protocols by key, fitted post-processors, timings)."""
    collection = task.collection
    split = query_split(collection, config.seed)
    rows = np.concatenate([split.dev, split.test])
    plan = RetrievalSweep(
        config.poolers,
        config.layers,
        config.postprocess or "whiten",
        config.prompt_sets,
        base.include_special,
        config.bank_dtype,
        base.long_text_strategy,
        config.long_documents,
        len(split.dev),
    )
    start = time.perf_counter()
    scores = sweep_retrieval(
        encoder,
        collection.documents,
        tuple(collection.queries[q] for q in rows),
        [*split.dev_judgements, *split.test_judgements],
        default_cache_dir(cache_dir),
        plan,
        progress,
    )
    timings = {
        "bank_seconds": scores.bank_seconds,
        "retrieval_seconds": time.perf_counter() - start - scores.bank_seconds - scores.long_document_seconds,
    }
    if config.long_documents:
        timings["long_document_seconds"] = scores.long_document_seconds
    n_dev = len(split.dev)
    description = (
        "cosine top-100 of each query over the whole corpus (exact search, no training); "
        f"post-processing ({plan.post}) fitted on the corpus vectors; " + split.description
    )
    if plan.long_documents:
        description += (
            "; long documents: the best candidate on the choosing queries also read as head_tail, windows, "
            f"independent chunks and late chunks ({LATE_CHUNK} tokens), aggregated by mean or scored by their best "
            "piece (maxsim, which no recipe expresses)"
        )
    if plan.prompt_sets:
        description += "; prompt sets " + ", ".join(
            f"@{p.name} (query {p.query!r}, document {p.document!r})" for p in plan.prompt_sets
        )
    protocols = {}
    for metric, values in scores.per_query.items():  # values [C, Q_dev + Q_test]
        with np.errstate(invalid="ignore"):
            validation = values[:, :n_dev].mean(axis=1)
        intervals = bootstrap(values[:, n_dev:], None, metric, resamples=config.resamples, seed=config.seed)
        protocols[protocol_key(metric)] = ProtocolResult(
            "cosine",
            metric,
            scores.candidates,
            validation,
            intervals,
            len(split.test),
            {},
            description,
            scored_by=scores.scored_by,
            outputs=values[:, n_dev:],
        )
    free = trust = None
    if config.protocols and "label_free" in config.protocols:
        start = time.perf_counter()
        texts = list(scores.plain_texts)
        protocols["label_free"], free = _label_free(
            scores.plain_bank, encoder, texts, base, cache_dir, config, progress
        )
        trust = _retrieval_trust(free, protocols["cosine"], scores, n_dev, config)
        timings["label_free_seconds"] = time.perf_counter() - start
    return protocols, scores, timings, free, trust


def _retrieval_dimension_loss(result: SweepResult, scores, task: TaskData, config: SweepConfig):
    """The recommended retriever's nDCG@10 lost at each shorter width, on the test queries (no-prompt candidates;
    None for a prompted one, whose bank is not kept)."""
    chosen = result.recommended
    if chosen.prompts is not None or chosen.long_text is not None or scores.plain_bank is None:
        return None
    split = query_split(task.collection, config.seed)
    row = {text: i for i, text in enumerate(scores.plain_texts)}
    queries = [row[task.collection.queries[q]] for q in split.test]
    documents = np.array([row[d] for d in task.collection.documents])
    transform = result.postprocessor.transform if result.postprocessor is not None else (lambda x: x)
    plain = replace(chosen, post=None)
    doc_vectors = transform(candidate_features(scores.plain_bank, plain, documents))
    query_vectors = transform(candidate_features(scores.plain_bank, plain, np.array(queries)))
    return retrieval_loss(doc_vectors, query_vectors, list(split.test_judgements)) or None


def _retrieval_trust(free: LabelFreeScores, main: ProtocolResult, scores, n_dev: int, config: SweepConfig) -> Trust:
    """The label-free pick judged by the test queries; the choice from a few judged queries drawn from the choosing
    (dev) queries: the candidate with the best mean nDCG@10 over them."""
    names = [c.name for c in main.candidates]
    width = scores.plain_bank.width
    last = last_layer_default(names, scores.plain_bank.num_layers)
    trust = label_free_trust(free, names, main.test, main.outputs, None, main.metric, last, width, config.seed)
    dev = scores.per_query[RANKING_METRICS[0]][:, :n_dev]  # [C, Q_dev]
    eligible = [i for i, c in enumerate(main.candidates) if scores.scored_by[i] == "cosine"]

    def choose(rows: np.ndarray) -> int:
        with np.errstate(invalid="ignore"):
            mean = np.nan_to_num(dev[eligible][:, rows].mean(axis=1), nan=-1.0)
        return eligible[int(np.argmax(mean))]

    return replace(trust, settling=settle(choose, np.arange(n_dev), main.test, config.seed))


def _clustering(bank: Bank, ex, folds: list[Fold], task: TaskData, config: SweepConfig, progress) -> ProtocolResult:
    """V-measure of k-means (k = the number of labels) for every candidate but ScalarMix (learned from labels), on
    seeded subsamples of the texts scored (the test split, or every row under cross-validation)."""
    candidates = [
        c for c in enumerate_candidates(bank.num_layers, config.poolers, config.layers) if c.mixer != "scalar_mix"
    ]
    rows = folds[0].test if not task.uses_cv else _all_rows(folds)
    labels = ex.targets[rows]
    samples = v_measures(
        lambda i, sample: candidate_features(bank, candidates[i], ex.a[rows[sample]]),
        len(candidates),
        labels,
        config.seed,
        progress,
    )  # [C, B]
    value = samples.mean(axis=1)
    return ProtocolResult(
        "clustering",
        "v_measure",
        tuple(candidates),
        value,
        intervals_from_samples(value, samples),
        min(len(rows), SUBSAMPLE_SIZE),
        {},
        f"k-means (MiniBatchKMeans, k = {len(np.unique(labels))} labels) on the raw vectors, V-measure against the "
        f"labels, as MTEB; mean and 2.5-97.5th percentiles over {SUBSAMPLES} seeded subsamples of "
        f"{min(len(rows), SUBSAMPLE_SIZE)} texts, the same for every candidate (ties: paired over subsamples); "
        "labels only score, never choose: the recommendation stays with the probe",
        split_name=f"{'test' if not task.uses_cv else 'all'} subsamples",
    )


def _label_free(
    bank: Bank, encoder: Encoder, texts: list[str], base: Recipe, cache_dir, config: SweepConfig, progress: Progress
) -> tuple[ProtocolResult, LabelFreeScores]:
    """Every candidate but ScalarMix (learned from labels) scored from the texts alone: the bank, plus three view
    passes over a sample of the texts (probing/label_free.py)."""
    candidates = [
        c for c in enumerate_candidates(bank.num_layers, config.poolers, config.layers) if c.mixer != "scalar_mix"
    ]
    rows = view_rows(len(texts), view_count(len(texts)), config.seed)
    options = BankOptions(config.poolers, base.include_special, config.bank_dtype, base.long_text_strategy)
    views = build_views(encoder, texts, rows, default_cache_dir(cache_dir), options, config.seed, progress)
    scores = score_label_free(bank, candidates, np.arange(len(texts)), views, config.seed, progress=progress)
    form = " + ".join(f"{w:g} x {name}" for name, w in scores.form.items())
    description = (
        f"no labels read: effective rank, matrix entropy, anisotropy and uniformity of the vectors, alignment under "
        f"two dropout views and under word dropout ({len(rows)} texts encoded three more times); the combined score "
        f"is the weighted mean of each component's rank percentile across candidates ({form}), on {LF_SUBSAMPLES} "
        f"seeded subsamples of the texts (ties: paired over subsamples); ScalarMix is not scored (learned from labels)"
    )
    protocol = ProtocolResult(
        "label_free",
        "combined",
        tuple(candidates),
        scores.value("combined"),
        scores.intervals(),
        min(len(texts), LF_SUBSAMPLE_SIZE),
        {},
        description,
        split_name="text subsamples",
    )
    return protocol, scores


def _trust(scores: LabelFreeScores, main: ProtocolResult, task: TaskData, bank: Bank, ex, folds, config) -> Trust:
    """The label-free pick judged by the task's labels, and the labelled choice from a few labels (settle)."""
    names = [c.name for c in main.candidates]
    last = last_layer_default(names, bank.num_layers)
    trust = label_free_trust(
        scores, names, main.test, main.outputs, main.gold, main.metric, last, bank.width, config.seed
    )
    eligible = [i for i, c in enumerate(main.candidates) if c.mixer != "scalar_mix" and not c.post]
    chosen = [main.candidates[i] for i in eligible]
    pool = _all_rows(folds) if task.uses_cv else folds[0].train
    if task.kind == "similarity":
        choose = similarity_chooser(bank, chosen, ex.a, ex.b, ex.targets)
    else:
        choose = classification_chooser(bank, chosen, ex.a, ex.targets, int(ex.targets.max()) + 1, config.seed)
    return replace(trust, settling=settle(lambda rows: eligible[choose(rows)], pool, main.test, config.seed))


def _disagreement(protocols: dict[str, ProtocolResult]) -> str | None:
    """When cosine and the probe pick different best candidates: say so, and how far apart they are."""
    if "cosine" not in protocols or "probe" not in protocols:
        return None
    cos, probe = protocols["cosine"], protocols["probe"]
    best_cos, best_probe = cos.candidates[cos.test.best].name, probe.candidates[probe.test.best].name
    if best_cos == best_probe:
        return None
    in_probe = {c.name: i for i, c in enumerate(probe.candidates)}
    text = f"cosine and probe disagree on the best candidate: {best_cos} (cosine) vs {best_probe} (probe)"
    if best_cos not in in_probe:
        return text + (
            f"; the probe does not score {best_cos} (ScalarMix weights and post-processing are "
            "fitted for the cosine protocol only)"
        )
    tied = bool(probe.test.tied_with_best[in_probe[best_cos]])
    return (
        text
        + f"; under the probe, {best_cos} is {'statistically tied with' if tied else 'significantly below'} {best_probe}"
    )


def _notes(task: TaskData, base: Recipe, config: SweepConfig) -> tuple[str, ...]:
    """What the reader of this sweep's figures should know about how they were made."""
    notes = LIMITATIONS
    if config.protocols is None and task.uses_cv and task.kind == "similarity":
        notes += (
            f"the ridge probe was not run: under {task.folds}-fold cross-validation it costs several times the rest "
            "of the sweep (about 4x on 5,000 pairs, docs/results.md); add it with --protocols cosine,probe",
        )
    if base.long_text and ":max" in base.long_text:
        notes += (
            "with max-aggregated windows, layer mixes are scored as the mix of per-layer maxima; the recipe "
            "applies the max to the mixed vectors, so mixed candidates reproduce closely, not exactly",
        )
    if config.postprocess and config.bank_dtype == "float16" and task.kind == "similarity":
        notes += (
            "post-processed candidates are scored from a float16 bank; whitening can amplify its rounding where the "
            "space is ill-conditioned (a few points on a random model). --bank-dtype float32 makes the scores equal "
            "to what the recipe gives",
        )
    if task.kind == "retrieval":
        notes += (
            "ScalarMix is not scored for retrieval: its weights are learned from labels, and judged queries are "
            "too few to both learn and choose them",
        )
    if config.postprocess and task.kind not in ("similarity", "retrieval"):
        notes += (
            f"post-processing ({config.postprocess}) is scored for similarity tasks only: the linear probe "
            "standardises its features, so centring and whitening cannot change what it learns",
        )
    return notes


def _sweep_encoder(encoder: Encoder | str, base: Recipe, config: SweepConfig) -> Encoder:
    if not isinstance(encoder, str):
        return encoder
    attentions = "cls" if "attention" in config.poolers else "none"
    return Encoder(encoder, max_length=base.max_length, precision=base.precision, attentions=attentions)


def run_sweep(
    task: TaskData,
    encoder: Encoder | str = "default",
    base: Recipe = Recipe(),
    cache_dir: Path | None = None,
    config: SweepConfig = SweepConfig(),
    progress: Progress = silent,
) -> SweepResult:
    """Score every candidate on `task` with one encoding pass; recommend a Recipe.

    `encoder`: an Encoder, or a model name (built with what the poolers need); `base`: what every
    candidate shares (max_length, precision, include_special, long_text); `cache_dir`: where banks
    are cached (default $BERTLENS_CACHE or ~/.cache/bertlens).
    """
    encoder = _sweep_encoder(encoder, base, config)
    model = base.model if base.model != "default" else encoder.ref.name
    base = base.replace(model=model, max_length=encoder.max_length)
    torch.manual_seed(config.seed)
    if task.kind == "retrieval":
        _chosen_plans([], config.protocols, task.kind)  # names checked: retrieval runs its own protocols
        protocols, scores, timings, free, trust = _retrieval(task, encoder, base, cache_dir, config, progress)
        result = _result(
            task,
            encoder,
            base,
            config,
            encoder.hidden_size,
            protocols,
            timings,
            scores.processors,
            "the choosing queries",
        )
        loss = _retrieval_dimension_loss(result, scores, task, config)
        return replace(result, label_free=free, trust=trust, recipe=result.recipe.replace(dimension_loss=loss))
    texts = task.all_texts()
    bank, timings = _bank(encoder, texts, base, cache_dir, config, progress)
    release_freed_memory()  # the encoding pass's activations: not needed by the probes
    ex, where = _examples(task, {text: i for i, text in enumerate(texts)})
    folds = sweep_folds(task, ex.targets, where, config)
    test_gold = ex.targets[np.concatenate([f.test for f in folds])]
    fitted: dict[str, PostProcessor] = {}
    wanted = config.protocols
    if wanted is None and task.uses_cv and task.kind == "similarity":
        wanted = ("cosine",)  # the k-fold ridge probe costs several times the rest of the sweep: opt in
    plans = _chosen_plans(_plans(task, bank, ex, folds, config, fitted, progress), wanted, task.kind)
    protocols = {}
    for number, plan in enumerate(plans):
        progress(f"probing ({plan[0]})", number, len(plans))
        start = time.perf_counter()
        protocols[plan[0]] = _score_protocol(plan, task, bank, folds, test_gold, config)
        timings[f"{plan[0]}_seconds"] = time.perf_counter() - start
        timings.update(protocols[plan[0]].seconds)
    if wanted and "clustering" in wanted:
        start = time.perf_counter()
        protocols["clustering"] = _clustering(bank, ex, folds, task, config, progress)
        timings["clustering_seconds"] = time.perf_counter() - start
    scores = trust = None
    if wanted and "label_free" in wanted:
        start = time.perf_counter()
        protocols["label_free"], scores = _label_free(bank, encoder, texts, base, cache_dir, config, progress)
        main = protocols[main_protocol(task.kind)]
        trust = _trust(scores, main, task, bank, ex, folds, config)
        timings["label_free_seconds"] = time.perf_counter() - start
    result = _result(task, encoder, base, config, bank.width, protocols, timings, fitted, f"{len(folds)} folds")
    if task.kind == "similarity":
        result = replace(result, recipe=result.recipe.replace(dimension_loss=_dimension_loss(result, bank, ex, folds)))
    return replace(result, label_free=scores, trust=trust)


def _dimension_loss(result: SweepResult, bank: Bank, ex, folds: list[Fold]):
    """The recommended recipe's cosine Spearman lost at each shorter width, on the rows it was scored on."""
    chosen, main = result.recommended, result.main
    rows = np.concatenate([f.test for f in folds])
    weights = main.mix_weights.get(chosen.name)
    mix = np.asarray(weights) if weights is not None else None
    transform = result.postprocessor.transform if result.postprocessor is not None else (lambda x: x)
    first, second = (transform(candidate_features(bank, chosen, side[rows], mix)) for side in (ex.a, ex.b))
    return similarity_loss(first, second, ex.targets[rows]) or None


def _bank(encoder: Encoder, texts: list[str], base: Recipe, cache_dir, config: SweepConfig, progress):
    """The one encoding pass (every layer x pooler, as the shared recipe settings say) and its wall time."""
    start = time.perf_counter()
    bank = build_bank(
        encoder,
        texts,
        default_cache_dir(cache_dir),
        poolers=config.poolers,
        include_special=base.include_special,
        dtype=config.bank_dtype,
        long_text=base.long_text_strategy,
        progress=progress,
    )
    return bank, {"bank_seconds": time.perf_counter() - start}


def run_texts_sweep(
    texts: list[str],
    name: str,
    encoder: Encoder | str = "default",
    base: Recipe = Recipe(),
    cache_dir: Path | None = None,
    config: SweepConfig = SweepConfig(),
    progress: Progress = silent,
) -> SweepResult:
    """No labels: score every candidate from the texts alone and recommend the label-free pick.

    One encoding pass builds the bank (shared with a later labelled sweep of the same texts), three
    more over a sample of the texts build the augmented views."""
    texts = list(dict.fromkeys(t for t in texts))
    if len(texts) < 8:
        raise BertlensError(f"{name}: {len(texts)} distinct texts; label-free scores need at least 8 (more is better)")
    encoder = _sweep_encoder(encoder, base, config)
    model = base.model if base.model != "default" else encoder.ref.name
    base = base.replace(model=model, max_length=encoder.max_length)
    torch.manual_seed(config.seed)
    bank, timings = _bank(encoder, texts, base, cache_dir, config, progress)
    start = time.perf_counter()
    protocol, scores = _label_free(bank, encoder, texts, base, cache_dir, config, progress)
    timings["label_free_seconds"] = time.perf_counter() - start
    task = texts_task(name, texts)
    result = _result(task, encoder, base, config, bank.width, {"label_free": protocol}, timings, {}, "")
    return replace(result, label_free=scores)


def _result(task, encoder, base, config, width: int, protocols, timings, fitted, validated_by: str) -> SweepResult:
    """The recommendation from the main protocol's validation scores, and everything the reports need."""
    main = protocols[main_protocol(task.kind)]
    chosen = _choose(main, width)
    recommended = main.candidates[chosen]
    recipe = recommended.recipe(base, main.mix_weights.get(recommended.name))
    split_word = f"mean inner-dev score over {validated_by}" if task.uses_cv else "dev score"
    if task.kind == "retrieval":
        split_word = f"{main.metric} on {validated_by}"
    if task.kind == TEXTS_KIND:
        split_word = "the mean combined label-free score over the subsamples"
    basis = (
        f"protocol '{main.protocol}' ({main.description}); chosen by {split_word} "
        f"{main.validation[chosen]:.4f}, ties broken by fewer dimensions then single layers"
    )
    if task.kind in ("similarity", "retrieval"):
        basis += f"; cosine is how {task.kind} embeddings are used and needs no training"
    return SweepResult(
        task.name,
        task.kind,
        encoder.ref.name,
        encoder.ref.fingerprint,
        config.seed,
        protocols,
        recommended,
        recipe,
        basis,
        _disagreement(protocols),
        timings,
        task.notes + _notes(task, base, config),
        fitted.get(recommended.name),
    )
