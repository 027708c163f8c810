"""Frozen vs fine-tuned on the user's task: learning curves over training sizes, seeds and strategies.

Training subsets are nested (one seeded permutation per seed, the first `size` rows), so a
curve shows the effect of more data, not of a different sample. The frozen strategy encodes
every text once and trains a logistic probe (C chosen on dev); each fine-tuning run starts
from a fresh copy of the encoder. Every finished run is saved under `runs_dir`, so an
interrupted comparison resumes where it stopped. Fine-tuned runs also measure drift: linear
CKA per layer between the encoder before and after, on held-out texts, and the change of a
linear probe's score on a second, unrelated task.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
from scipy import stats

from bertlens.embedder import Embedder
from bertlens.encoding.encoder import Encoder
from bertlens.errors import BertlensError
from bertlens.evaluation.cka import linear_cka
from bertlens.io.atomic import write_json
from bertlens.probing.logistic import fit_logistic
from bertlens.probing.sweep import pair_features, row_cosine
from bertlens.representation.poolers import pool, token_mask
from bertlens.representation.recipe import Recipe
from bertlens.tasks.loaders import Split, TaskData
from bertlens.training.heads import Head, HeadSpec
from bertlens.training.loop import Encoded, TrainConfig, fine_tune, predict, score
from bertlens.training.strategies import Strategy

STRENGTHS = (0.01, 0.1, 1.0, 10.0)


@dataclass(frozen=True)
class CompareConfig:
    sizes: tuple[int, ...]
    strategies: tuple[Strategy, ...]
    seeds: tuple[int, ...] = (0, 1, 2)
    frozen_sizes: tuple[int, ...] = ()  # extra sizes for the frozen probe only (cheap), e.g. the full train set
    train: TrainConfig = TrainConfig()
    drift_texts: int = 500
    max_dev: int | None = None  # a seeded cap on dev examples (dev is scored every epoch)


@dataclass(frozen=True)
class RunResult:
    strategy: str
    size: int
    seed: int
    test: float
    dev: float
    seconds: float
    epochs: int = 0
    steps: int = 0
    cka: tuple[float, ...] | None = None  # per layer, before vs after fine-tuning
    drift_before: float | None = None  # second-task probe score, original encoder
    drift_after: float | None = None  # ... fine-tuned encoder


@dataclass(frozen=True)
class CompareResult:
    task: str
    kind: str
    metric: str
    model: str
    recipe: Recipe
    config: CompareConfig
    runs: tuple[RunResult, ...]
    drift_task: str | None
    n_test: int
    notes: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class DriftProbe:
    """A second task to watch while fine-tuning: a linear probe's score before vs after."""

    name: str
    train: Split
    test: Split


def resolve_sizes(text: str, train_size: int) -> tuple[int, ...]:
    """'100,300,full' -> sizes; each must fit the training split."""
    sizes = []
    for item in (s.strip() for s in text.split(",") if s.strip()):
        value = train_size if item in ("full", "all") else None
        if value is None:
            try:
                value = int(item)
            except ValueError:
                raise BertlensError(f"--sizes: '{item}' is not a number (or 'full')") from None
        if value < 2:
            raise BertlensError(f"--sizes: {value} is too small; a classifier needs at least 2 examples")
        if value > train_size:
            raise BertlensError(f"--sizes: {value} is more than the task's {train_size} training examples; "
                                f"use sizes up to {train_size} (or 'full')")
        sizes.append(value)
    if not sizes:
        raise BertlensError("--sizes is empty; e.g. 100,300,1000,full")
    return tuple(sorted(set(sizes)))


