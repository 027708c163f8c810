"""`sweep` as one definition: its options, their checks, the run, and the result a notebook reads.

    import bertlens
    run = bertlens.sweep(task="stsb", max_examples=300, seed=1)        # or data="reviews.csv", text_col=..., ...
    run = bertlens.sweep(texts=["a review", ...], labels=["pos", ...])  # data in memory
    run.recipe, run.to_pandas(), run.plot(), run.save("out/stsb")       # a notebook shows `run` as a table

`bertlens sweep --task stsb --max-examples 300 --seed 1` parses its flags into the same `SweepOptions` (a flag
--max-examples is the keyword max_examples) and calls the same `run_sweep_command`, so both give the same rows and
recipe, and refuse the same values with the same line, worded for each (tests/api/test_sweep.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from bertlens.api.options import at_least, finite, one_of, python_call
from bertlens.api.recipe_options import EncoderOptions
from bertlens.api.results import RowsResult, save_options
from bertlens.api.sources import DataOptions
from bertlens.errors import OptionError
from bertlens.io.run_context import check_seed
from bertlens.progress import Progress, silent
from bertlens.representation.choices import DEFAULT_POOLERS

if TYPE_CHECKING:
    from bertlens.experiments.sweep import SweepResult
    from bertlens.representation.recipe import Recipe

LABELLED_ONLY = ("protocols", "long_documents", "prompts", "postprocess_steps")  # what --texts cannot take
MIN_TEXTS_SAMPLE = 8  # a label-free sweep's sample: its scores need a spread of texts


def _names(value: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """'a,b' or ['a', 'b'] -> ('a', 'b'); None stays None."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else [str(v) for v in value]
    return tuple(item.strip() for item in items if item.strip())


