"""Frozen vs fine-tuned on the user's task: learning curves over training sizes, seeds and strategies.

Training subsets are nested (one seeded permutation per seed, the first `size` rows), so a
curve shows the effect of more data, not of a different sample. The frozen strategy encodes
every text once and trains a logistic probe (C chosen on dev, as the sweep chooses it); each
fine-tuning run starts from a fresh copy of the encoder. Every finished run is saved under
`runs_dir`, so an interrupted comparison resumes where it stopped. Fine-tuned runs also measure
drift: linear CKA per layer between the encoder before and after, on held-out texts, and the
change of a linear probe's score on a second, unrelated task.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from bertlens.embedding.embedder import Embedder
from bertlens.encoding.encoder import Encoder
from bertlens.errors import BertlensError
from bertlens.features.layers import layer_vectors
from bertlens.io.cache import cached_result, content_key
from bertlens.metrics.cka import linear_cka
from bertlens.metrics.geometry import row_cosine
from bertlens.metrics.intervals import METRIC_RANGES, t_interval
from bertlens.models import weights_read_once
from bertlens.probing.frozen_probe import frozen_probe_score
from bertlens.probing.logistic import fit_logistic
from bertlens.progress import Progress, silent
from bertlens.representation.apply import Representation
from bertlens.representation.pairs import pair_features
from bertlens.representation.recipe import Recipe
from bertlens.tasks.catalog import CATALOG, get_task
from bertlens.tasks.kinds import SCORE
from bertlens.tasks.loaders import Split, TaskData, load_catalog_task
from bertlens.tasks.splits import resolve_sizes, task_splits, training_subset
from bertlens.training.config import TrainConfig
from bertlens.training.heads import Head, HeadSpec
from bertlens.training.loop import autocast_at, fine_tune
from bertlens.training.objectives import Encoded, Supervised, score
from bertlens.training.strategies import Strategy

DRIFT_TRAIN, DRIFT_TEST = 1000, 500  # a seeded sample of the drift task: enough for a stable linear probe


@dataclass(frozen=True)
class CompareConfig:
    sizes: tuple[int, ...] | str  # training sizes, or a spec like '100,300,full' resolved against the training split
    strategies: tuple[Strategy, ...]
    seeds: tuple[int, ...] = (0, 1, 2)
    frozen_sizes: tuple[int, ...] | str = ()  # extra sizes for the frozen probe only (cheap), e.g. the full train set
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


def drift_probe(name: str | None, task_name: str, data_dir: Path, seed: int) -> DriftProbe | None:
    """The second task watched for forgetting: `name`, or TREC (SST-2 when tuning on TREC); 'none' for no probe."""
    name = name or ("sst2" if task_name == "trec" else "trec")
    if name == "none":
        return None
    if name not in CATALOG or CATALOG[name].uses_cv or not CATALOG[name].kind.single_text_classes:
        raise BertlensError(
            f"--drift-task '{name}' must be a catalog classification task with a test split (sst2 or trec), or 'none'"
        )
    try:
        data = load_catalog_task(get_task(name), data_dir)
    except BertlensError as exc:
        raise BertlensError(f"{exc} (needed for --drift-task {name}; pass --drift-task none to skip)") from None
    rng = np.random.default_rng(seed)
    train, test = data.splits["train"], data.splits["test"]

    def sample(split: Split, n: int) -> Split:
        return split.subset(np.sort(rng.choice(len(split), min(n, len(split)), replace=False)))

    return DriftProbe(name, sample(train, DRIFT_TRAIN), sample(test, DRIFT_TEST))


def _frozen_vectors(embedder: Embedder, split: Split) -> tuple[np.ndarray, np.ndarray | None]:
    u = embedder.encode(list(split.texts_a))
    v = embedder.encode(list(split.texts_b)) if split.texts_b is not None else None
    return u, v


def _cosine_baseline(task: TaskData) -> bool:
    """A score of a pair: frozen vectors are compared by their cosine, with nothing trained."""
    return task.kind.target == SCORE and task.kind.pair


def _drift_score(encoder: Encoder, recipe: Recipe, probe: DriftProbe) -> float:
    embedder = Embedder(recipe, encoder=encoder)
    train_x = embedder.encode(list(probe.train.texts_a))
    test_x = embedder.encode(list(probe.test.texts_a))
    # C chosen on the training rows themselves would overfit; a fixed, moderate C keeps before/after comparable
    fit = fit_logistic(torch.from_numpy(train_x[None]), probe.train.targets, (1.0,))
    predictions = fit.predict(torch.from_numpy(test_x[None])).numpy()[0, 0]
    return float((predictions == probe.test.targets).mean())


@dataclass(frozen=True)
class _Splits:
    train: Split
    dev: Split
    test: Split


def _frozen_runs(
    task: TaskData,
    base: Encoder,
    recipe: Recipe,
    config: CompareConfig,
    splits: _Splits,
    sizes: tuple[int, ...],
    progress: Progress,
    done: int,
    total: int,
) -> tuple[list[RunResult], list[str]]:
    """One encoding pass shared by every size and seed, then a probe (or plain cosine for similarity) per run."""
    start = time.perf_counter()
    embedder = Embedder(recipe, encoder=base)
    orders = {seed: np.random.default_rng(seed).permutation(len(splits.train)) for seed in config.seeds}
    needed = np.unique(np.concatenate([order[: max(sizes)] for order in orders.values()]))  # rows any subset uses
    position = np.full(len(splits.train), -1)
    position[needed] = np.arange(len(needed))
    pool_u, pool_v = _frozen_vectors(embedder, splits.train.subset(needed))
    dev_u, dev_v = _frozen_vectors(embedder, splits.dev)
    test_u, test_v = _frozen_vectors(embedder, splits.test)
    notes = [
        f"frozen: one encoding pass over {len(needed) + len(splits.dev) + len(splits.test)} examples took "
        f"{time.perf_counter() - start:.1f} s, shared by every size and seed (not in per-run times)"
    ]
    runs = []
    for seed in config.seeds:
        for size in sizes:
            progress(f"frozen n={size} seed={seed}", done, total)
            rows = position[np.sort(orders[seed][:size])]
            training_subset(splits.train, size, seed, task.kind)  # same checks as fine-tuning
            t0 = time.perf_counter()
            if _cosine_baseline(task):  # a pair's score: the frozen baseline is the cosine of frozen vectors
                dev = score(row_cosine(dev_u, dev_v), splits.dev.targets, task.kind)
                test = score(row_cosine(test_u, test_v), splits.test.targets, task.kind)
            else:
                dev, test = frozen_probe_score(
                    task.kind,
                    pair_features(pool_u[rows], None if pool_v is None else pool_v[rows], task.kind),
                    splits.train.targets[needed[rows]],
                    pair_features(dev_u, dev_v, task.kind),
                    splits.dev.targets,
                    pair_features(test_u, test_v, task.kind),
                    splits.test.targets,
                )
            runs.append(RunResult("frozen", size, seed, test, dev, time.perf_counter() - t0))
            done += 1
    if _cosine_baseline(task):
        notes.append("frozen similarity is the cosine of frozen vectors: it needs no training, so it is flat in size")
    return runs, notes


@dataclass(frozen=True)
class _Baseline:
    """What every fine-tuning run of one comparison shares: the task and its splits, the model and recipe, and the
    drift probe with the frozen encoder's measurements to compare against."""

    task: TaskData
    model: str
    recipe: Recipe
    splits: _Splits
    drift: DriftProbe | None
    drift_texts: list[str]
    before: np.ndarray | None  # the frozen encoder's layer vectors of the drift texts
    drift_before: float | None


