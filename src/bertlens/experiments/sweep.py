"""The sweep: one feature bank, every candidate, every protocol, honest intervals, one recommendation."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from bertlens.encoding.encoder import Encoder
from bertlens.errors import BertlensError
from bertlens.features.bank import DEFAULT_POOLERS, Bank, build_bank
from bertlens.io.cache import default_cache_dir
from bertlens.metrics.bootstrap import Intervals, bootstrap, spearman
from bertlens.probing.candidates import LIMITATIONS, Candidate, candidate_features, enumerate_candidates
from bertlens.probing.pairs import pair_features, row_cosine
from bertlens.probing.ridge import fit_ridge
from bertlens.probing.scalar_mix_fit import fit_classification_mix, fit_similarity_mix
from bertlens.probing.selection import C_GRID, logistic_on_dev
from bertlens.probing.splits import DEV_FRACTION, Fold, make_folds
from bertlens.progress import Progress, silent
from bertlens.representation.postprocess import PostProcessor, parse_steps
from bertlens.representation.recipe import Recipe
from bertlens.tasks.loaders import TaskData

MIX_EXAMPLES = 1000  # training rows (a seeded sample) used to learn a classification ScalarMix


@dataclass(frozen=True)
class SweepConfig:
    poolers: tuple[str, ...] = DEFAULT_POOLERS
    layers: tuple[int, ...] | None = None
    seed: int = 0
    strengths: tuple[float, ...] = C_GRID  # logistic C grid
    alphas: tuple[float, ...] = (1.0, 10.0, 100.0, 1000.0)  # ridge grid
    resamples: int = 1000
    dev_fraction: float = DEV_FRACTION
    bank_dtype: str = "float16"
    postprocess: str | None = None  # similarity tasks: also score every candidate with these steps (fitted on train)


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
        groups.setdefault(candidate.width(bank.vectors.shape[-1]), []).append(i)
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


def _probe_classification(bank, candidates, ex, folds, kind, config) -> tuple[np.ndarray, np.ndarray, dict]:
    """Out-of-fold test predictions [C, n_test] and validation accuracy [C] for every candidate.

    ScalarMix weights are learned first (per fold, on the training rows); the mixed vectors
    then join every other candidate in one batched probe with the same C selection.
    """
    predictions = np.zeros((len(candidates), sum(len(f.test) for f in folds)), dtype=np.int64)
    validation = np.zeros(len(candidates))
    learned: dict[str, list] = {}
    offset = 0
    rng = np.random.default_rng(config.seed)
    for fold in folds:
        y_train, y_dev = ex.targets[fold.train], ex.targets[fold.dev]
        sample = np.sort(rng.choice(len(fold.train), min(len(fold.train), MIX_EXAMPLES), replace=False))
        mixes = {
            c.name: fit_classification_mix(bank.pooled(c.pooler, c.layers, ex.a[fold.train[sample]]), y_train[sample])
            for c in candidates
            if c.mixer == "scalar_mix"
        }
        for name, weights in mixes.items():
            learned.setdefault(name, []).append(weights)
        rows = np.concatenate([fold.train, fold.dev, fold.test])  # one gather per candidate, then views
        for ids in _groups(candidates, bank).values():
            features = _stack(bank, candidates, ids, ex, rows, kind, mixes)  # [C, n_all, D]
            selected = logistic_on_dev(features, len(fold.train), len(fold.dev), y_train, y_dev, config.strengths)
            for j, i in enumerate(ids):
                predictions[i, offset : offset + len(fold.test)] = selected.predictions[j]
                validation[i] += selected.dev_accuracy[j] / len(folds)
        offset += len(fold.test)
    mix_weights = {name: tuple(float(x) for x in np.mean(ws, axis=0)) for name, ws in learned.items()}
    return predictions, validation, mix_weights


def _cosine(bank, candidates, ex, folds, config, fitted: dict | None = None) -> tuple[np.ndarray, np.ndarray, dict]:
    """Cosine similarity per test pair [C, n_test]; dev Spearman [C]; ScalarMix learned on train pairs.

    A candidate with post-processing has it fitted on the vectors of every training text (both
    sides of fold 1's training pairs); the fitted processors are left in `fitted` by name.
    """
    test_rows = np.concatenate([f.test for f in folds])
    scores = np.zeros((len(candidates), len(test_rows)))
    validation = np.zeros(len(candidates))
    mix_weights = {}
    for i, candidate in enumerate(candidates):
        if candidate.mixer == "scalar_mix":
            train_rows = folds[0].train
            mix = fit_similarity_mix(
                bank.pooled(candidate.pooler, candidate.layers, ex.a[train_rows]),
                bank.pooled(candidate.pooler, candidate.layers, ex.b[train_rows]),
                ex.targets[train_rows],
                seed=config.seed,
            )
            mix_weights[candidate.name] = tuple(float(x) for x in mix)
        transform = lambda x: x  # noqa: E731
        if candidate.post:
            train_rows = np.unique(np.concatenate([ex.a[folds[0].train], ex.b[folds[0].train]]))
            try:
                processor = PostProcessor.fit(
                    parse_steps(candidate.post), candidate_features(bank, candidate, train_rows)
                )
            except BertlensError:  # e.g. constant vectors ([CLS] at layer 0): the candidate is undefined
                scores[i], validation[i] = np.nan, np.nan
                continue
            transform = processor.transform
            if fitted is not None:
                fitted[candidate.name] = processor

        def feats(rows, side, c=candidate, t=transform):
            return t(candidate_features(bank, c, side[rows], mix_weights.get(c.name)))

        scores[i] = row_cosine(feats(test_rows, ex.a), feats(test_rows, ex.b))
        dev_rows = folds[0].dev  # cosine needs no training: one dev set suffices for selection
        validation[i] = spearman(row_cosine(feats(dev_rows, ex.a), feats(dev_rows, ex.b)), ex.targets[dev_rows])
    return scores, validation, mix_weights


def _probe_similarity(bank, candidates, ex, folds, config) -> tuple[np.ndarray, np.ndarray, dict]:
    """Ridge on (|u-v|, u*v) -> predicted score per test pair [C, n_test]; dev Spearman [C]."""
    outputs = np.zeros((len(candidates), sum(len(f.test) for f in folds)))
    validation = np.zeros(len(candidates))
    offset = 0
    for fold in folds:
        for ids in _groups(candidates, bank).values():
            fit = fit_ridge(
                _stack(bank, candidates, ids, ex, fold.train, "similarity"),
                torch.from_numpy(ex.targets[fold.train]),
                config.alphas,
            )
            dev = fit.predict(_stack(bank, candidates, ids, ex, fold.dev, "similarity")).numpy()  # [C, A, n]
            dev_rho = spearman(dev, ex.targets[fold.dev][None, None])  # [C, A]
            best = np.nanargmax(np.nan_to_num(dev_rho, nan=-2), axis=1)
            test = fit.predict(_stack(bank, candidates, ids, ex, fold.test, "similarity")).numpy()
            for j, i in enumerate(ids):
                outputs[i, offset : offset + len(fold.test)] = test[j, best[j]]
                validation[i] += dev_rho[j, best[j]] / len(folds)
        offset += len(fold.test)
    return outputs, validation, {}


def _choose(result: ProtocolResult, bank: Bank) -> int:
    """Best validation score; ties broken by fewer dimensions, then a single layer."""
    widths = [c.width(bank.vectors.shape[-1]) for c in result.candidates]
    valid = np.nan_to_num(result.validation, nan=-np.inf)
    order = sorted(
        range(len(valid)), key=lambda i: (-round(valid[i], 6), widths[i], result.candidates[i].mixer != "single")
    )
    return order[0]


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
    if isinstance(encoder, str):
        encoder = Encoder(
            encoder,
            max_length=base.max_length,
            precision=base.precision,
            attentions="cls" if "attention" in config.poolers else "none",
        )
    base = base.replace(
        model=base.model if base.model != "default" else encoder.ref.name, max_length=encoder.max_length
    )
    cache_dir = default_cache_dir(cache_dir)
    torch.manual_seed(config.seed)
    timings: dict[str, float] = {}
    texts = task.all_texts()
    index = {text: i for i, text in enumerate(texts)}
    start = time.perf_counter()
    bank = build_bank(
        encoder,
        texts,
        cache_dir,
        poolers=config.poolers,
        include_special=base.include_special,
        dtype=config.bank_dtype,
        long_text=base.long_text_strategy,
        progress=progress,
    )
    timings["bank_seconds"] = time.perf_counter() - start
    ex, where = _examples(task, index)
    folds = sweep_folds(task, ex.targets, where, config)
    test_gold = ex.targets[np.concatenate([f.test for f in folds])]
    candidates = enumerate_candidates(bank.num_layers, config.poolers, config.layers)
    without_mix = [c for c in candidates if c.mixer != "scalar_mix"]
    plans = []
    fitted: dict[str, PostProcessor] = {}
    if task.kind == "similarity":
        cosine_pool = candidates + (
            [replace(c, post=config.postprocess) for c in candidates if c.mixer != "scalar_mix"]
            if config.postprocess
            else []
        )
        plans.append(
            (
                "cosine",
                cosine_pool,
                lambda: _cosine(bank, cosine_pool, ex, folds, config, fitted),
                "cosine similarity of the two vectors vs gold score (no training); ScalarMix weights fitted on train pairs",
            )
        )
        plans.append(
            (
                "probe",
                without_mix,
                lambda: _probe_similarity(bank, without_mix, ex, folds, config),
                "ridge regression on (|u-v|, u*v), alpha chosen on dev Spearman (SentEval-style pair features)",
            )
        )
    else:
        pool = candidates if task.kind == "classification" else without_mix
        plans.append(
            (
                "probe",
                pool,
                lambda: _probe_classification(bank, pool, ex, folds, task.kind, config),
                "L2 logistic regression on standardised features, C chosen on "
                + ("an inner 10% dev split per fold" if task.uses_cv else "dev"),
            )
        )
    protocols = {}
    for number, (name, cands, compute, description) in enumerate(plans):
        progress(f"probing ({name})", number, len(plans))
        start = time.perf_counter()
        outputs, validation, mixes = compute()
        intervals = bootstrap(outputs, test_gold, task.metric, resamples=config.resamples, seed=config.seed)
        timings[f"{name}_seconds"] = time.perf_counter() - start
        protocols[name] = ProtocolResult(
            name, task.metric, tuple(cands), validation, intervals, len(test_gold), mixes, description
        )
    main = protocols["cosine" if task.kind == "similarity" else "probe"]
    chosen = _choose(main, bank)
    recommended = main.candidates[chosen]
    recipe = recommended.recipe(base, main.mix_weights.get(recommended.name))
    split_word = "mean inner-dev score over folds" if task.uses_cv else "dev score"
    basis = (
        f"protocol '{main.protocol}' ({main.description}); chosen by {split_word} "
        f"{main.validation[chosen]:.4f}, ties broken by fewer dimensions then single layers"
    )
    if task.kind == "similarity":
        basis += "; cosine is how similarity embeddings are used and needs no training"
    disagreement = None
    if len(protocols) == 2:
        cos, probe = protocols["cosine"], protocols["probe"]
        best_cos, best_probe = cos.candidates[cos.test.best].name, probe.candidates[probe.test.best].name
        if best_cos != best_probe:
            in_probe = {c.name: i for i, c in enumerate(probe.candidates)}
            disagreement = (
                f"cosine and probe disagree on the best candidate: {best_cos} (cosine) vs {best_probe} (probe)"
            )
            if best_cos in in_probe:
                tied = bool(probe.test.tied_with_best[in_probe[best_cos]])
                verdict = "statistically tied with" if tied else "significantly below"
                disagreement += f"; under the probe, {best_cos} is {verdict} {best_probe}"
            else:
                disagreement += (
                    f"; the probe does not score {best_cos} (ScalarMix weights and post-processing are "
                    "fitted for the cosine protocol only)"
                )
    notes = LIMITATIONS
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
    if config.postprocess and task.kind != "similarity":
        notes += (
            f"post-processing ({config.postprocess}) is scored for similarity tasks only: the linear probe "
            "standardises its features, so centring and whitening cannot change what it learns",
        )
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
        disagreement,
        timings,
        notes,
        fitted.get(recommended.name),
    )
