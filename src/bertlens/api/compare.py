"""`compare` as one definition: its options, their checks, the run, and the result a notebook reads.

    import bertlens
    curves = bertlens.compare(task="sst2", sizes="100,1000", strategies="frozen,full", seeds=2)
    curves.to_pandas(), curves.plot(), curves.payoff, curves.save("out/compare")

`bertlens compare --task sst2 --sizes 100,1000 ...` parses its flags into the same `CompareOptions` and calls the
same `run_compare_command`: learning curves of a frozen probe and fine-tuning strategies, with intervals over seeds,
wall time, the size where fine-tuning pays off, and representation drift.
"""

from __future__ import annotations

import html
import tempfile
from dataclasses import dataclass, replace
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
    from bertlens.experiments.compare import CompareResult


@dataclass(frozen=True, kw_only=True)
class CompareOptions(RecipeOptions, DataOptions, TrainingOptions):
    """Every option of `bertlens compare`, by the name of its long flag; the task: `DataOptions`; the recipe:
    `RecipeOptions`; the schedule of every fine-tuning run: `TrainingOptions`."""

    sizes: str = "100,300,1000,3000"
    """training sizes, comma list; 'full' = all of train"""
    frozen_sizes: str = "full"
    """extra sizes scored by the frozen probe only (cheap; default 'full', the whole training split; '' for none)"""
    strategies: str = "frozen,partial:4,full,gradual"
    """comma list of frozen, full, partial:K, gradual, llrd[:DECAY], each with optional +reinit:K"""
    seeds: int = 3
    """number of seeds (0..N-1) per size and strategy"""
    drift_task: str | None = None
    """catalog task whose linear-probe score is watched for forgetting (default: trec, or sst2 when tuning on trec;
    'none' to skip)"""
    drift_texts: int = 500
    """held-out test texts for per-layer CKA"""
    max_dev: int | None = None
    """at most this many dev examples (scored every epoch)"""
    seed: int = 0
    """seed for sampling, splits, initialisation and data order"""
    out: Path | None = None
    """output directory, finished runs are reused (the command line's default: out/compare; from Python, None runs
    in a temporary folder and writes nothing until save())"""
    quiet: bool = False
    """no progress output"""

    def check(self) -> CompareOptions:
        """Every check that needs no data and no model, in the options' own names."""
        finite(self)
        one_of(self)
        self.check_source()
        if self.texts is not None and self.labels is None:
            raise OptionError("compare trains on labels: give {texts} with {labels}, or {task} or {data}",
                              "texts", "labels", "task", "data")  # fmt: skip
        at_least(self, "seeds", 1, "one seed or more")
        at_least(self, "drift_texts", 2, "a per-layer CKA compares two texts or more")
        at_least(self, "max_dev", 1, "leave it out for the whole dev split")
        at_least(self, "folds", 2, "cross-validation needs two folds or more")
        at_least(self, "max_length", 2, "a model reads at least 2 tokens")
        check_seed(self.seed)
        training_config(self, 0)  # the schedule's own checks, before any model loads
        return replace(self, out=Path(self.out)) if self.out is not None else self


@dataclass(frozen=True)
class CompareRun(RowsResult):
    """Learning curves: every (strategy, size, seed) run's test score, dev score and time; `plot()` draws the curves
    with their intervals, `payoff` says from which size fine-tuning pays, `save(dir)` writes what `bertlens compare`
    writes."""

    result: CompareResult
    options: CompareOptions

    @property
    def payoff(self) -> str:
        from bertlens.experiments.compare import payoff

        return payoff(self.result)

    def rows(self) -> list[dict]:
        from dataclasses import asdict

        return [asdict(run) for run in self.result.runs]

    def plot(self):
        """Test score by training size, one line per strategy, 95% intervals over seeds: a matplotlib Figure."""
        from bertlens.reports.compare import learning_curve_figure

        return learning_curve_figure(self.result)

    def save(self, out: str | Path) -> dict[str, Path]:
        """results.json, learning_curves.png (and cka.png), report.md/.html and options.json under `out`."""
        from bertlens.reports.compare import write_outputs

        out = Path(out)
        return {**write_outputs(self.result, out), "options": save_options(out, self.options)}

    def __repr__(self) -> str:
        return f"CompareRun({self.result.task}: {len(self.result.runs)} runs; {self.payoff})"

    def _repr_html_(self) -> str:
        from bertlens.reports.compare import table_rows

        header, rows = table_rows(self.result)
        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
        return (f"<div><p>{html.escape(self.payoff)}</p><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
                "</table></div>")  # fmt: skip


def run_compare_command(options: CompareOptions, *, progress: Progress = silent) -> CompareRun:
    """Check the options (before any model loads), load the task, and run every strategy x size x seed (finished
    runs cached in OUT/runs, so a rerun resumes)."""
    from bertlens.api.memory import on_disk
    from bertlens.api.sources import load_task
    from bertlens.experiments.compare import CompareConfig, drift_probe, run_compare
    from bertlens.models import resolve_model
    from bertlens.tasks.catalog import data_dir
    from bertlens.training.strategies import parse_strategies

    checked = options.check()
    with on_disk(checked) as readable:
        task = load_task(readable)
    recipe = recipe_of(checked)
    strategies = parse_strategies(checked.strategies, resolve_model(recipe.model).num_layers)
    config = CompareConfig(
        sizes=checked.sizes,  # resolved against the training split by run_compare, which makes it
        strategies=strategies,
        frozen_sizes=checked.frozen_sizes,
        seeds=tuple(range(checked.seeds)),
        train=training_config(checked, 0),
        drift_texts=checked.drift_texts,
        max_dev=checked.max_dev,
    )
    drift = None
    if any(s.fine_tunes for s in strategies):
        drift = drift_probe(checked.drift_task, task.name, data_dir(checked.data_dir), checked.seed)
    with tempfile.TemporaryDirectory(prefix="bertlens-compare-") as folder:
        runs = (checked.out or Path(folder)) / "runs"
        result = run_compare(task, recipe.model, recipe, config, runs, drift=drift, seed=checked.seed,
                             progress=progress)  # fmt: skip
    outcome = CompareRun(result, checked)
    if checked.out is not None:
        outcome.save(checked.out)
    return outcome


def compare(**options: Any) -> CompareRun:
    """Learning curves of a frozen probe and fine-tuning strategies: the keywords are `bertlens compare`'s long flags
    (see `CompareOptions`); the data may be given in memory."""
    return python_call(CompareOptions, run_compare_command, options)