def _tuned_run(base: _Baseline, strategy: Strategy, size: int, train_config: TrainConfig, run_dir: Path) -> RunResult:
    """Fine-tune a fresh copy of the encoder on a nested subset; score test and measure drift."""
    task, recipe, splits, drift, drift_texts = base.task, base.recipe, base.splits, base.drift, base.drift_texts
    before, drift_before = base.before, base.drift_before
    encoder = Encoder(base.model, max_length=recipe.max_length)
    subset = training_subset(splits.train, size, train_config.seed, task.kind)
    torch.manual_seed(train_config.seed)
    spec = HeadSpec.for_task(
        task.kind,
        recipe.output_width(encoder.hidden_size),
        splits.train.targets,
        splits.dev.targets,
        splits.test.targets,
    )
    representation = Representation(recipe, trainable=True)
    objective = Supervised(
        encoder, representation, Head(spec), Encoded.of(encoder, subset), Encoded.of(encoder, splits.dev), task.kind
    )
    result = fine_tune(encoder, objective, strategy, train_config, checkpoint_dir=run_dir / "checkpoint")
    with autocast_at(train_config.precision):  # scored at the precision it was trained at
        test = score(objective.predict(Encoded.of(encoder, splits.test)), splits.test.targets, task.kind)
    after = layer_vectors(encoder, drift_texts)["mean"]
    cka = tuple(linear_cka(before[k], after[k]) for k in range(len(after)))
    drift_after = _drift_score(encoder, representation.fitted_recipe(), drift) if drift else None
    return RunResult(
        strategy.name,
        size,
        train_config.seed,
        test,
        result.best_dev,
        result.seconds,
        result.epochs_run,
        result.steps,
        cka,
        drift_before,
        drift_after,
    )


def _run_from_dict(data: dict) -> RunResult:
    return RunResult(**{**data, "cka": tuple(data["cka"]) if data["cka"] is not None else None})


def _resolved(config: CompareConfig, train_size: int) -> CompareConfig:
    """Size specs ('100,300,full') turned into sizes against the training split, checked there (errors name the flag)."""
    sizes = resolve_sizes(config.sizes, train_size) if isinstance(config.sizes, str) else config.sizes
    frozen = config.frozen_sizes
    if isinstance(frozen, str):
        frozen = resolve_sizes(frozen, train_size, "frozen_sizes") if frozen.strip() else ()
    return replace(config, sizes=sizes, frozen_sizes=frozen)


