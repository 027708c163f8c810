"""Step 3 of `recommend`: a sweep on a seeded sample -> the recipe, its interval and what is tied with it."""

from __future__ import annotations

from pathlib import Path

from bertlens.experiments.sweep import SweepConfig, run_sweep
from bertlens.progress import Progress
from bertlens.tasks.loaders import TaskData
from bertlens.workflows.decision import Decision

SWEEP_EXAMPLES = 2000  # a sample per split: enough to rank candidates, small enough for the budget


def step_representation(task: TaskData, model: str, cache_dir: Path, seed: int, progress: Progress):
    postprocess = "whiten" if task.kind == "similarity" else None
    config = SweepConfig(resamples=500, seed=seed, postprocess=postprocess)
    result = run_sweep(task, model, cache_dir=cache_dir, config=config, progress=progress)
    protocol = result.main  # the protocol the recommendation was made by
    names = [c.name for c in protocol.candidates]
    i = names.index(result.recommended.name)
    tied = [n for n, t in zip(names, protocol.test.tied_with_best, strict=True) if t and n != names[i]]
    evidence = (
        f"{result.recommended.name}: {protocol.metric} {protocol.test.value[i]:.4f} "
        f"[{protocol.test.low[i]:.4f}, {protocol.test.high[i]:.4f}] on {protocol.split} (n={protocol.n_test}); "
        f"tied with the best: {', '.join(tied[:6]) or 'none'}{' ...' if len(tied) > 6 else ''}"
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
        "the candidate with the best validation score (never test); ties go to fewer dimensions, then single layers",
        "measured",
        ("bertlens embed texts.txt --recipe OUT/recipe.json --out vectors.npy",),
    )
    return decision, result.recipe
