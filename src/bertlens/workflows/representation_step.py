"""Step 3 of `recommend`: a sweep on a seeded sample -> the recipe, its interval and what is tied with it.

The sample is sized from a measured trial so the sweep leaves the later steps their time: a few
dozen of the task's texts are encoded, and the sweep is planned at SWEEP_OVER_ENCODE times that
rate (a sweep costs its encoding pass plus the probes; 3.3x the pass at 100 classes under 10-fold
CV, docs/results-log.md issue #25) within SWEEP_SHARE of what is left of the budget.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from bertlens.embedding.embedder import Embedder
from bertlens.experiments.sweep import SweepConfig, run_sweep
from bertlens.progress import Progress
from bertlens.representation.recipe import Recipe
from bertlens.tasks.loaders import TaskData
from bertlens.workflows.decision import Decision, sample_task

SWEEP_EXAMPLES = 2000  # a sample per split: enough to rank candidates; fewer when the budget says so
MIN_SWEEP_EXAMPLES = 300  # below this the sweep's intervals are too wide to rank candidates: run it anyway
SWEEP_SHARE = 0.4  # of the budget left, what the sweep may plan to use; the fine-tune and latency steps get the rest
SWEEP_OVER_ENCODE = 4.0  # a sweep's cost in encoding passes of its texts, with margin (measured 3.3x, #25)
TRIAL_TEXTS = 48


def planned_examples(per_example_seconds: float, seconds_left: float) -> int:
    """Examples per split the sweep can afford, between MIN_SWEEP_EXAMPLES and SWEEP_EXAMPLES."""
    affordable = SWEEP_SHARE * max(seconds_left, 0.0) / (per_example_seconds * SWEEP_OVER_ENCODE)
    return int(min(SWEEP_EXAMPLES, max(MIN_SWEEP_EXAMPLES, affordable)))


def sweep_sample(task: TaskData, model: str, seconds_left: float, seed: int) -> tuple[TaskData, str]:
    """The seeded sample the sweep runs on, sized by a trial encoding of the task's own texts; and why."""
    texts = task.all_texts()
    examples = sum(len(split) for split in task.splits.values())
    trial = [texts[i] for i in np.random.default_rng(seed).permutation(len(texts))[:TRIAL_TEXTS]]
    embedder = Embedder(Recipe(model=model))
    embedder.encode(trial[:4])  # warm-up: the first batch pays for allocation
    start = time.perf_counter()
    embedder.encode(trial)
    per_text = (time.perf_counter() - start) / len(trial)
    per_example = per_text * len(texts) / max(examples, 1)  # pairs encode two texts per example
    count = planned_examples(per_example, seconds_left)
    plan = (
        f"sample of at most {count:,} examples per split, planned from a trial ({per_text * 1000:.1f} ms a text, "
        f"{SWEEP_OVER_ENCODE:.0f}x for the sweep, within {SWEEP_SHARE:.0%} of the {max(seconds_left, 0):.0f} s left)"
    )
    return sample_task(task, count, seed), plan


FEW_LABELS = 500  # below this many labelled examples, say whether the choice is settled (label-free protocol)


def few_labels_advice(trust, labels: int) -> str:
    """What the draws of fewer labels say about this many: settled, or label more."""
    if trust is None or not trust.settling:
        return ""
    largest = trust.settling[-1]
    draws = "; ".join(f"{s.labels} labels: {s.within_best:.0%} of draws" for s in trust.settling)
    verdict = (
        "the choice looks settled"
        if largest.within_best >= 0.8
        else f"label more: a choice from {largest.labels} labels missed the best's interval in "
        f"{1 - largest.within_best:.0%} of draws"
    )
    return (
        f"; with {labels} labels: choices from fewer labels drawn from yours land within the best's interval in "
        f"{draws} ({verdict}); label-free pick {trust.pick} "
        + ("within" if trust.pick_within_best else "outside")
        + " the best's interval"
    )


def step_representation(task: TaskData, model: str, cache_dir: Path, seed: int, progress: Progress, plan: str = ""):
    main = task.kind.main_protocol
    postprocess = "whiten" if main == "cosine" else None  # the cosine protocol scores post-processing
    labels = len(task.splits.get("train") or task.splits["all"])
    few = "label_free" in task.kind.protocols and labels < FEW_LABELS
    protocols = (main, "label_free") if few else None
    config = SweepConfig(resamples=500, seed=seed, postprocess=postprocess, protocols=protocols)
    result = run_sweep(task, model, cache_dir=cache_dir, config=config, progress=progress)
    protocol = result.main  # the protocol the recommendation was made by
    names = [c.name for c in protocol.candidates]
    i = names.index(result.recommended.name)
    tied = [n for n, t in zip(names, protocol.test.tied_with_best, strict=True) if t and n != names[i]]
    evidence = (
        f"{result.recommended.name}: {protocol.metric} {protocol.test.value[i]:.4f} "
        f"[{protocol.test.low[i]:.4f}, {protocol.test.high[i]:.4f}] on {protocol.split} (n={protocol.n_test}); "
        f"tied with the best: {', '.join(tied[:6]) or 'none'}{' ...' if len(tied) > 6 else ''}"
        + f"; {result.basis[result.basis.find('chosen by') :]}"  # how it was chosen, the own-reading check included
        + (f"; {plan}" if plan else "")
        + (few_labels_advice(result.trust, labels) if few else "")
    )
    if postprocess:
        whitened = [n for n in names if "whiten" in n]
        evidence += f"; whitening scored as {len(whitened)} candidates" + (
            ", and chosen" if "whiten" in result.recommended.name else ", not chosen"
        )
    decision = Decision(
        "representation",
        f"use {result.recommended.name}",
        evidence,
        "the candidate with the best validation score (never test), unless the choosing data ties it with the model's "
        "own reading (its trained pooling of the last layer), which is then kept; ties go to fewer dimensions, then "
        "single layers",
        "measured",
        ("bertlens embed TEXTS --recipe OUT/recipe.json --out vectors.npy",),
    )
    return decision, result.recipe