@dataclass(frozen=True, kw_only=True)
class SweepOptions(EncoderOptions, DataOptions):
    """Every option of `bertlens sweep`, by the name of its long flag (`--max-examples` is `max_examples`); where the
    data comes from: `DataOptions`; the model: `EncoderOptions`."""

    model: str | Sequence[str] | None = None
    """'default' (all-MiniLM-L6-v2), a local model directory or a hub id; repeat for several (--model A --model B):
    every model's candidates on the same rows, folds and resamples, one leaderboard across models, each model's price
    measured on your texts here, and the choice of a (model, reading) by quality and price"""
    models: Sequence[str] | None = None
    """Python only: several models (the same as model=[...])"""
    min_texts_per_second: float | None = None
    """several models: choose among those whose reading runs at least this fast here (texts/s on your texts)"""
    max_latency_ms: float | None = None
    """several models: choose among those that embed one text within this many milliseconds here"""
    prefer: Literal["speed", "quality"] = "speed"
    """several models: speed (the default) takes the fastest (model, reading) tied with the best on the choosing
    data; quality takes the best, naming a cheaper tie beside it"""
    texts: Any = None
    """texts alone, no labels: every candidate scored from label-free measures (effective rank, matrix entropy,
    anisotropy, alignment under dropout and word dropout, uniformity) and the best recommended: .txt (one a line),
    .csv/.tsv/.parquet or .jsonl (with --column); from Python also a list of strings (with `labels`, a labelled
    task)"""
    layers: str | Sequence[int] | None = None
    """single layers to score (default all), e.g. '-4:' or '0,3,6' (from Python also [0, 3, 6])"""
    poolers: str | Sequence[str] = ",".join(DEFAULT_POOLERS)
    """comma list of poolers"""
    max_examples: int | None = None
    """at most this many examples per split (a seeded sample)"""
    long_text: str | None = None
    """texts over the limit: head (default), tail, head_tail[:HEAD], windows[:STRIDE][:mean|max|first|weighted]
    (compare them with `bertlens longdoc`)"""
    postprocess_steps: str | None = None
    """similarity tasks: also score every candidate after these steps, fitted on the training texts (e.g. whiten, or
    center,abtt)"""
    exclude_special: bool = False
    """pool without [CLS]/[SEP]"""
    long_documents: bool = False
    """retrieval: also read the documents of the best candidate as head_tail, windows, independent 64-token chunks
    and late chunks, each aggregated by mean or scored by its best piece (one encoding pass per way of cutting:
    four)"""
    prompts: Sequence[str] | None = None
    """retrieval: also score every candidate with these prompts before queries and documents (one more encoding pass
    each; repeat for several), e.g. --prompts 'e5=query: |passage: '"""
    resamples: int = 1000
    """bootstrap resamples"""
    rows: Literal["auto", "all"] = "all"
    """all (the default): score every row. auto: on 30,000 rows or more, look at growing stages (10,000, 20,000,
    40,000, ... rows, seeded, classes spread evenly) and stop when no candidate can be ahead of the pick by more than
    --settle-tolerance on the rows read, nor on its trend carried to every row, every interval widened for the looks
    (Bonferroni) so they keep 95% coverage; the report says where it stopped and the time saved. It settles the
    choice at the rows read: a wide candidate whose gain comes late can still win on every row (measured: see
    docs/guide.md, "Large data"). Fewer rows, retrieval and texts alone: every row"""
    settle_tolerance: float = 0.005
    """--rows auto: how far ahead of the pick (in the task's metric) another candidate may still be when the sweep
    stops"""
    protocols: str | Sequence[str] | None = None
    """comma list of protocols to run (default: all the task supports). Similarity: cosine (no training; what a
    recommendation is made by) and probe (a ridge probe on pair features, costly under cross-validation);
    classification: probe (what a recommendation is made by) and clustering (V-measure of k-means with k = the
    number of labels, as MTEB; opt in with --protocols probe,clustering). Both, and similarity: label_free (the
    scores --texts uses, and how far they can be trusted on this task: their correlation with the labelled score,
    the label-free pick's regret, and how often a choice from 25-500 labels lands on the best). Retrieval: cosine (what
    a recommendation is made by), late_interaction (no pooling: MaxSim over every token's vector, per layer, then
    ColBERT's filters and a reduction to 128 for the best; its pick is written as recipe.late_interaction.json) and
    label_free"""
    bank_dtype: Literal["float16", "float32"] = "float16"
    """precision of the stored feature bank: float16 halves memory and disk; float32 makes every score equal to what
    the recommended recipe gives (whitening can amplify float16 rounding on ill-conditioned spaces)"""
    cache_dir: Path | None = None
    """feature-bank cache (default $BERTLENS_CACHE or ~/.cache/bertlens)"""
    engine: Literal["local", "ray"] = "local"
    """ray: encode the feature bank on a pool of Ray actors (pip install 'bertlens[ray]'), each holding the model
    once, and run the probe stages of tasks with 5,000 rows or more as Ray tasks; the bank, its cache and
    checkpoints stay on this machine, and the scores are the local run's"""
    ray_address: str | None = None
    """join this Ray cluster (default: start a local Ray instance)"""
    ray_workers: int = 2
    """Ray actors, each with its own model (and at most this many probe tasks at once), one CPU each"""
    seed: int = 0
    """seed for sampling, splits, initialisation and data order"""
    out: Path | None = None
    """output directory (the command line's default: out/sweep; from Python, None writes nothing until save())"""
    quiet: bool = False
    """no progress output"""

    def check(self) -> SweepOptions:
        """Every check that needs no data and no model, in the options' own names; the options, normalised."""
        finite(self)
        one_of(self)
        self.check_source()
        alone = self.texts is not None and self.labels is None
        why = "leave it out for no limit" + ("; a label-free sample needs a spread of texts" if alone else "")
        at_least(self, "max_examples", MIN_TEXTS_SAMPLE if alone else 1, why)
        at_least(self, "folds", 2, "cross-validation needs two folds or more")
        at_least(self, "max_length", 2, "a model reads at least 2 tokens")
        from bertlens.metrics.bootstrap import MIN_RESAMPLES

        at_least(self, "resamples", MIN_RESAMPLES, "a 95% interval's tails need draws of their own")
        at_least(self, "ray_workers", 1, "a Ray pool has one actor or more")
        if not 0 < self.settle_tolerance < 1:
            raise OptionError(
                f"{{settle_tolerance}} {self.settle_tolerance} is not between 0 and 1 (a difference in the task's "
                "metric, e.g. 0.005)",
                "settle_tolerance",
            )
        check_seed(self.seed)
        checked = self._models()
        if self.texts is not None and self.labels is None:
            given = [name for name in LABELLED_ONLY if getattr(self, name)]
            if given:
                raise OptionError(
                    f"{{texts}} takes texts alone; {{{given[0]}}} belongs to {{data}} (a labelled file)",
                    "texts",
                    given[0],
                    "data",
                )
        return checked._parsed()

    def _models(self) -> SweepOptions:
        """`model` (one name or several) and `models` as one tuple; what several models cannot take, refused."""
        from bertlens.api.sweep_models import model_names

        names = model_names(self.model, self.models)
        budget = [n for n in ("min_texts_per_second", "max_latency_ms") if getattr(self, n) is not None]
        if len(names) < 2 and (budget or self.prefer != "speed"):
            given = budget[0] if budget else "prefer"
            raise OptionError(f"{{{given}}} chooses among several models; give two or more with {{model}}", given,
                              "model")  # fmt: skip
        if len(names) > 1:
            for name, value, why in (
                ("texts", self.texts is not None and self.labels is None, "label-free scores measure each model's "
                 "own geometry, so they do not compare across models: give labelled data with {data}"),
                ("rows", self.rows == "auto", "each model would stop at its own rows, breaking the pairing: leave "
                 "{rows} all"),
            ):  # fmt: skip
                if value:
                    raise OptionError(f"several models cannot take {{{name}}}: {why}", name, "data", "model")
        return dataclasses.replace(self, model=names[0] if len(names) == 1 else list(names) or None, models=None)

    @property
    def model_names(self) -> tuple[str, ...]:
        """The models to sweep, once checked: one name, or several (options.json records them under `model`)."""
        return tuple(self.model) if isinstance(self.model, list | tuple) else ((self.model,) if self.model else ())

    def _parsed(self) -> SweepOptions:
        """Poolers, protocols and prompt sets checked by their parsers (one line each for a bad name)."""
        from bertlens.probing.candidates import parse_prompt_set
        from bertlens.representation.choices import check_pooler
        from bertlens.representation.postprocess import parse_steps

        poolers = tuple(check_pooler(p) for p in _names(self.poolers) or ())
        if not poolers:
            raise OptionError("{poolers} names no pooler", "poolers")
        if self.postprocess_steps:
            parse_steps(self.postprocess_steps)
        for prompt_set in self.prompts or ():
            parse_prompt_set(prompt_set)
        layers = self.layers if self.layers is None or isinstance(self.layers, str) else ",".join(map(str, self.layers))
        return dataclasses.replace(self, poolers=poolers, protocols=_names(self.protocols), layers=layers)


