"""Step 1 of `recommend`: text length vs the model's limit -> truncate, head+tail or windows (measured where the
labelled documents and the budget allow, else the rule of thumb, marked as such)."""

from __future__ import annotations

import numpy as np

from bertlens.encoding.encoder import Encoder
from bertlens.encoding.precision import choose_precision
from bertlens.experiments.longdoc import LongDocConfig, compare_long_text, documents
from bertlens.progress import Progress, silent
from bertlens.representation.recipe import Recipe
from bertlens.tasks.loaders import Split, TaskData
from bertlens.workflows.decision import Decision, sample_rows

LONG_SHARE = 0.05  # above this share of texts over the limit, truncation is no longer a safe default

LONGDOC_SAMPLE = 400  # documents for the measured long-text comparison (5-fold CV): intervals of about +-4 points

LONGDOC_MIN = 40  # fewer labelled long documents than this cannot rank strategies


def step_lengths(
    task: TaskData,
    encoder: Encoder,
    seed: int,
    *,
    recipe: Recipe | None = None,
    measure: bool = True,
    progress: Progress = silent,
) -> Decision:
    """Truncate, head+tail or windows: from the share of texts over the limit and, for labelled documents, a
    measured comparison of the three on a sample (`measure=False` when the budget cannot cover it)."""
    texts = sample_rows(task.all_texts(), 5000, seed)
    lengths = np.array([len(ids) for ids in encoder.tokenizer(texts, add_special_tokens=True)["input_ids"]])
    limit = encoder.max_length
    over = float((lengths > limit).mean())
    evidence = (
        f"{len(texts)} texts: median {int(np.median(lengths))} tokens, 95th percentile {int(np.percentile(lengths, 95))}, "
        f"{100 * over:.1f}% over the model's limit of {limit}"
    )
    rule = f"truncation is safe when fewer than {100 * LONG_SHARE:.0f}% of texts are cut"
    if over < LONG_SHARE:
        return Decision("text length", "truncate at the limit (the default)", evidence, rule, "measured")
    head_tail = f"head_tail:{limit // 4}"  # a quarter head, the rest tail: Sun et al. (2019)'s 128 + 382 of 510
    documents = _long_documents(task)
    comparable = documents is not None and len(documents) >= LONGDOC_MIN and _two_per_class(documents)
    measured = None
    if measure and comparable:
        measured = _measured_long_text(
            documents, encoder, recipe or Recipe(model=encoder.ref.name), head_tail, seed, evidence, rule, progress
        )
        if measured is not None:
            return measured
    strategy = "windows:mean" if np.median(lengths) > 2 * limit else head_tail
    if documents is None:
        why = f"a {task.kind.name} task has no labels to compare strategies on"
    elif len(documents) < LONGDOC_MIN:
        why = f"only {len(documents)} labelled documents (the comparison needs {LONGDOC_MIN})"
    elif not comparable or measure:
        why = "a class has a single document (cross-validation needs two per class)"
    else:
        why = "the budget left no time to compare strategies"
    return Decision(
        "text length",
        f"use a long-text strategy: --long-text {strategy}",
        evidence,
        rule + "; windows when the median text is over twice the limit, head+tail otherwise (measured on "
        "movie_reviews in docs/results-log.md: both beat truncation)",
        f"rule of thumb: {why}; lengths measured (compare strategies with `bertlens longdoc`)",
        (
            "bertlens longdoc DATA --out OUT/longdoc",
            f"bertlens embed TEXTS --recipe OUT/recipe.json --long-text {strategy} --out vectors.npy",
        ),
        {"long_text": strategy},
    )


def _two_per_class(docs: Split) -> bool:
    return bool(np.unique(np.asarray(docs.targets), return_counts=True)[1].min() >= 2)


def _long_documents(task: TaskData) -> Split | None:
    """Every labelled document of a classification task, or None (other kinds: no comparison to run)."""
    return documents(task) if task.kind.single_text_classes else None


def _measured_long_text(
    docs: Split, encoder: Encoder, recipe: Recipe, head_tail: str, seed: int, evidence: str, rule: str, progress
) -> Decision | None:
    """head vs head+tail vs windows:mean on a seeded sample, 5-fold out-of-fold accuracy with intervals.

    The choice is the cheapest strategy tied with the best (truncation < head+tail < windows): only the choice's
    rule sees the scores, and each score is out-of-fold, so no number reported was fitted on what scores it.
    """
    rows = sample_rows(list(range(len(docs))), LONGDOC_SAMPLE, seed)
    texts = [docs.texts_a[i] for i in rows]
    labels = np.asarray(docs.targets)[rows]
    strategies = ("head", head_tail, "windows:mean")  # cheapest first
    folds = int(min(5, np.unique(labels, return_counts=True)[1].min()))
    if folds < 2:  # the sample lost a class's second document: fewer folds cannot help, the rule decides
        return None
    precision = choose_precision("auto")[0]  # a comparison of strategies, not of precisions: the fast one
    result = compare_long_text(
        Encoder(encoder.ref.name, precision=precision),
        recipe,
        texts,
        labels,
        strategies,
        task="sample",
        config=LongDocConfig(folds=folds, seed=seed, resamples=1000),
        progress=progress,
    )
    iv = result.intervals
    chosen = next(i for i in range(len(strategies)) if iv.tied_with_best[i])
    scores = "; ".join(
        f"{s} {100 * iv.value[i]:.1f} [{100 * iv.low[i]:.1f}, {100 * iv.high[i]:.1f}]"
        + (f" ({len(texts) / result.encode_seconds[result.pass_of[s]]:.1f} docs/s)")
        for i, s in enumerate(strategies)
    )
    evidence += f"; on {len(texts)} labelled documents ({folds}-fold out-of-fold accuracy, 95% bootstrap): {scores}"
    rule += "; otherwise the cheapest of truncation, head+tail and windows that is tied with the best measured one"
    name = strategies[chosen]
    if name == "head":
        return Decision(
            "text length", "truncate at the limit (measured: as good as reading more)", evidence, rule, "measured"
        )
    return Decision(
        "text length",
        f"use a long-text strategy: --long-text {name}",
        evidence,
        rule,
        "measured",
        (
            f"bertlens embed TEXTS --recipe OUT/recipe.json --long-text {name} --out vectors.npy",
            "bertlens longdoc DATA --out OUT/longdoc",
        ),
        {"long_text": name},
    )
