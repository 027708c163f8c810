"""`run_sweep` and `run_texts_sweep`: one encoding pass, then every protocol that applies, by one dispatch."""

from __future__ import annotations

import contextlib
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from bertlens.encoding.encoder import Encoder
from bertlens.errors import BertlensError, OptionError, literal
from bertlens.features.bank import build_bank, stage_rows
from bertlens.io.cache import default_cache_dir
from bertlens.io.memory import release_freed_memory
from bertlens.probing.candidates import candidate_features
from bertlens.probing.truncation import similarity_loss
from bertlens.progress import Progress, counting, silent
from bertlens.representation.choices import attentions_for
from bertlens.representation.recipe import Recipe
from bertlens.tasks.kinds import CLASS, JUDGEMENTS, LABEL_SET, NONE, SCORE
from bertlens.tasks.loaders import TaskData, texts_task

from .choice import make_result
from .config import SweepConfig, check_config
from .context import SweepContext, examples, sweep_folds
from .label_free import labelled_trust, score_texts
from .late_interaction import PROTOCOL, with_late_interaction
from .registry import OPT_IN, PROTOCOLS
from .results import SweepResult
from .retrieval import retrieval_dimension_loss, retrieval_protocols
from .stages import staged, staged_sweep


def run_sweep(
    task: TaskData,
    encoder: Encoder | str = "default",
    base: Recipe = Recipe(),
    cache_dir: Path | None = None,
    config: SweepConfig = SweepConfig(),
    progress: Progress = silent,
) -> SweepResult:
    """Score every candidate on `task` with one encoding pass; recommend a Recipe.

    `encoder`: an Encoder, or a model name (built with what the poolers need); `base`: what every
    candidate shares (max_length, precision, include_special, long_text); `cache_dir`: where banks
    are cached (default $BERTLENS_CACHE or ~/.cache/bertlens). A setting the task's kind cannot apply
    is refused before any work, in the CLI's words (sweep_pkg/config.check_config).
    """
    check_config(config, task.kind, task.name)
    if base.long_text_strategy is not None and base.long_text_strategy.per_piece:
        raise OptionError(
            f"{{long_text}} {literal(base.long_text)} keeps one vector per chunk; the sweep scores one vector per "
            "text (for retrieval, {long_documents} also scores the maxp readings): use windows, late or chunks with "
            "mean",
            "long_text",
            "long_documents",
        )
    if staged(task, config):
        encoder, base = _prepared(encoder, base, config)
        return staged_sweep(task, encoder, base, cache_dir, config, progress, _bank_sweep)
    return SWEEPS[task.kind.target](task, encoder, base, cache_dir, config, progress)


def _texts_sweep(task: TaskData, encoder, base: Recipe, cache_dir, config: SweepConfig, progress) -> SweepResult:
    """Texts alone (a kind without targets): the label-free protocol chooses."""
    return run_texts_sweep(task.all_texts(), task.name, encoder, base, cache_dir, config, progress)


def _prepared(encoder, base: Recipe, config: SweepConfig) -> tuple[Encoder, Recipe]:
    """The encoder built with what the poolers read, and the base recipe naming its model and length (seeded)."""
    encoder = _sweep_encoder(encoder, base, config)
    model = base.model if base.model != "default" else encoder.ref.name
    torch.manual_seed(config.seed)
    return encoder, base.replace(model=model, max_length=encoder.max_length)


def _bank_sweep(
    task: TaskData, encoder, base: Recipe, cache_dir, config: SweepConfig, progress, bank_texts: list[str] | None = None
) -> SweepResult:
    """Labels or scores per text (or pair): one bank of every layer x pooler, then every protocol the kind lists.

    `bank_texts`: the bank's rows when `task` is a stage of a larger task (its texts are among them): the bank keeps
    the whole task's key and encodes only this stage's rows (features/bank.py, `rows`)."""
    encoder, base = _prepared(encoder, base, config)
    texts = task.all_texts() if bank_texts is None else bank_texts
    rows = None
    if bank_texts is not None:
        position = {text: i for i, text in enumerate(bank_texts)}
        rows = np.array([position[text] for text in task.all_texts()], dtype=np.int64)
    bank, timings = _bank(encoder, texts, base, cache_dir, config, progress, rows)
    release_freed_memory()  # the encoding pass's activations: not needed by the probes
    ex, where = examples(task, {text: i for i, text in enumerate(texts)})
    folds = sweep_folds(task, ex.targets, where, config)
    ctx = SweepContext(task, bank, ex, folds, config, encoder, base, cache_dir, texts, progress)
    protocols, label_free = {}, None
    wanted = _wanted(task, config)
    for number, name in enumerate(wanted):
        progress(counting(f"probing ({name})", "protocols"), number, len(wanted))
        start = time.perf_counter()
        protocol = PROTOCOLS[name]
        outcome = protocol.run(ctx, protocol.plan(ctx))
        protocols[name] = outcome.result
        timings[f"{name}_seconds"] = time.perf_counter() - start
        timings.update(outcome.result.seconds)
        label_free = outcome.extra if name == "label_free" else label_free
    trust = None
    if label_free is not None:
        trust = labelled_trust(label_free, protocols[task.kind.main_protocol], ctx)
    result = make_result(task, encoder, base, config, bank.width, protocols, timings, ctx.fitted, f"{len(folds)} folds")
    if task.kind.target == SCORE and task.kind.pair:  # cosine of the two texts: what a shorter width loses
        result = replace(result, recipe=result.recipe.replace(dimension_loss=_dimension_loss(result, ctx)))
    return replace(result, label_free=label_free, trust=trust, rows=len(ex.targets))


