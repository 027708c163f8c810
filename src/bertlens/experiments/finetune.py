"""`bertlens finetune` as a library call: one strategy on one task, saved as a model directory."""

from __future__ import annotations

import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from bertlens.encoding.encoder import Encoder
from bertlens.errors import OptionError
from bertlens.io.run_context import RunContext
from bertlens.representation.apply import Representation
from bertlens.representation.recipe import Recipe
from bertlens.tasks.loaders import TaskData
from bertlens.tasks.splits import resolve_sizes, task_splits, training_subset
from bertlens.training.config import TrainConfig
from bertlens.training.heads import Head, HeadSpec
from bertlens.training.loop import FineTuneResult, autocast_at, fine_tune
from bertlens.training.objectives import Encoded, Supervised, score
from bertlens.training.saved_model import run_checkpoint, save_finetuned
from bertlens.training.strategies import parse_strategy


@dataclass(frozen=True)
class FinetuneOutcome:
    strategy: str
    train_examples: int
    result: FineTuneResult
    test: float
    recipe: Recipe  # as saved: model = the output directory, fitted ScalarMix weights included


def run_finetune(
    task: TaskData,
    recipe: Recipe,
    strategy_spec: str,
    config: TrainConfig,
    run: RunContext,
    *,
    size: str | None = None,
    max_dev: int | None = None,
) -> FinetuneOutcome:
    """Train encoder + head (+ the recipe's ScalarMix) with one strategy into `run.out`; an interrupted run resumes
    from OUT/checkpoint (`run.restart`: start over). `run.progress` counts steps."""
    out, progress = Path(run.out), run.progress
    encoder = Encoder(recipe.model, max_length=recipe.max_length, trust_remote_code=run.trust_remote_code)
    recipe = recipe.replace(max_length=encoder.max_length)
    strategy = parse_strategy(strategy_spec, encoder.num_layers)
    if not strategy.fine_tunes:
        raise OptionError(
            "{strategy} frozen trains no encoder; use `bertlens sweep` or `bertlens compare` for frozen probes",
            "strategy",
        )
    train, dev, test = task_splits(task, max_dev, config.seed)
    spec = HeadSpec.for_task(
        task.kind, recipe.output_width(encoder.hidden_size), train.targets, dev.targets, test.targets
    )
    if size:
        train = training_subset(train, resolve_sizes(size, len(train), "size")[0], config.seed, task.kind)
    checkpoint = run_checkpoint(out, run.restart)
    torch.manual_seed(config.seed)
    representation = Representation(recipe, trainable=True)
    objective = Supervised(
        encoder, representation, Head(spec), Encoded.of(encoder, train), Encoded.of(encoder, dev), task.kind
    )
    result = fine_tune(encoder, objective, strategy, config, checkpoint_dir=checkpoint, progress=progress)
    with autocast_at(config.precision):  # scored at the precision it was trained at
        test_score = score(objective.predict(Encoded.of(encoder, test)), test.targets, task.kind)
    saved = save_finetuned(
        out,
        encoder,
        representation.fitted_recipe(),
        objective.head,
        {
            "task": task.name,
            "objective": objective.name,
            "strategy": strategy.name,
            "train_examples": len(train),
            "config": asdict(config),
            "dev_history": list(result.history),
            "best_epoch": result.best_epoch,
            "dev": result.best_dev,
            "test": test_score,
            "metric": task.metric,
            "steps": result.steps,
            "seconds": round(result.seconds, 1),
            "stopped_early": result.stopped_early,
            "base_model": encoder.ref.name,
            "base_fingerprint": encoder.ref.fingerprint,
        },
    )
    shutil.rmtree(checkpoint, ignore_errors=True)
    return FinetuneOutcome(strategy.name, len(train), result, test_score, saved)
