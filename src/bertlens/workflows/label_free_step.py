"""Step 3 of `recommend` for texts without labels: the label-free sweep chooses, and says how far to trust it.

Also what to say about fine-tuning when there is nothing to fine-tune on.
"""

from __future__ import annotations

from pathlib import Path

from bertlens.experiments.sweep import SweepConfig, run_texts_sweep
from bertlens.probing.label_free import CATALOG_TRUST, COMBINED
from bertlens.progress import Progress
from bertlens.tasks.loaders import TaskData
from bertlens.workflows.decision import Decision


def step_label_free(task: TaskData, model: str, cache_dir: Path, seed: int, progress: Progress):
    """(decision, recipe) from the texts alone."""
    result = run_texts_sweep(
        list(task.splits["all"].texts_a),
        task.name,
        model,
        cache_dir=cache_dir,
        config=SweepConfig(seed=seed),
        progress=progress,
    )
    protocol = result.main
    names = [c.name for c in protocol.candidates]
    i = names.index(result.recommended.name)
    tied = [n for n, t in zip(names, protocol.test.tied_with_best, strict=True) if t and n != names[i]]
    scores = result.label_free
    parts = ", ".join(f"{name} {scores.value(name)[i]:.3f}" for name in scores.components)
    evidence = (
        f"{result.recommended.name}: combined label-free score {protocol.test.value[i]:.3f} "
        f"[{protocol.test.low[i]:.3f}, {protocol.test.high[i]:.3f}] over {len(task.splits['all'])} texts ({parts}); "
        f"tied with it: {', '.join(tied[:6]) or 'none'}{' ...' if len(tied) > 6 else ''}"
    )
    decision = Decision(
        "representation",
        f"use {result.recommended.name} (chosen without labels)",
        evidence,
        f"the best combined label-free score ({' + '.join(COMBINED)}, as rank percentiles across candidates; the "
        "form chosen on the catalog tasks' validation scores); " + CATALOG_TRUST,
        "label-free: measured on your texts; label 100-200 examples and run `bertlens sweep --data FILE ... "
        "--protocols probe,label_free` to check it",
        ("bertlens embed TEXTS --recipe OUT/recipe.json --out vectors.npy",),
    )
    return decision, result.recipe


def no_labels_fine_tune() -> Decision:
    return Decision(
        "frozen or fine-tuned",
        "not applicable: the texts have no labels",
        "fine-tuning and linear probes need labels; the label-free recipe is used frozen",
        "without labels only unsupervised adaptation applies (`bertlens contrastive --texts` for SimCSE, `bertlens "
        "pretrain` for domain-adaptive pre-training)",
        "rule of thumb: no labels",
        ("bertlens contrastive --mode simcse --texts TEXTS --recipe OUT/recipe.json --out OUT/simcse",),
    )