@dataclass(frozen=True)
class SweepRun(RowsResult):
    """A finished sweep: the recommended recipe, every candidate's scores as a table, the plots, and `save(dir)`
    writing exactly what `bertlens sweep` writes (plus the options that made it)."""

    result: SweepResult
    options: SweepOptions

    @property
    def recipe(self) -> Recipe:
        return self.result.recipe

    @property
    def recommended(self) -> str:
        return self.result.recommended.name

    @property
    def notes(self) -> tuple[str, ...]:
        return self.result.notes

    def rows(self) -> list[dict]:
        """One row per (protocol, candidate): results.json's rows."""
        from bertlens.reports.sweep import result_rows

        return result_rows(self.result)

    def plot(self, protocol: str | None = None):
        """The layer x pooler grid of test scores of `protocol` (default: the one the recommendation is made by),
        as a matplotlib Figure."""
        from bertlens.reports.sweep import heatmap_figure

        name = protocol or self.result.kind.main_protocol
        if name not in self.result.protocols:
            ran = ", ".join(self.result.protocols)
            raise OptionError(f"{{protocol}} '{name}' did not run; these did: {ran}", "protocol")
        chosen = self.result.protocols[name]
        return heatmap_figure(chosen, f"{self.result.task}: {name} ({chosen.metric}), {self.result.model}")

    def save(self, out: str | Path) -> dict[str, Path]:
        """results.json, recipe.json, the heatmaps, report.md/.html and options.json under `out`."""
        from bertlens.reports.sweep import write_outputs

        out = Path(out)
        return {**write_outputs(self.result, out), "options": save_options(out, self.options)}

    def __repr__(self) -> str:
        main = self.result.main
        return (
            f"SweepRun(task={self.result.task!r}, model={self.result.model!r}, recommended={self.recommended!r}, "
            f"{len(main.candidates)} candidates scored by {main.protocol} ({main.metric}))"
        )

    def _repr_html_(self) -> str:
        """A notebook's view: what was recommended and why, and the top of the main leaderboard."""
        from bertlens.reports.sweep import interval_level, leaderboard, recommended_score

        main = self.result.main
        level = interval_level(self.result)
        head = "".join(f"<th>{html.escape(h)}</th>" for h in ("#", "candidate", f"score [{level} CI]", ""))
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in row) + "</tr>"
            for row in leaderboard(main)
        )
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        return (
            f"<div><p><b>{html.escape(self.result.task)}</b> on {html.escape(self.result.model)}: recommended "
            f"<b>{html.escape(self.recommended)}</b> ({html.escape(recommended_score(self.result))}); "
            f"{html.escape(self.result.basis)}</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
            + (f"<ul>{notes}</ul>" if notes else "")
            + "</div>"
        )


