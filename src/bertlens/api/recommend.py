"""`recommend` as one definition: its options, their checks, the walk, and the result a notebook reads.

    import bertlens
    advice = bertlens.recommend(data="reviews.csv", text_col="text", label_col="label", budget_minutes=3)
    advice.recipe, advice.to_pandas(), advice.save("out/recommend")   # a notebook shows `advice` as its decisions

`bertlens recommend ...` parses its flags into the same `RecommendOptions` and calls `run_recommend_command`. The
walk reads the model's weights once (models.weights_read_once). Without `out`, the finished steps are kept in a
temporary folder for the call (a rerun then starts over); with it, a rerun reuses them.
"""

from __future__ import annotations

import dataclasses
import html
import shlex
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from bertlens.api.options import at_least, finite, one_of, python_call
from bertlens.api.results import RowsResult, save_options
from bertlens.api.sources import DataOptions
from bertlens.api.sweep_models import model_names
from bertlens.errors import OptionError
from bertlens.io.run_context import check_seed
from bertlens.progress import Progress, silent

if TYPE_CHECKING:
    from bertlens.representation.recipe import Recipe
    from bertlens.workflows.recommend import Recommendation

DATA_FLAGS = (
    *("task", "data", "data_dir", "task_type", "text_col", "text_col2", "label_col", "split_col", "test", "dev"),
    *("encoding", "folds", "label_sep", "label_cols", "delimiter", "decimal", "sheet"),
)
DATA_SWITCHES = ("no_header", "label_first", "multiline")


@dataclass(frozen=True, kw_only=True)
class RecommendOptions(DataOptions):
    """Every option of `bertlens recommend`, by the name of its long flag; where the data comes from: `DataOptions`."""

    texts: Any = None
    """texts alone, no labels: the representation is chosen by label-free measures (and fine-tuning is skipped):
    .txt (one a line), .csv/.tsv/.parquet or .jsonl (with --column); from Python also a list of strings (with
    `labels`, a labelled task)"""
    model: str | Sequence[str] = "default"
    """'default', a local model directory or a hub id; repeat for several (--model A --model B): a first step chooses
    the (model, reading) across them, as `sweep --model A --model B` does, on a sample sized to a share of the budget,
    with --latency-budget-ms and --throughput-target as its price budget; the other steps run on the chosen model"""
    models: Sequence[str] | None = None
    """Python only: several models (the same as model=[...])"""
    budget_minutes: float = 15.0
    """time for all measurements (default 15)"""
    latency_budget_ms: float | None = None
    """per-text latency the served model must meet"""
    throughput_target: float | None = None
    """texts/s the served model must reach"""
    alternatives: Sequence[Path] = ()
    """faster things to serve, timed next to the recipe in the latency step: `export` directories (ONNX, int8) and
    `distill` output directories or recipe files"""
    no_int8: bool = False
    """skip the latency step's own ONNX int8 export (gated on your texts, written to OUT/onnx-int8; about a minute on
    2 cores for a 6-layer model)"""
    prompts: Sequence[str] | None = None
    """retrieval data: prompt sets the representation step scores too (as `sweep --prompts`)"""
    cache_dir: Path | None = None
    """feature-bank cache (default: inside --out)"""
    engine: Literal["local", "ray"] = "local"
    """ray: the representation step's sweep on Ray, as `sweep --engine ray` runs it (pip install 'bertlens[ray]');
    the other steps run here"""
    ray_address: str | None = None
    """join this Ray cluster (default: start a local Ray instance)"""
    ray_workers: int = 2
    """Ray actors, each with its own model (and at most this many probe tasks at once), one CPU each"""
    seed: int = 0
    """seed for sampling, splits, initialisation and data order"""
    out: Path | None = None
    """output directory, required on the command line (finished steps are reused when rerun); from Python, None runs
    in a temporary folder and saves nothing"""
    quiet: bool = False
    """no progress output"""

    def check(self) -> RecommendOptions:
        """Every check that needs no data and no model, in the options' own names."""
        finite(self)
        one_of(self)
        self.check_source()
        if self.labels is not None and self.texts is None:
            raise OptionError("{labels} goes with {texts} given as a list of strings", "labels", "texts")
        for name in ("budget_minutes", "latency_budget_ms", "throughput_target"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value <= 0):
                raise OptionError(f"{{{name}}} must be positive, got {value!r}", name)
        at_least(self, "folds", 2, "cross-validation needs two folds or more")
        at_least(self, "ray_workers", 1, "a Ray pool has one actor or more")
        check_seed(self.seed)
        names = model_names(self.model, self.models)
        if len(names) > 1 and self.texts is not None and self.labels is None:
            raise OptionError("several models cannot take {texts}: label-free scores measure each model's own "
                              "geometry, so they do not compare across models; give labelled data with {data}",
                              "texts", "data", "model")  # fmt: skip
        from bertlens.probing.candidates import parse_prompt_set

        for prompt_set in self.prompts or ():
            parse_prompt_set(prompt_set)
        model = names[0] if len(names) == 1 else list(names)
        return dataclasses.replace(
            self, model=model, models=None, alternatives=tuple(Path(p) for p in self.alternatives)
        )