def run_compare(
    task: TaskData,
    model: str,
    recipe: Recipe,
    config: CompareConfig,
    runs_dir: Path,
    *,
    drift: DriftProbe | None = None,
    seed: int = 0,
    progress: Progress = silent,
) -> CompareResult:
    """Every strategy x size x seed; finished fine-tuning runs are cached in `runs_dir` (a rerun resumes). The model's
    weights are read once: every fine-tuning run starts from a fresh copy in memory (models.weights_read_once)."""
    with weights_read_once():
        return _compare(task, model, recipe, config, runs_dir, drift, seed, progress)


def _compare(task, model, recipe, config, runs_dir, drift, seed, progress) -> CompareResult:
    splits = _Splits(*task_splits(task, config.max_dev, seed))
    config = _resolved(config, len(splits.train))
    frozen_sizes = tuple(sorted(set(config.sizes) | set(config.frozen_sizes)))
    for size in frozen_sizes:
        if size > len(splits.train):
            raise BertlensError(f"size {size} is more than the {len(splits.train)} training examples of '{task.name}'")
    base = Encoder(model, max_length=recipe.max_length)
    recipe = recipe.replace(model=model, max_length=base.max_length)
    frozen = [s for s in config.strategies if not s.fine_tunes]
    tuned = [s for s in config.strategies if s.fine_tunes]
    total = len(config.seeds) * (len(frozen) * len(frozen_sizes) + len(tuned) * len(config.sizes))
    runs, notes = [], []
    if frozen:
        runs, notes = _frozen_runs(task, base, recipe, config, splits, frozen_sizes, progress, 0, total)
    drift_texts = list(splits.test.texts_a[: config.drift_texts])
    before = layer_vectors(base, drift_texts)["mean"] if tuned else None
    drift_before = _drift_score(base, recipe, drift) if (tuned and drift) else None
    baseline = _Baseline(task, model, recipe, splits, drift, drift_texts, before, drift_before)
    for strategy in tuned:
        for seed_ in config.seeds:
            for size in config.sizes:
                name = f"{strategy.name}-n{size}-s{seed_}"
                progress(f"{strategy.name} n={size} seed={seed_}", len(runs), total)
                train_config = replace(config.train, seed=seed_)
                key = content_key(
                    [
                        base.ref.fingerprint,
                        recipe.to_dict(),
                        strategy.name,
                        asdict(train_config),
                        size,
                        seed_,
                        task.name,
                        len(splits.train),
                        len(splits.dev),
                        len(splits.test),
                        drift.name if drift else None,
                        config.drift_texts,
                    ]
                )
                runs.append(
                    cached_result(
                        runs_dir / f"{name}.json",
                        key,
                        lambda strategy=strategy, size=size, train_config=train_config, name=name: _tuned_run(
                            baseline, strategy, size, train_config, runs_dir / name
                        ),
                        asdict,
                        _run_from_dict,
                    )
                )
                shutil.rmtree(
                    runs_dir / name, ignore_errors=True
                )  # the run is saved: its checkpoint is no longer needed
    progress("done", total, total)
    return CompareResult(
        task.name,
        task.kind.name,
        task.metric,
        model,
        recipe,
        config,
        tuple(runs),
        drift.name if drift else None,
        len(splits.test),
        tuple(notes),
    )


@dataclass(frozen=True)
class CurvePoint:
    strategy: str
    size: int
    mean: float
    low: float
    high: float
    seeds: int
    seconds: float


def curve(result: CompareResult) -> list[CurvePoint]:
    points = []
    for strategy in dict.fromkeys(r.strategy for r in result.runs):
        for size in sorted({r.size for r in result.runs if r.strategy == strategy}):
            chosen = [r for r in result.runs if r.strategy == strategy and r.size == size]
            mean, low, high = t_interval(np.array([r.test for r in chosen]), METRIC_RANGES.get(result.metric))
            points.append(
                CurvePoint(strategy, size, mean, low, high, len(chosen), float(np.mean([r.seconds for r in chosen])))
            )
    return points


def payoff(result: CompareResult) -> str:
    """The smallest size at which some fine-tuning strategy beats the frozen probe, paired over seeds."""
    if not any(r.strategy == "frozen" for r in result.runs):
        return "no frozen baseline in this comparison"
    tuned = sorted({r.strategy for r in result.runs} - {"frozen"})
    for size in sorted({r.size for r in result.runs}):
        frozen = {r.seed: r.test for r in result.runs if r.strategy == "frozen" and r.size == size}
        for strategy in tuned:
            paired = [
                r.test - frozen[r.seed]
                for r in result.runs
                if r.strategy == strategy and r.size == size and r.seed in frozen
            ]
            if len(paired) >= 2:
                mean, low, _ = t_interval(np.array(paired))
                if low > 0:
                    return (
                        f"fine-tuning pays off from {size} training examples: {strategy} beats the frozen probe by "
                        f"{100 * mean:.1f} points (95% CI over seeds excludes 0)"
                    )
            elif len(paired) == 1 and paired[0] > 0:
                return f"with one seed, {strategy} first beats the frozen probe at {size} examples (no interval with one seed)"
    return "no fine-tuning strategy beat the frozen probe significantly at any size tried"