def _wanted(task: TaskData, config: SweepConfig) -> tuple[str, ...]:
    """The protocols to run, in the kind's order: those asked for, else every one that is not opt-in (and, for
    similarity under cross-validation, cosine alone: the k-fold ridge probe costs several times the rest)."""
    if config.protocols is not None:
        return tuple(p for p in task.kind.protocols if p in config.protocols)
    if task.uses_cv and task.kind.target == SCORE and task.kind.pair:
        return (task.kind.main_protocol,)
    return tuple(p for p in task.kind.protocols if p not in OPT_IN)


def _retrieval_sweep(task, encoder, base: Recipe, cache_dir, config: SweepConfig, progress) -> SweepResult:
    """Judged queries over a corpus: the retrieval protocols read the collection, not a bank of the task's texts."""
    encoder, base = _prepared(encoder, base, config)
    protocols, scores, timings, free, trust = retrieval_protocols(task, encoder, base, cache_dir, config, progress)
    result = make_result(
        task, encoder, base, config, encoder.hidden_size, protocols, timings, scores.processors, "the choosing queries"
    )
    loss = retrieval_dimension_loss(result, scores, task, config)
    notes = result.notes
    if scores.unfitted:
        notes += (
            f"{len(scores.unfitted)} post-processed candidates ({', '.join(scores.unfitted[:3])}"
            f"{', ...' if len(scores.unfitted) > 3 else ''}) have no score: '{config.postprocess or 'whiten'}' could "
            f"not be fitted on {len(task.collection.documents)} documents of {encoder.hidden_size} dimensions (whitening "
            "needs more documents than dimensions); the plain candidates are scored",
        )
    recipe = result.recipe.replace(dimension_loss=loss)
    result = replace(
        result, label_free=free, trust=trust, recipe=recipe, notes=notes, rows=len(task.collection.queries)
    )
    if config.protocols and PROTOCOL in config.protocols:
        result = with_late_interaction(result, task, encoder, scores, cache_dir, config, progress)
    return result


# How each kind of target is swept: the kind's own field decides (tasks/kinds.py), never its name. A new kind with
# one of these targets needs no change here; a new kind of target is one entry.
SWEEPS = {
    NONE: _texts_sweep,
    CLASS: _bank_sweep,
    SCORE: _bank_sweep,
    LABEL_SET: _bank_sweep,
    JUDGEMENTS: _retrieval_sweep,
}


def _sweep_encoder(encoder: Encoder | str, base: Recipe, config: SweepConfig) -> Encoder:
    if not isinstance(encoder, str):
        return encoder
    attentions = attentions_for(config.poolers)
    return Encoder(encoder, max_length=base.max_length, precision=base.precision, attentions=attentions)


def _dimension_loss(result: SweepResult, ctx: SweepContext):
    """The recommended recipe's cosine Spearman lost at each shorter width, on the rows it was scored on."""
    chosen, main, ex = result.recommended, result.main, ctx.ex
    rows = np.concatenate([f.test for f in ctx.folds])
    weights = main.mix_weights.get(chosen.name)
    mix = np.asarray(weights) if weights is not None else None
    transform = result.postprocessor.transform if result.postprocessor is not None else (lambda x: x)
    first, second = (transform(candidate_features(ctx.bank, chosen, side[rows], mix)) for side in (ex.a, ex.b))
    return similarity_loss(first, second, ex.targets[rows]) or None


def _bank(encoder: Encoder, texts: list[str], base: Recipe, cache_dir, config: SweepConfig, progress, rows=None):
    """The one encoding pass (every layer x pooler, as the shared recipe settings say; only `rows` of `texts` when
    given) and its wall time."""
    start = time.perf_counter()
    with stage_rows(rows) if rows is not None else contextlib.nullcontext():
        bank = build_bank(
            encoder,
            texts,
            default_cache_dir(cache_dir),
            poolers=config.poolers,
            include_special=base.include_special,
            dtype=config.bank_dtype,
            long_text=base.long_text_strategy,
            progress=progress,
        )
    return bank, {"bank_seconds": time.perf_counter() - start}


def run_texts_sweep(
    texts: list[str],
    name: str,
    encoder: Encoder | str = "default",
    base: Recipe = Recipe(),
    cache_dir: Path | None = None,
    config: SweepConfig = SweepConfig(),
    progress: Progress = silent,
) -> SweepResult:
    """No labels: score every candidate from the texts alone and recommend the label-free pick.

    One encoding pass builds the bank (shared with a later labelled sweep of the same texts), three
    more over a sample of the texts build the augmented views."""
    texts = list(dict.fromkeys(t for t in texts))
    if config.max_texts is not None:
        if config.max_texts < 8:
            raise OptionError("{max_examples} must be at least 8 for {texts}", "max_examples", "texts")
        keep = np.sort(np.random.default_rng(config.seed).permutation(len(texts))[: config.max_texts])
        texts = [texts[i] for i in keep]
    if len(texts) < 8:
        raise BertlensError(f"{name}: {len(texts)} distinct texts; label-free scores need at least 8 (more is better)")
    task = texts_task(name, texts)
    check_config(config, task.kind, name)
    encoder = _sweep_encoder(encoder, base, config)
    model = base.model if base.model != "default" else encoder.ref.name
    base = base.replace(model=model, max_length=encoder.max_length)
    torch.manual_seed(config.seed)
    bank, timings = _bank(encoder, texts, base, cache_dir, config, progress)
    start = time.perf_counter()
    protocol, scores = score_texts(bank, encoder, texts, base, cache_dir, config, progress)
    timings["label_free_seconds"] = time.perf_counter() - start
    result = make_result(task, encoder, base, config, bank.width, {"label_free": protocol}, timings, {}, "")
    return replace(result, label_free=scores, rows=len(texts))
