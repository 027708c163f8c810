"""`contrastive` as one definition: its options, their checks, the run, and the result a notebook reads.

    import bertlens
    tuned = bertlens.contrastive(texts=sentences, out="models/simcse")              # SimCSE on raw sentences
    tuned = bertlens.contrastive(mode="pairs", task="stsb", out="models/pairs")     # pairs scored >= min_score

`bertlens contrastive --texts FILE --out DIR` parses its flags into the same `ContrastiveOptions` and calls the same
`run_contrastive_command`: the one training loop, so strategies, checkpoints and resume apply.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from bertlens.api.options import at_least, finite, one_of, python_call
from bertlens.api.recipe_options import RecipeOptions, recipe_of
from bertlens.api.results import RowsResult, save_options
from bertlens.api.training_options import ContrastiveTraining, training_config
from bertlens.errors import OptionError
from bertlens.io.run_context import check_seed
from bertlens.progress import Progress, silent

if TYPE_CHECKING:
    from bertlens.experiments.contrastive import Examples


@dataclass(frozen=True, kw_only=True)
class ContrastiveOptions(RecipeOptions, ContrastiveTraining):
    """Every option of `bertlens contrastive`, by the name of its long flag; the recipe whose encoder trains:
    `RecipeOptions`; the schedule (SimCSE's by default): `ContrastiveTraining`."""

    mode: Literal["simcse", "pairs"] = "simcse"
    """simcse: raw sentences, dropout as noise; pairs: (anchor, positive) pairs"""
    texts: Any = None
    """simcse: sentences, .txt (one a line), .csv/.tsv/.parquet or .jsonl (with --column); from Python also a list of
    strings"""
    column: str | None = None
    """for --texts CSV/TSV/Parquet/JSONL: the text column (header name or 0-based index) or field"""
    pairs: Path | None = None
    """pairs: a CSV/TSV/JSONL file with --text-col and --text-col2"""
    task: str | None = None
    """a catalog task: its texts (simcse) or its pairs scored >= --min-score (pairs)"""
    text_col: str | None = None
    """--pairs: anchor column (header name or 0-based index)"""
    text_col2: str | None = None
    """--pairs: positive column"""
    no_header: bool = False
    """--pairs: the CSV/TSV has no header row"""
    min_score: float = 4.0
    """--task with pairs: keep training pairs scored at least this"""
    data_dir: str | None = None
    """where the shared data lives: catalog tasks, UD EWT (default $BERTLENS_DATA or ../shared/data)"""
    max_texts: int | None = None
    """a seeded sample of at most N sentences or pairs"""
    strategy: str = "full"
    """which encoder blocks train: full, partial:K, gradual, llrd[:D]"""
    temperature: float = 0.05
    """InfoNCE temperature (SimCSE: 0.05)"""
    seed: int = 0
    """seed for sampling, splits, initialisation and data order"""
    out: Path | None = None
    """model directory to write (an interrupted run resumes here)"""
    quiet: bool = False
    """no progress output"""

    def check(self) -> ContrastiveOptions:
        """Every check that needs no data and no model, in the options' own names."""
        finite(self)
        one_of(self)
        if self.out is None:
            raise OptionError("{out} is required: the model directory to write", "out")
        given = [name for name in ("texts", "pairs", "task") if getattr(self, name) is not None]
        if len(given) != 1:
            raise OptionError("give exactly one of {texts}, {pairs} or {task}", "texts", "pairs", "task")
        if self.mode == "simcse" and self.pairs is not None:
            raise OptionError("{mode} simcse takes {texts} or {task}; {pairs} is for {mode} pairs",
                              "mode", "texts", "task", "pairs")  # fmt: skip
        if self.mode == "pairs" and self.texts is not None:
            raise OptionError("{mode} pairs takes {pairs} or {task}; {texts} is for {mode} simcse",
                              "mode", "pairs", "task", "texts")  # fmt: skip
        if self.pairs is not None and (self.text_col is None or self.text_col2 is None):
            raise OptionError("{pairs} needs {text_col} and {text_col2} (the anchor and positive columns)",
                              "pairs", "text_col", "text_col2")  # fmt: skip
        if self.texts is not None and not isinstance(self.texts, str | Path):
            if not isinstance(self.texts, Sequence) or not all(isinstance(t, str) for t in self.texts):
                raise OptionError("{texts} must be a file path or a list of strings", "texts")
        at_least(self, "max_texts", 2, "leave it out for every text")
        at_least(self, "max_length", 2, "a model reads at least 2 tokens")
        if self.temperature <= 0:
            raise OptionError(f"{{temperature}} must be positive, got {self.temperature}", "temperature")
        check_seed(self.seed)
        training_config(self, self.seed)  # the schedule's own checks, before any model loads
        return replace(self, out=Path(self.out))


@dataclass(frozen=True)
class ContrastiveRun(RowsResult):
    """A contrastively trained model in `out` (a model directory every command accepts): how many examples and
    steps, the loss from the first steps to the last, and the time."""

    result: Any  # training.loop.FineTuneResult
    examples: int
    source: str
    options: ContrastiveOptions

    def rows(self) -> list[dict]:
        r = self.result
        return [{"mode": self.options.mode, "examples": self.examples, "source": self.source, "steps": r.steps,
                 "first_loss": r.first_loss, "last_loss": r.last_loss, "seconds": r.seconds}]  # fmt: skip

    def __repr__(self) -> str:
        r = self.result
        return (f"ContrastiveRun({self.options.mode}: {self.examples} examples, {r.steps} steps, loss "
                f"{r.first_loss:.3f} -> {r.last_loss:.3f}; model in {self.options.out})")  # fmt: skip

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(repr(self))}</p>"


