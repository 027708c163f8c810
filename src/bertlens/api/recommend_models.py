"""`recommend --model A --model B ...`: a first step that chooses the encoder, then the usual walk on the chosen one.

The step is `sweep --model A --model B` (api/sweep_models.py) on a seeded sample of the task, sized by a trial of each
model on the task's own texts so that the sweeps across models plan to use at most SWEEP_SHARE of the budget; the
choice is the sweep's rule, with recommend's --latency-budget-ms and --throughput-target as its price budget. The
walk's steps (length, domain, representation, frozen or fine-tuned, latency) then run on the chosen model within
what is left of the budget, its representation step choosing the reading on its own sample.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

TRIAL_TEXTS = 32  # texts each model encodes to size the sample


def _per_example_seconds(task, names: tuple[str, ...], seed: int) -> float:
    """Seconds to encode one example of the task with every model, from a trial on its own texts."""
    from bertlens.embedding.embedder import Embedder
    from bertlens.representation.recipe import Recipe

    texts = task.all_texts()
    trial = [texts[i] for i in np.random.default_rng(seed).permutation(len(texts))[:TRIAL_TEXTS]]
    examples = max(sum(len(split) for split in task.splits.values()), 1)
    total = 0.0
    for name in names:
        embedder = Embedder(Recipe(model=name))
        embedder.encode(trial[:4])  # warm-up
        start = time.perf_counter()
        embedder.encode(trial)
        total += (time.perf_counter() - start) / len(trial) * len(texts) / examples
    return total


def encoder_step(options, task, out: Path, notify, progress, data_flags: str):
    """(the chosen model, the 'encoder' Decision, seconds it took)."""
    from bertlens.api.sweep import SweepOptions, _base_and_encoder, _sweep_task
    from bertlens.api.sweep_models import run_across_models
    from bertlens.reports.models import model_rows
    from bertlens.workflows.decision import Decision, sample_task
    from bertlens.workflows.representation_step import planned_examples

    start = time.perf_counter()
    names = tuple(options.model)
    count = planned_examples(_per_example_seconds(task, names, options.seed), 60 * options.budget_minutes)
    sample = sample_task(task, count, options.seed)
    sweep = SweepOptions(
        model=list(names), seed=options.seed, resamples=500, prompts=options.prompts, device="auto",
        cache_dir=options.cache_dir or out / "cache", min_texts_per_second=options.throughput_target,
        max_latency_ms=options.latency_budget_ms,
    )._parsed()  # fmt: skip
    result = run_across_models(sweep, sample, notify, progress, _base_and_encoder, _sweep_task)
    chosen = result.picks[result.choice.chosen]
    evidence = "; ".join(
        f"{r['model']}: own reading {r['own_reading']} {r['own_value']:.4f}, best {r['best_reading']} "
        f"{r['best_value']:.4f} [{r['best_ci'][0]:.4f}, {r['best_ci'][1]:.4f}], {r['texts_per_s']:,.0f} texts/s, "
        f"{r['ms_one_text']:.1f} ms for one text" + ("" if r["meets_budget"] else " (misses the budget)")
        for r in model_rows(result)
    )
    evidence += (f" ({result.metric} on {result.results[0].main.split}, a sample of at most {count:,} examples per "
                 f"split, prices on {result.prices[0].machine})")  # fmt: skip
    if result.runner_up:
        evidence += f"; passed over: {result.runner_up}"
    seconds = time.perf_counter() - start
    models = " ".join(f"--model {m}" for m in names)
    decision = Decision(
        "encoder",
        f"use {chosen.model} (its best reading here: {chosen.candidate})",
        evidence,
        result.choice.rule + "; the steps below run on the chosen model",
        "measured",
        (f"bertlens sweep {data_flags} {models} --out {out / 'models'}",),
        seconds=seconds,
    )
    return chosen.model, decision, seconds
