"""`finetune` as one definition: its options, their checks, the run, and the result a notebook reads.

    import bertlens
    tuned = bertlens.finetune(task="sst2", strategy="llrd", size="1000", out="models/sst2")
    tuned.to_pandas()    # dev and test score, epochs, steps, seconds; models/sst2 works as model= everywhere

`bertlens finetune --task sst2 --strategy llrd --size 1000 --out models/sst2` parses its flags into the same
`FinetuneOptions` and calls the same `run_finetune_command`. An interrupted run resumes from OUT/checkpoint.
"""

from __future__ import annotations

import dataclasses
import html
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bertlens.api.options import at_least, finite, one_of, python_call
from bertlens.api.recipe_options import RecipeOptions, recipe_of
from bertlens.api.results import RowsResult, save_options
from bertlens.api.sources import DataOptions
from bertlens.api.training_options import TrainingOptions, training_config
from bertlens.errors import OptionError
from bertlens.io.run_context import check_seed
from bertlens.progress import Progress, silent

if TYPE_CHECKING:
    from bertlens.experiments.finetune import FinetuneOutcome


@dataclass(frozen=True, kw_only=True)
class FinetuneOptions(RecipeOptions, DataOptions, TrainingOptions):
    """Every option of `bertlens finetune`, by the name of its long flag; the task: `DataOptions`; the recipe whose
    encoder (and ScalarMix) trains: `RecipeOptions`; the schedule: `TrainingOptions`."""

    strategy: str = "full"
    """full, partial:K, gradual, llrd[:DECAY], each with optional +reinit:K"""
    size: str | None = None
    """train on a seeded subset of this many examples (default: all)"""
    max_dev: int | None = None
    """at most this many dev examples (scored every epoch)"""
    seed: int = 0
    """seed for sampling, splits, initialisation and data order"""
    out: Path | None = None
    """model directory to write (an interrupted run resumes here)"""
    quiet: bool = False
    """no progress output"""

    def check(self) -> FinetuneOptions:
        """Every check that needs no data and no model, in the options' own names."""
        finite(self)
        one_of(self)
        self.check_source()
        if self.out is None:
            raise OptionError("{out} is required: the model directory to write", "out")
        if self.texts is not None and self.labels is None:
            raise OptionError("finetune trains on labels: give {texts} with {labels}, or {task} or {data}",
                              "texts", "labels", "task", "data")  # fmt: skip
        at_least(self, "max_dev", 1, "leave it out for the whole dev split")
        at_least(self, "folds", 2, "cross-validation needs two folds or more")
        at_least(self, "max_length", 2, "a model reads at least 2 tokens")
        check_seed(self.seed)
        training_config(self, self.seed)  # the schedule's own checks, before any model loads
        return dataclasses.replace(self, out=Path(self.out))


@dataclass(frozen=True)
class FinetuneRun(RowsResult):
    """A fine-tuned model in `out` (a Hugging Face directory with its recipe): its dev and test scores, the epochs
    and steps it trained, and the time."""

    outcome: FinetuneOutcome
    task: str
    metric: str
    options: FinetuneOptions

    @property
    def recipe(self):
        return self.outcome.recipe

    def rows(self) -> list[dict]:
        r = self.outcome.result
        return [{"task": self.task, "strategy": self.outcome.strategy, "train_examples": self.outcome.train_examples,
                 "metric": self.metric, "dev": r.best_dev, "best_epoch": r.best_epoch + 1, "test": self.outcome.test,
                 "epochs": r.epochs_run, "steps": r.steps, "seconds": r.seconds}]  # fmt: skip

    def __repr__(self) -> str:
        row = self.rows()[0]
        return (f"FinetuneRun({self.task} {row['strategy']}: dev {row['dev']:.4f}, test {row['test']:.4f}; model in "
                f"{self.options.out})")  # fmt: skip

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(repr(self))}</p>"


def run_finetune_command(options: FinetuneOptions, *, progress: Progress = silent) -> FinetuneRun:
    """Check the options (before any model loads), load the task, and fine-tune into `out` (options.json beside)."""
    from bertlens.api.memory import on_disk
    from bertlens.api.sources import load_task
    from bertlens.experiments.finetune import run_finetune
    from bertlens.io.run_context import RunContext

    checked = options.check()
    with on_disk(checked) as readable:
        task = load_task(readable)
    run = RunContext(out=checked.out, seed=checked.seed, progress=progress,
                     trust_remote_code=checked.trust_remote_code, restart=checked.restart)  # fmt: skip
    outcome = run_finetune(task, recipe_of(checked), checked.strategy, training_config(checked, checked.seed), run,
                           size=checked.size, max_dev=checked.max_dev)  # fmt: skip
    save_options(checked.out, checked)
    return FinetuneRun(outcome, task.name, task.metric, checked)


def finetune(**options: Any) -> FinetuneRun:
    """Fine-tune an encoder (and a ScalarMix recipe's weights) with one strategy: the keywords are `bertlens
    finetune`'s long flags (see `FinetuneOptions`); the data may be given in memory."""
    return python_call(FinetuneOptions, run_finetune_command, options)