def task_splits(task: TaskData, max_dev: int | None = None) -> tuple[Split, Split, Split]:
    if task.uses_cv:
        raise BertlensError(f"task '{task.name}' has no test split (it is cross-validated); compare needs train/dev/test")
    train, test = task.splits["train"], task.splits["test"]
    dev = task.splits.get("dev")
    if dev is None:  # a seeded 10% of train, never used for training
        order = np.random.default_rng(12345).permutation(len(train))
        cut = max(1, len(train) // 10)
        dev, train = train.subset(np.sort(order[:cut])), train.subset(np.sort(order[cut:]))
    if max_dev and len(dev) > max_dev:
        dev = dev.subset(np.sort(np.random.default_rng(0).choice(len(dev), max_dev, replace=False)))
    return train, dev, test


def training_subset(train: Split, size: int, seed: int, kind: str) -> Split:
    """The first `size` rows of a seeded permutation (nested across sizes); needs two classes."""
    rows = np.random.default_rng(seed).permutation(len(train))[:size]
    subset = train.subset(np.sort(rows))
    if kind != "similarity" and len(np.unique(subset.targets)) < 2:
        raise BertlensError(f"a training subset of {size} examples (seed {seed}) has a single class; use a larger size")
    return subset


def _key(*parts) -> str:
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:16]


def _cached(path: Path, key: str, compute: Callable[[], RunResult]) -> RunResult:
    if path.is_file():
        saved = json.loads(path.read_text())
        if saved.get("key") == key:
            data = saved["run"]
            return RunResult(**{**data, "cka": tuple(data["cka"]) if data["cka"] is not None else None})
    result = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, {"key": key, "run": asdict(result)})
    return result


def _frozen_vectors(embedder: Embedder, split: Split) -> tuple[np.ndarray, np.ndarray | None]:
    u = embedder.encode(list(split.texts_a))
    v = embedder.encode(list(split.texts_b)) if split.texts_b is not None else None
    return u, v


def linear_probe_score(train_x: np.ndarray, train_y: np.ndarray, dev_x: np.ndarray, dev_y: np.ndarray,
                       test_x: np.ndarray, test_y: np.ndarray) -> tuple[float, float]:
    """(dev, test) accuracy of an L2 logistic probe with C chosen on dev."""
    fit = fit_logistic(torch.from_numpy(train_x[None].astype(np.float32)), train_y, STRENGTHS)
    dev_pred = fit.predict(torch.from_numpy(dev_x[None].astype(np.float32))).numpy()[0]  # [R, n]
    best = int((dev_pred == dev_y).mean(axis=1).argmax())
    test_pred = fit.predict(torch.from_numpy(test_x[None].astype(np.float32))).numpy()[0, best]
    return float((dev_pred[best] == dev_y).mean()), float((test_pred == test_y).mean())


def _layer_vectors(encoder: Encoder, texts: list[str]) -> np.ndarray:
    """Mean-pooled vectors of every layer [L+1, n, H] from one pass (the CKA inputs)."""
    out = np.zeros((encoder.num_layers + 1, len(texts), encoder.hidden_size), dtype=np.float32)
    with encoder.running():
        for states in encoder.iter_states(encoder.tokenize(texts)):
            mask = token_mask(states.attention_mask, states.special_tokens_mask, True)  # [B, T]
            out[:, states.doc_index.numpy()] = pool("mean", states.hidden, mask).numpy()  # [L+1, B, H]
    return out


def _drift_score(encoder: Encoder, recipe: Recipe, probe: DriftProbe) -> float:
    embedder = Embedder(recipe, encoder=encoder)
    train_x = embedder.encode(list(probe.train.texts_a))
    test_x = embedder.encode(list(probe.test.texts_a))
    # C chosen on the training rows themselves would overfit; a fixed, moderate C keeps before/after comparable
    fit = fit_logistic(torch.from_numpy(train_x[None]), probe.train.targets, (1.0,))
    predictions = fit.predict(torch.from_numpy(test_x[None])).numpy()[0, 0]
    return float((predictions == probe.test.targets).mean())