def _base_and_encoder(options: SweepOptions):
    """What every candidate shares (the sweep chooses layers, mixer and pooler; the user fixes the rest), and the
    encoder built with what the poolers need."""
    from bertlens.encoding.encoder import Encoder
    from bertlens.representation.choices import attentions_for
    from bertlens.representation.recipe import Recipe

    base = Recipe(
        model=options.model or "default",
        max_length=options.max_length,
        precision=options.precision or "fp32",
        include_special=not options.exclude_special,
        long_text=options.long_text,
    )
    encoder = Encoder(
        base.model,
        max_length=base.max_length,
        precision=base.precision,
        attentions=attentions_for(options.poolers),
        trust_remote_code=options.trust_remote_code,
        device=options.device,
    )
    return base, encoder


def _config(options: SweepOptions, encoder, **more):
    from bertlens.experiments.sweep import SweepConfig
    from bertlens.representation.choices import parse_layers

    layers = parse_layers(options.layers, encoder.num_layers) if options.layers else None
    return SweepConfig(
        poolers=options.poolers,
        layers=layers,
        seed=options.seed,
        bank_dtype=options.bank_dtype,
        rows=options.rows,
        settle_tolerance=options.settle_tolerance,
        **more,
    )


def on_engine(options, model):
    """The run's banks encoded on Ray actors and its large probe stages run as Ray tasks (engine 'ray':
    probing/ray_jobs.py), else everything here."""
    if options.engine != "ray":
        return contextlib.nullcontext()
    from bertlens.probing.ray_jobs import sweep_on_ray

    return sweep_on_ray(model, address=options.ray_address, workers=options.ray_workers)