@dataclass(frozen=True)
class RecommendRun(RowsResult):
    """A finished walk: each decision with its evidence, rule and confidence, the recipe they make, and `save(dir)`
    writing what `bertlens recommend` writes (plus the options)."""

    result: Recommendation
    options: RecommendOptions

    @property
    def recipe(self) -> Recipe:
        return self.result.recipe

    @property
    def decisions(self) -> tuple:
        return self.result.decisions

    def rows(self) -> list[dict]:
        return [
            {"step": d.step, "decision": d.decision, "confidence": d.confidence, "evidence": d.evidence, "rule": d.rule}
            for d in self.result.decisions
        ]

    def save(self, out: str | Path) -> dict[str, Path]:
        """report.md/.html, results.json, recipe.json and options.json under `out`."""
        from bertlens.reports.recommend import write_outputs

        out = Path(out)
        return {**write_outputs(self.result, out), "options": save_options(out, self.options)}

    def __repr__(self) -> str:
        steps = "; ".join(f"{d.step}: {d.decision}" for d in self.result.decisions)
        return f"RecommendRun(task={self.result.task!r}, model={self.result.model!r}, {steps})"

    def _repr_html_(self) -> str:
        cells = ("step", "decision", "confidence")
        head = "".join(f"<th>{c}</th>" for c in cells)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(str(row[c]))}</td>" for c in cells) + "</tr>" for row in self.rows()
        )
        return (
            f"<div><p><b>{html.escape(self.result.task)}</b> on {html.escape(self.result.model)}: "
            f"{len(self.result.decisions)} decisions in {self.result.seconds:.0f} s</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
        )


def command_sources(options: Any, in_memory: bool = False):
    """What the printed commands' DATA and TEXTS stand for: the flags that read this run's data, and a file of its
    texts (a table's text column, a BEIR corpus, the --texts file), so each printed command runs as printed. Data
    given in memory has no file to name: DATA and TEXTS stay placeholders."""
    from bertlens.workflows.decision import CommandSources

    if in_memory:
        return CommandSources()
    flags = [
        f"--{name.replace('_', '-')} {shlex.quote(str(getattr(options, name)))}"
        for name in DATA_FLAGS
        if getattr(options, name, None)
    ]
    flags += [f"--{name.replace('_', '-')}" for name in DATA_SWITCHES if getattr(options, name, False)]
    texts = "TEXTS"
    data = Path(options.data) if options.data is not None else None
    if options.texts is not None:
        texts = f"{options.texts}" + (f" --column {options.column}" if options.column else "")
    elif data is not None and data.is_dir():
        texts = f"{data / 'corpus.jsonl'} --column text"
    elif data is not None and options.text_col is not None and not options.label_first:
        texts = f"{data} --column {options.text_col}" + (" --no-header" if options.no_header else "")
    joined = " ".join(flags) if options.texts is None else f"--texts {texts}"
    return CommandSources(data=joined, texts=texts)