def examples_of(options: ContrastiveOptions) -> Examples:
    """The training examples the options name: sentences (simcse) or (anchor, positive) pairs."""
    from bertlens.api.sources import file_texts
    from bertlens.experiments.contrastive import Examples, file_pairs, task_pairs
    from bertlens.io.tables import TableSpec, is_blank, parse_column
    from bertlens.tasks.catalog_fetch import load_catalog

    if options.task:
        task = load_catalog(options.task, options.data_dir)
        if options.mode == "simcse":
            return Examples(task.all_texts(), None, f"task {options.task}")
        return task_pairs(task, options.min_score)
    if options.texts is not None:
        if isinstance(options.texts, str | Path):
            return Examples(file_texts(Path(options.texts), options.column), None, str(options.texts))
        return Examples([t for t in options.texts if not is_blank(t)], None, f"{len(options.texts)} texts in memory")
    columns = (parse_column(options.text_col), parse_column(options.text_col2))
    return file_pairs(TableSpec(Path(options.pairs), columns, header=not options.no_header))


def run_contrastive_command(options: ContrastiveOptions, *, progress: Progress = silent) -> ContrastiveRun:
    """Check the options (before any model loads), read the examples, and train into `out` (options.json beside)."""
    from bertlens.experiments.contrastive import run_contrastive

    checked = options.check()
    examples = examples_of(checked).sample(checked.max_texts, checked.seed)
    result, _ = run_contrastive(examples, recipe_of(checked), training_config(checked, checked.seed), checked.out,
                                temperature=checked.temperature, strategy_spec=checked.strategy,
                                restart=checked.restart, trust_remote_code=checked.trust_remote_code,
                                progress=progress)  # fmt: skip
    save_options(checked.out, checked)
    return ContrastiveRun(result, len(examples.anchors), examples.source, checked)


def contrastive(**options: Any) -> ContrastiveRun:
    """Contrastive fine-tuning for similarity (SimCSE on sentences, or positive pairs): the keywords are `bertlens
    contrastive`'s long flags (see `ContrastiveOptions`); the sentences may be given as a list."""
    return python_call(ContrastiveOptions, run_contrastive_command, options)