def _labelled(options: SweepOptions, notify, progress: Progress):
    """A labelled task swept with the one model, or with several (api/sweep_models.py)."""
    task = _labelled_task(options, notify)
    if len(options.model_names) > 1:
        from bertlens.api.sweep_models import run_across_models

        return run_across_models(options, task, notify, progress, _base_and_encoder, _sweep_task)
    return _sweep_task(options, task, *_base_and_encoder(options), progress)


def _labelled_task(options: SweepOptions, notify):
    """The task, checked against the sweep's settings, with what the loader did said."""
    from bertlens.api.sources import load_task
    from bertlens.experiments.sweep import SweepConfig, check_config
    from bertlens.probing.candidates import parse_prompt_set

    prompt_sets = tuple(parse_prompt_set(p) for p in options.prompts or ())
    task = load_task(options)
    check_config(
        SweepConfig(options.poolers, prompt_sets=prompt_sets, long_documents=options.long_documents),
        task.kind,
        task.name,
    )
    if task.collection is not None:
        notify(f"{task.name}: {task.collection.describe()}" + "".join(f"; {note}" for note in task.notes))
    else:
        if task.dropped:
            notify(f"dropped {task.dropped} invalid rows (--drop-invalid)")
        for note in task.notes:  # what the loader did to the user's splits (overlap dropped, unseen labels)
            notify(f"note: {note}")
    return task


def _sweep_task(options: SweepOptions, task, base, encoder, progress: Progress) -> SweepResult:
    """One model's sweep of a loaded task."""
    from bertlens.experiments.sweep import run_sweep
    from bertlens.io.cache import default_cache_dir
    from bertlens.probing.candidates import parse_prompt_set

    prompt_sets = tuple(parse_prompt_set(p) for p in options.prompts or ())
    config = _config(
        options,
        encoder,
        resamples=options.resamples,
        postprocess=options.postprocess_steps,
        protocols=options.protocols,
        prompt_sets=prompt_sets,
        long_documents=options.long_documents,
    )
    cache = default_cache_dir(options.cache_dir)
    with on_engine(options, encoder.ref):
        return run_sweep(task, encoder, base.replace(max_length=encoder.max_length), cache, config, progress=progress)


def _texts_alone(options: SweepOptions, notify, progress: Progress) -> SweepResult:
    from bertlens.api.sources import unlabelled_texts
    from bertlens.experiments.sweep import run_texts_sweep
    from bertlens.io.cache import default_cache_dir

    texts, skipped = unlabelled_texts(options)
    if skipped:
        notify(skipped)
    base, encoder = _base_and_encoder(options)
    config = _config(options, encoder, max_texts=options.max_examples)
    name = Path(options.texts).stem
    cache = default_cache_dir(options.cache_dir)
    with on_engine(options, encoder.ref):
        return run_texts_sweep(texts, name, encoder, base.replace(max_length=encoder.max_length), cache, config,
                               progress)  # fmt: skip


def run_sweep_command(options: SweepOptions, *, progress: Progress = silent, notify=lambda line: None):
    """Check the options (before any model loads), load the data, sweep, and save when `options.out` is given.
    `progress(stage, done, total)` and `notify(line)` (what the loader did) are the front end's to show."""
    from bertlens.api.memory import on_disk

    checked = options.check()
    with on_disk(checked) as readable:
        run = _texts_alone if readable.texts is not None else _labelled
        result = run(readable, notify, progress)
    if len(checked.model_names) > 1:
        from bertlens.api.sweep_models import ModelsSweepRun

        outcome = ModelsSweepRun(result, checked)
    else:
        outcome = SweepRun(result, checked)
    if checked.out is not None:
        outcome.save(checked.out)
    return outcome


def sweep(**options: Any):
    """Score every token / layer / pooling choice on a task in one encoding pass and recommend one: the keywords
    are `bertlens sweep`'s long flags (see `SweepOptions`); the data may be given in memory. With several models
    (`model=[...]` or `models=[...]`) a `ModelsSweepRun`: one leaderboard across models, their prices, the choice."""
    return python_call(SweepOptions, run_sweep_command, options)
