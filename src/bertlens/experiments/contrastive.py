"""`bertlens contrastive` as a library call: where the sentences or pairs come from, then the one training
loop with the Contrastive objective (so every strategy, checkpoints and exact resume apply)."""

from __future__ import annotations

import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from bertlens.encoding.encoder import Encoder
from bertlens.errors import BertlensError, OptionError
from bertlens.io.tables import TableSpec, is_blank, iter_records
from bertlens.progress import Progress, silent
from bertlens.representation.apply import Representation
from bertlens.representation.recipe import Recipe
from bertlens.tasks.loaders import TaskData
from bertlens.training.config import TrainConfig
from bertlens.training.loop import FineTuneResult, fine_tune
from bertlens.training.objectives import Contrastive
from bertlens.training.saved_model import run_checkpoint, save_finetuned
from bertlens.training.strategies import parse_strategy

# SimCSE's settings (Gao et al. 2021): one epoch, batch 64, lr 3e-5, no warmup or decay of weights


@dataclass(frozen=True)
class Examples:
    anchors: list[str]
    positives: list[str] | None  # None: unsupervised SimCSE
    source: str

    def sample(self, limit: int | None, seed: int) -> Examples:
        """A seeded sample of at most `limit` examples (pairs stay pairs)."""
        if not limit or len(self.anchors) <= limit:
            return self
        keep = np.sort(np.random.default_rng(seed).choice(len(self.anchors), limit, replace=False))
        positives = None if self.positives is None else [self.positives[i] for i in keep]
        return Examples([self.anchors[i] for i in keep], positives, self.source)


def task_pairs(task: TaskData, min_score: float) -> Examples:
    """A pair task's training pairs (similarity: those scored >= min_score) as (anchor, positive)."""
    train = task.splits.get("train") or next(iter(task.splits.values()))
    if train.texts_b is None:
        raise BertlensError(f"task '{task.name}' has single texts; --mode pairs needs a pair task such as stsb")
    keep = np.ones(len(train), dtype=bool) if task.kind.classes else train.targets >= min_score
    rows = np.flatnonzero(keep)
    return Examples(
        [train.texts_a[i] for i in rows], [train.texts_b[i] for i in rows], f"{task.name} train pairs >= {min_score}"
    )


def file_pairs(spec: TableSpec) -> Examples:
    """(anchor, positive) pairs from two columns of a CSV/TSV/JSONL file; an empty side names its line."""
    anchors, positives = [], []
    for line, (a, b) in iter_records(spec):
        if is_blank(a) or is_blank(b):
            raise BertlensError(f"{spec.path}:{line}: empty text in a pair; remove the row")
        anchors.append(a)
        positives.append(b)
    return Examples(anchors, positives, str(spec.path))


def run_contrastive(
    examples: Examples,
    recipe: Recipe,
    config: TrainConfig,
    out: Path,
    *,
    temperature: float = 0.05,
    strategy_spec: str = "full",
    restart: bool = False,
    trust_remote_code: bool = False,
    progress: Progress = silent,
) -> tuple[FineTuneResult, Recipe]:
    """Train and save a model directory every command accepts; an interrupted run resumes from OUT/checkpoint."""
    if config.batch_size < 2:
        raise OptionError(f"{{batch_size}} must be at least 2 (the other examples of a batch are the negatives), "
                          f"got {config.batch_size}", "batch_size")  # fmt: skip
    if temperature <= 0:
        raise OptionError(f"{{temperature}} must be positive, got {temperature}", "temperature")
    encoder = Encoder(recipe.model, max_length=recipe.max_length, trust_remote_code=trust_remote_code)
    recipe = recipe.replace(max_length=encoder.max_length, postprocess=None)
    strategy = parse_strategy(strategy_spec, encoder.num_layers)
    if not strategy.fine_tunes:
        raise BertlensError("--strategy frozen trains nothing; contrastive training needs a trainable encoder")
    representation = Representation(recipe, trainable=True)
    anchors = encoder.tokenize(examples.anchors)
    positives = encoder.tokenize(examples.positives) if examples.positives is not None else None
    objective = Contrastive(encoder, representation, anchors, positives, temperature)
    checkpoint = run_checkpoint(out, restart)
    result = fine_tune(encoder, objective, strategy, config, checkpoint_dir=checkpoint, progress=progress)
    saved = save_finetuned(
        out,
        encoder,
        representation.fitted_recipe(),
        None,
        {
            "objective": objective.name,
            "source": examples.source,
            "examples": len(examples.anchors),
            "strategy": strategy.name,
            "temperature": temperature,
            "config": asdict(config),
            "steps": result.steps,
            "first_loss": result.first_loss,
            "last_loss": result.last_loss,
            "seconds": round(result.seconds, 1),
            "base_model": encoder.ref.name,
            "base_fingerprint": encoder.ref.fingerprint,
        },
    )
    shutil.rmtree(checkpoint, ignore_errors=True)
    return result, saved
