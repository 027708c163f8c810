"""`longdoc` as one definition: its options, their checks, the run, and the result a notebook reads.

    import bertlens
    reading = bertlens.longdoc(task="movie_reviews", max_examples=400)   # or data=..., texts=[...], labels=[...]
    reading.to_pandas(), reading.save("out/longdoc")

`bertlens longdoc --task movie_reviews --max-examples 400` parses its flags into the same `LongdocOptions` and calls
the same `run_longdoc_command`: head / tail / head+tail truncation, strided windows with each aggregate, and chunk
classifiers, scored out of fold with paired intervals and timed.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bertlens.api.options import at_least, finite, one_of, python_call
from bertlens.api.recipe_options import RecipeOptions, recipe_of
from bertlens.api.results import RowsResult, save_options
from bertlens.api.sources import DataOptions
from bertlens.errors import OptionError
from bertlens.io.run_context import check_seed
from bertlens.progress import Progress, silent

if TYPE_CHECKING:
    from bertlens.experiments.longdoc import LongTextResult


@dataclass(frozen=True, kw_only=True)
class LongdocOptions(RecipeOptions, DataOptions):
    """Every option of `bertlens longdoc`, by the name of its long flag; the data: `DataOptions` (a labelled
    document classification task); the recipe read from each piece: `RecipeOptions`."""

    strategies: str | Sequence[str] = "all"
    """comma list of head, tail, head_tail[:H], windows[:STRIDE][:mean|max|first|weighted], hier:attention,
    hier:gru; 'all' (default): head, tail, head_tail, windows:mean, windows:max and both hier"""
    resamples: int = 1000
    """bootstrap resamples"""
    max_examples: int | None = None
    """a seeded sample of at most N documents"""
    seed: int = 0
    """seed for sampling, splits, initialisation and data order"""
    out: Path | None = None
    """output directory (the command line's default: out/longdoc; from Python, None writes nothing until save())"""
    quiet: bool = False
    """no progress output"""

    def check(self) -> LongdocOptions:
        """Every check that needs no data and no model, in the options' own names."""
        from bertlens.experiments.longdoc import DEFAULT_STRATEGIES, check_strategies
        from bertlens.metrics.bootstrap import MIN_RESAMPLES

        finite(self)
        one_of(self)
        self.check_source()
        if self.texts is not None and self.labels is None:
            raise OptionError("longdoc classifies documents: give {texts} with {labels}, or {task} or {data}",
                              "texts", "labels", "task", "data")  # fmt: skip
        at_least(self, "max_examples", 1, "leave it out for no limit")
        at_least(self, "folds", 2, "cross-validation needs two folds or more")
        at_least(self, "max_length", 2, "a model reads at least 2 tokens")
        at_least(self, "resamples", MIN_RESAMPLES, "a 95% interval's tails need draws of their own")
        check_seed(self.seed)
        if self.long_text:
            raise OptionError("{long_text} picks one reading for embed and sweep; longdoc compares {strategies}",
                              "long_text", "strategies")  # fmt: skip
        items = self.strategies.split(",") if isinstance(self.strategies, str) else list(self.strategies)
        named = tuple(s.strip() for s in items if s.strip())
        strategies = check_strategies(DEFAULT_STRATEGIES if named == ("all",) else named)
        from dataclasses import replace

        return replace(self, strategies=strategies, out=Path(self.out) if self.out is not None else None)


@dataclass(frozen=True)
class LongdocRun(RowsResult):
    """Each way of reading a long document: its out-of-fold accuracy with a 95% paired interval, whether it ties
    the best, and its speed against head truncation; `save(dir)` writes what `bertlens longdoc` writes."""

    result: LongTextResult
    options: LongdocOptions

    def rows(self) -> list[dict]:
        from bertlens.reports.longdoc import rows

        return rows(self.result)

    def save(self, out: str | Path) -> dict[str, Path]:
        """results.json, report.md/.html and options.json under `out`."""
        from bertlens.reports.longdoc import write_outputs

        out = Path(out)
        return {**write_outputs(self.result, out), "options": save_options(out, self.options)}

    def __repr__(self) -> str:
        best = max(self.rows(), key=lambda r: r["accuracy"])
        return f"LongdocRun({self.result.task}: best {best['strategy']} {best['accuracy']:.4f} of {len(self.rows())})"

    def _repr_html_(self) -> str:
        from bertlens.reports.longdoc import markdown_table

        lines = [line.strip("|").split("|") for line in markdown_table(self.result) if not line.startswith("|---")]
        head = "".join(f"<th>{html.escape(c.strip())}</th>" for c in lines[0])
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c.strip())}</td>" for c in r) + "</tr>" for r in lines[1:])
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def run_longdoc_command(options: LongdocOptions, *, progress: Progress = silent) -> LongdocRun:
    """Check the options (before any model loads), load the documents, and score every strategy."""
    from bertlens.api.memory import on_disk
    from bertlens.api.sources import load_task
    from bertlens.encoding.encoder import Encoder
    from bertlens.experiments.longdoc import LongDocConfig, compare_long_text, documents

    checked = options.check()
    with on_disk(checked) as readable:
        task = load_task(readable)
    split = documents(task)
    recipe = recipe_of(checked)
    encoder = Encoder(
        recipe.model,
        max_length=recipe.max_length,
        precision=recipe.precision,
        attentions="cls" if recipe.needs_attentions else "none",
        trust_remote_code=checked.trust_remote_code,
        device=checked.device,
    )
    result = compare_long_text(
        encoder,
        recipe.replace(max_length=encoder.max_length),
        list(split.texts_a),
        split.targets,
        checked.strategies,
        task=task.name,
        config=LongDocConfig(folds=task.folds, seed=checked.seed, resamples=checked.resamples),
        progress=progress,
    )
    outcome = LongdocRun(result, checked)
    if checked.out is not None:
        outcome.save(checked.out)
    return outcome


def longdoc(**options: Any) -> LongdocRun:
    """Compare the ways of reading documents longer than the model's limit: the keywords are `bertlens longdoc`'s
    long flags (see `LongdocOptions`); the data may be given in memory."""
    return python_call(LongdocOptions, run_longdoc_command, options)