def run_compare(
    task: TaskData,
    model: str,
    recipe: Recipe,
    config: CompareConfig,
    runs_dir: Path,
    *,
    drift: DriftProbe | None = None,
    on_progress: Callable[[str, int, int], None] | None = None,
) -> CompareResult:
    progress = on_progress or (lambda stage, done, total: None)
    train_pool, dev_split, test_split = task_splits(task, config.max_dev)
    frozen_sizes = tuple(sorted(set(config.sizes) | set(config.frozen_sizes)))
    for size in frozen_sizes:
        if size > len(train_pool):
            raise BertlensError(f"size {size} is more than the {len(train_pool)} training examples of '{task.name}'")
    base = Encoder(model, max_length=recipe.max_length)
    recipe = recipe.replace(model=model, max_length=base.max_length)
    fingerprint = base.ref.fingerprint
    runs: list[RunResult] = []
    frozen = [s for s in config.strategies if not s.fine_tunes]
    tuned = [s for s in config.strategies if s.fine_tunes]
    total = len(config.seeds) * (len(frozen) * len(frozen_sizes) + len(tuned) * len(config.sizes))
    done = 0
    notes = []

    if frozen:
        start = time.perf_counter()
        embedder = Embedder(recipe, encoder=base)
        orders = {seed: np.random.default_rng(seed).permutation(len(train_pool)) for seed in config.seeds}
        needed = np.unique(np.concatenate([order[: max(frozen_sizes)] for order in orders.values()]))  # rows any subset uses
        position = np.full(len(train_pool), -1)
        position[needed] = np.arange(len(needed))
        pool_u, pool_v = _frozen_vectors(embedder, train_pool.subset(needed))
        dev_u, dev_v = _frozen_vectors(embedder, dev_split)
        test_u, test_v = _frozen_vectors(embedder, test_split)
        encode_seconds = time.perf_counter() - start
        notes.append(f"frozen: one encoding pass over {len(needed) + len(dev_split) + len(test_split)} examples took "
                     f"{encode_seconds:.1f} s, shared by every size and seed (not in per-run times)")
        for seed in config.seeds:
            for size in frozen_sizes:
                progress(f"frozen n={size} seed={seed}", done, total)
                rows = position[np.sort(orders[seed][:size])]
                training_subset(train_pool, size, seed, task.kind)  # same checks as fine-tuning
                t0 = time.perf_counter()
                if task.kind == "similarity":
                    dev = float(score(row_cosine(dev_u, dev_v), dev_split.targets, "similarity"))
                    test = float(score(row_cosine(test_u, test_v), test_split.targets, "similarity"))
                else:
                    dev, test = linear_probe_score(
                        pair_features(pool_u[rows], None if pool_v is None else pool_v[rows], task.kind),
                        train_pool.targets[needed[rows]], pair_features(dev_u, dev_v, task.kind), dev_split.targets,
                        pair_features(test_u, test_v, task.kind), test_split.targets)
                runs.append(RunResult("frozen", size, seed, test, dev, time.perf_counter() - t0))
                done += 1
        if task.kind == "similarity":
            notes.append("frozen similarity is the cosine of frozen vectors: it needs no training, so it is flat in size")

    drift_texts = list(test_split.texts_a[: config.drift_texts])
    before_layers = _layer_vectors(base, drift_texts) if tuned else None
    drift_before = _drift_score(base, recipe, drift) if (tuned and drift) else None
    dev_encoded, test_encoded = Encoded.of(base, dev_split), Encoded.of(base, test_split)
    head_kind = task.kind
    classes = int(max(train_pool.targets.max(), dev_split.targets.max(), test_split.targets.max())) + 1 if task.kind != "similarity" else 0
    score_max = float(max(train_pool.targets.max(), 1e-9)) if task.kind == "similarity" else 1.0
    for strategy in tuned:
        for seed in config.seeds:
            for size in config.sizes:
                name = f"{strategy.name}-n{size}-s{seed}"
                progress(f"{strategy.name} n={size} seed={seed}", done, total)
                train_config = replace(config.train, seed=seed)
                key = _key(fingerprint, recipe.to_dict(), strategy.name, asdict(train_config), size, seed, task.name,
                           len(train_pool), len(dev_split), len(test_split), drift.name if drift else None, config.drift_texts)

                def compute(strategy=strategy, seed=seed, size=size, name=name, train_config=train_config) -> RunResult:
                    encoder = Encoder(model, max_length=recipe.max_length)  # a fresh copy of the pre-trained weights
                    subset = training_subset(train_pool, size, seed, task.kind)
                    torch.manual_seed(seed)
                    head = Head(HeadSpec(head_kind, encoder.hidden_size * _width(recipe), classes, score_max))
                    result = fine_tune(encoder, recipe, head, strategy, Encoded.of(encoder, subset), dev_encoded, task.kind,
                                       train_config, checkpoint_dir=runs_dir / name / "checkpoint")
                    test = score(predict(encoder, recipe, head, test_encoded), test_split.targets, task.kind)
                    after = _layer_vectors(encoder, drift_texts)
                    cka = tuple(linear_cka(before_layers[k], after[k]) for k in range(len(after)))
                    drift_after = _drift_score(encoder, recipe, drift) if drift else None
                    return RunResult(strategy.name, size, seed, test, result.best_dev, result.seconds, result.epochs_run,
                                     result.steps, cka, drift_before, drift_after)

                runs.append(_cached(runs_dir / f"{name}.json", key, compute))
                shutil.rmtree(runs_dir / name, ignore_errors=True)  # the run is saved: its checkpoint is no longer needed
                done += 1
    progress("done", total, total)
    return CompareResult(task.name, task.kind, task.metric, model, recipe, config, tuple(runs),
                         drift.name if drift else None, len(test_split), tuple(notes))