def _task(options: RecommendOptions, notify):
    from bertlens.api.sources import load_task, unlabelled_texts
    from bertlens.tasks.loaders import texts_task

    if options.texts is None:
        task = load_task(options)
        for note in task.notes:  # what was read (kind, dialect, folds): on stderr here, in the report by the walk
            notify(f"note: {note}")
        return task
    texts, skipped = unlabelled_texts(options)
    if skipped:
        notify(skipped)
    return texts_task(Path(options.texts).stem, texts)


def _in_memory(options: DataOptions) -> bool:
    """Whether the data was given as Python objects rather than as files."""
    return any(value is not None and not isinstance(value, str | Path) for value in (options.data, options.texts))


def _shared_data(explicit: str | None):
    """The shared data folder (the domain step's reference corpus), or None where there is none, as for a pip user
    with their own file: the step then says it had no reference; a --data-dir given must exist."""
    from bertlens.errors import BertlensError
    from bertlens.tasks.catalog import data_dir

    try:
        return data_dir(explicit)
    except BertlensError:
        if explicit:
            raise
        return None


def _walk(options: RecommendOptions, out: Path, progress: Progress, notify, in_memory: bool):
    from bertlens.io.run_context import RunContext
    from bertlens.probing.candidates import parse_prompt_set
    from bertlens.workflows.latency_step import load_alternative
    from bertlens.workflows.recommend import RecommendOptions as WalkOptions
    from bertlens.workflows.recommend import run_recommend

    alternatives = tuple(load_alternative(path) for path in options.alternatives)  # checked before any measuring
    task = _task(options, notify)
    walk = WalkOptions(
        options.budget_minutes,
        options.latency_budget_ms,
        options.throughput_target,
        alternatives,
        own_int8=not options.no_int8,
        data=_shared_data(options.data_dir),
        prompt_sets=tuple(parse_prompt_set(p) for p in options.prompts or ()),
        sources=command_sources(options, in_memory),
    )
    from bertlens.api.sweep import on_engine
    from bertlens.models import resolve_model

    model, first = options.model, None
    if isinstance(model, list | tuple):  # several: a first step chooses the encoder (api/recommend_models.py)
        from bertlens.api.recommend_models import encoder_step

        model, first, seconds = encoder_step(options, task, out, notify, progress, walk.sources.data or "DATA")
        walk = dataclasses.replace(walk, budget_minutes=max(options.budget_minutes - seconds / 60, 0.5))
    with on_engine(options, resolve_model(model)):
        result = run_recommend(task, model, RunContext(out, options.cache_dir, options.seed, progress), walk)
    if first is None:
        return result
    return dataclasses.replace(result, decisions=(first, *result.decisions), seconds=result.seconds + first.seconds)


def run_recommend_command(
    options: RecommendOptions, *, progress: Progress = silent, notify=lambda line: None
) -> RecommendRun:
    """Check the options (before any model loads), walk the steps within the budget, and save when `options.out`
    is given. `progress(stage, done, total)` and `notify(line)` are the front end's to show."""
    from bertlens.api.memory import on_disk

    checked = options.check()
    with on_disk(checked) as readable, tempfile.TemporaryDirectory(prefix="bertlens-recommend-") as scratch:
        out = Path(checked.out) if checked.out is not None else Path(scratch)
        result = _walk(readable, out, progress, notify, _in_memory(checked))
    outcome = RecommendRun(result, checked)
    if checked.out is not None:
        outcome.save(checked.out)
    return outcome


def recommend(**options: Any) -> RecommendRun:
    """Measure the data within a time budget and recommend the length strategy, adaptation, representation, frozen
    or fine-tuned, and serving precision, each with its evidence: the keywords are `bertlens recommend`'s long flags
    (see `RecommendOptions`); the data may be given in memory."""
    return python_call(RecommendOptions, run_recommend_command, options)