def _width(recipe: Recipe) -> int:
    return len(recipe.layers) if recipe.mixer == "concat" else 1


@dataclass(frozen=True)
class CurvePoint:
    strategy: str
    size: int
    mean: float
    low: float
    high: float
    seeds: int
    seconds: float


def t_interval(values: np.ndarray) -> tuple[float, float, float]:
    """Mean and 95% Student-t interval over seeds (the interval collapses to the mean for one seed)."""
    mean = float(np.mean(values))
    if len(values) < 2:
        return mean, mean, mean
    half = float(stats.t.ppf(0.975, len(values) - 1) * np.std(values, ddof=1) / np.sqrt(len(values)))
    return mean, mean - half, mean + half


def curve(result: CompareResult) -> list[CurvePoint]:
    points = []
    for strategy in dict.fromkeys(r.strategy for r in result.runs):
        for size in sorted({r.size for r in result.runs if r.strategy == strategy}):
            chosen = [r for r in result.runs if r.strategy == strategy and r.size == size]
            mean, low, high = t_interval(np.array([r.test for r in chosen]))
            points.append(CurvePoint(strategy, size, mean, low, high, len(chosen), float(np.mean([r.seconds for r in chosen]))))
    return points


def payoff(result: CompareResult) -> str:
    """The smallest size at which some fine-tuning strategy beats the frozen probe, paired over seeds."""
    if not any(r.strategy == "frozen" for r in result.runs):
        return "no frozen baseline in this comparison"
    tuned = sorted({r.strategy for r in result.runs} - {"frozen"})
    for size in sorted({r.size for r in result.runs}):
        frozen = {r.seed: r.test for r in result.runs if r.strategy == "frozen" and r.size == size}
        for strategy in tuned:
            paired = [r.test - frozen[r.seed] for r in result.runs if r.strategy == strategy and r.size == size and r.seed in frozen]
            if len(paired) >= 2:
                mean, low, _ = t_interval(np.array(paired))
                if low > 0:
                    return (f"fine-tuning pays off from {size} training examples: {strategy} beats the frozen probe by "
                            f"{100 * mean:.1f} points (95% CI over seeds excludes 0)")
            elif len(paired) == 1 and paired[0] > 0:
                return f"with one seed, {strategy} first beats the frozen probe at {size} examples (no interval with one seed)"
    return "no fine-tuning strategy beat the frozen probe significantly at any size tried"
