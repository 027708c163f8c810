"""Step 4 of `recommend`: frozen probe vs a quick fine-tune, sized to the budget by a measured trial.

The trial (a forward pass over 64 texts and fine-tuning runs of 4 and 12 steps on the same rows) gives the cost
per training example; the step then runs at the largest training size whose comparison fits what is left of the budget,
or falls back to the rule of thumb (frozen below ~1k labels), marked as such."""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from bertlens.embedding.embedder import Embedder
from bertlens.embedding.speed import texts_per_second
from bertlens.encoding.precision import choose_precision
from bertlens.experiments.compare import CompareConfig, curve, run_compare
from bertlens.representation.recipe import Recipe
from bertlens.tasks.kinds import SCORE
from bertlens.tasks.loaders import TaskData
from bertlens.tasks.splits import task_splits, with_test_split
from bertlens.training.config import TrainConfig
from bertlens.training.loop import scored_epochs
from bertlens.training.strategies import parse_strategy
from bertlens.workflows.decision import Decision, sample_rows

FINE_TUNE_RULE_N = 1000  # the chapter's rule of thumb: below ~1k labels a frozen probe is usually as good

DRIFT_TEXTS = 64  # texts each fine-tuning run's CKA is measured on (not a decision input here)

BUDGET_SHARE = 0.85  # of the time left, what step 4 may plan to use: estimates are from a short trial


@dataclass(frozen=True)
class Costs:
    """What step 4 costs on this machine, measured on the user's texts before it is sized."""

    forward: float  # seconds per text, one forward pass (scoring dev, test and the drift texts; frozen encoding)
    train_example: float  # seconds per training example (forward + backward + optimizer, padded batches)
    dev: int  # dev examples, scored at the epoch ends the schedule scores (TrainConfig.eval_every)
    test: int  # test examples, scored once per run
    start_up: float = 0.0  # seconds per fine-tuning run besides its examples (optimizer, best-weights restore)


def fine_tune_seconds(n: int, costs: Costs, train: TrainConfig) -> float:
    """Estimated time of step 4 at n training examples: two seeds of full fine-tuning at n and n/4 (each at least
    `min_steps` batches, dev scored where the schedule scores it, test and the drift texts once), plus the frozen
    probes' encoding. An upper bound: early stopping on dev usually ends a small training set's runs sooner."""
    seeds, total = 2, 0.0
    for size in compared_sizes(n):
        steps_per_epoch = -(-size // train.batch_size)
        epochs = max(train.epochs, -(-train.min_steps // steps_per_epoch))  # as the training loop counts
        dev_scores = scored_epochs(steps_per_epoch, epochs * steps_per_epoch, train.eval_every)
        scored = dev_scores * costs.dev + costs.test + 2 * DRIFT_TEXTS
        total += seeds * (epochs * size * costs.train_example + scored * costs.forward + costs.start_up)
    return total + (n + costs.dev + costs.test) * costs.forward


def compared_sizes(n: int) -> tuple[int, ...]:
    """The training sizes step 4 compares at: n and a quarter of it (at least 16); n alone below 64."""
    return tuple(sorted({n, max(16, n // 4)})) if n >= 64 else (n,)


def affordable_size(n: int, costs: Costs, train: TrainConfig, seconds: float) -> int:
    """The largest training size up to n whose fine-tuning comparison fits in `seconds` (0 when even 64 does not)."""
    steps = (16000, 8000, 6000, 5000, 4000, 3000, 2000, 1500, 1000, 500, 250, 128, 64)
    for size in sorted({n, *(s for s in steps if s < n)}, reverse=True):
        if fine_tune_seconds(size, costs, train) <= seconds:
            return size
    return 0


TRIAL_BATCHES = (4, 12)  # the two short fine-tuning runs of the cost trial, in optimiser steps
BACKWARD_FACTOR = 3.0  # a training example costs at least a forward and a backward pass (about two forwards)


def least_seconds(forward: float, dev: int, test: int, train: TrainConfig, n: int = 64) -> float:
    """A lower bound on the trial plus the smallest comparison (n=64, or the user's n when smaller), from the forward
    cost alone: when even this does not fit the budget left, the trial is not run (it would only spend the budget to
    learn that)."""
    floor = Costs(forward, BACKWARD_FACTOR * forward, dev, test)
    size = min(64, n)
    trial = sum(TRIAL_BATCHES) * min(train.batch_size, size) * floor.train_example
    return trial + fine_tune_seconds(size, floor, train)


def measure_costs(
    task: TaskData, model: str, recipe: Recipe, train: TrainConfig, seed: int, forward: float | None = None
) -> Costs:
    """A forward pass over 64 of the user's texts, and two short fine-tuning trials of 4 and 12 optimiser steps on
    the same training rows (at the real batch size and precision, through the same `run_compare` the step uses):
    their difference is the cost of a step without the fixed start-up cost, which is counted once per run. Steps,
    not training sizes: a small training set (fewer than 12 batches) is cycled over as the real run cycles over it,
    so the slope is measured at any n (with two sizes, n < 192 gave one run and a per-example cost 3-6x too high)."""
    if forward is None:
        forward = _seconds_per_text(model, sample_rows(task.all_texts(), 64, seed), train.precision)
    train_split, dev_split, test_split = task_splits(task, 500, seed)
    size = min(len(train_split), TRIAL_BATCHES[0] * train.batch_size)
    tiny = test_split.subset(np.arange(min(16, len(test_split))))
    trial_task = replace(task, splits={**task.splits, "test": tiny})
    runs = []
    for steps in TRIAL_BATCHES:
        config = CompareConfig(
            sizes=(size,),
            strategies=(parse_strategy("full", 1),),
            seeds=(seed,),
            train=replace(train, epochs=1, min_steps=steps),
            max_dev=16,
            drift_texts=8,
        )
        with tempfile.TemporaryDirectory() as folder:
            (run,) = run_compare(trial_task, model, recipe, config, Path(folder)).runs
        runs.append(run)
    short, long = runs
    per_step = (long.seconds - short.seconds) / max(long.steps - short.steps, 1)
    # never below two forward passes: noise (a tiny model, a busy machine) can flatten the slope
    per_example = max(per_step / min(train.batch_size, size), 2 * forward)
    start_up = max(short.seconds - short.steps * min(train.batch_size, size) * per_example, 0.0)
    return Costs(forward, per_example, len(dev_split), len(test_split), start_up)


def step_fine_tune(
    task: TaskData,
    model: str,
    recipe: Recipe,
    runs_dir: Path,
    seed: int,
    progress,
    *,
    train: TrainConfig,
    user_n: int,
    size: int,
) -> Decision:
    """Frozen probe vs full fine-tuning at `size` training examples (the user's own count when the budget allows)
    and at a quarter of it, two seeds each, paired by seed. `task` has a test split (see `with_test_split`)."""
    train_split, _, _ = task_splits(task, 500, seed)
    n = min(size, len(train_split))
    config = CompareConfig(
        sizes=compared_sizes(n),
        strategies=(parse_strategy("frozen", 1), parse_strategy("full", 1)),
        seeds=(seed, seed + 1),
        train=train,
        max_dev=500,
        drift_texts=DRIFT_TEXTS,  # drift is not a decision here: a few texts keep the runs' CKA cheap
    )
    result = run_compare(task, model, recipe, config, runs_dir, seed=seed, progress=progress)
    points = {(p.strategy, p.size): p for p in curve(result)}
    frozen, tuned = points[("frozen", n)], points[("full", n)]
    paired = np.array(
        [
            t.test - f.test
            for t in result.runs
            for f in result.runs
            if t.strategy == "full" and f.strategy == "frozen" and t.size == f.size == n and t.seed == f.seed
        ]
    )
    diff = float(paired.mean())
    spread = float(paired.std(ddof=1)) if len(paired) > 1 else float("nan")
    small = max(16, n // 4)
    at_small = ""
    if ("full", small) in points and small != n:
        at_small = f"; at n={small}: frozen {points[('frozen', small)].mean:.4f}, fine-tuned {points[('full', small)].mean:.4f}"
    # a similarity task's frozen score is the cosine of frozen vectors: nothing is trained, so seeds agree
    cosine = task.kind.target == SCORE and task.kind.pair
    frozen_name = "frozen encoder (cosine, untrained)" if cosine else "frozen probe"
    sampled = (
        f" (a seeded sample of the {len(train_split):,} training examples left after the dev split: what the budget "
        "affords)"
        if n < len(train_split)
        else f" (every training example left after the dev split, of your {user_n:,})"
    )
    evidence = (
        f"at n={n}{sampled}: {frozen_name} {frozen.mean:.4f} [{frozen.low:.4f}, {frozen.high:.4f}], full fine-tune "
        f"{tuned.mean:.4f} [{tuned.low:.4f}, {tuned.high:.4f}] ({len(paired)} seeds; paired difference "
        f"{diff:+.4f}, seed-to-seed spread {spread:.4f}){at_small}; fine-tuning took {tuned.seconds:.0f} s per run "
        f"({epochs_run(result.runs, n, train)}, {train.precision})"
    )
    rule = (
        f"fine-tune when it beats the frozen probe in every seed by more than the seeds vary; where the "
        f"measurement cannot decide, the chapter's rule of thumb: frozen below ~{FINE_TUNE_RULE_N} labels"
    )
    choice, confidence = fine_tune_choice(paired, user_n)
    if confidence == "measured" and n < len(train_split):
        confidence = f"measured at n={n} of {len(train_split):,} (more labels usually favour fine-tuning more)"
    commands = (
        ("bertlens finetune DATA --recipe OUT/recipe.json --strategy full --out OUT/tuned",) if choice == TUNE else ()
    )
    return Decision("frozen or fine-tuned", choice, evidence, rule, confidence, commands)


def epochs_run(runs, n: int, train: TrainConfig) -> str:
    """The epochs the fine-tuning runs at n trained, against the schedule's most: early stopping on dev usually ends
    a small training set's runs long before `min_steps` would (what the evidence reports, not the configuration)."""
    ran = sorted(run.epochs for run in runs if run.strategy == "full" and run.size == n)
    most = max(train.epochs, -(-train.min_steps // -(-n // train.batch_size)))  # as the training loop counts
    return f"{' and '.join(map(str, ran))} epochs of at most {most}"


TUNE, FROZEN = "fine-tune", "keep the encoder frozen (linear probe)"


def fine_tune_choice(paired: np.ndarray, n: int) -> tuple[str, str]:
    """(decision, confidence) from the per-seed differences fine-tuned - frozen at the user's size.

    Fine-tune when every seed gains and the mean gain exceeds the seed-to-seed spread; stay frozen when no
    seed gains; otherwise the measurement cannot decide and the rule of thumb does (frozen below ~1k labels).
    """
    if len(paired) > 1 and (paired > 0).all() and paired.mean() > paired.std(ddof=1):
        return TUNE, "measured"
    if len(paired) > 1 and (paired <= 0).all():
        return FROZEN, "measured"
    choice = FROZEN if n < FINE_TUNE_RULE_N else TUNE
    return choice, f"rule of thumb: the measured difference is within the seed-to-seed spread (n={n})"


# the training `compare` uses (4 epochs, >= 100 steps, early stopping), so both agree; checkpoints sparser (each
# writes the model and AdamW state: a cost the short trial does not see), and dev scored every 25 steps at most
# often rather than every epoch: at n=16 (one step an epoch) that is 5 dev scores instead of 100, so a small
# budget measures the step instead of falling back to the rule (docs/results-log.md, "recommend's fine-tuning
# estimate"); from 25 steps an epoch (n >= 400 at batch 16) every epoch is scored, as in `compare`
TRAIN = TrainConfig(checkpoint_every=200, eval_every=25)

FINE_TUNE_TEST = 2000  # test examples scored per run: intervals of about +-2 points on accuracy


def fine_tune_or_rule(task, model, recipe, steps, seed, budget, progress) -> Decision:
    """Step 4 measured at the largest training size the budget affords (keeping 60 s for step 5), else the rule."""
    progress("frozen or fine-tuned", 3, 5)
    user_n = len(task.splits.get("train") or task.splits["all"])
    why = f"{task.kind.name} tasks are not compared" if task.kind.head is None else ""  # no head to fine-tune
    size, estimate = 0, 0.0
    if not why:
        tune_task = with_test_split(task, seed)
        test = tune_task.splits["test"]
        if len(test) > FINE_TUNE_TEST:
            test = test.subset(np.sort(np.random.default_rng(seed).choice(len(test), FINE_TUNE_TEST, replace=False)))
        tune_task = replace(tune_task, splits={**tune_task.splits, "test": test})
        train_split, dev_split, _ = task_splits(tune_task, 500, seed)
        train = replace(TRAIN, seed=seed, precision=choose_precision("auto")[0])
        forward = _seconds_per_text(model, sample_rows(tune_task.all_texts(), 64, seed), train.precision)
        smallest = min(64, len(train_split))  # the least step 4 measures (the user's n when smaller)
        floor = least_seconds(forward, len(dev_split), len(test), train, smallest)
        if floor > BUDGET_SHARE * (budget.left() - 60):
            why = f"{_budget_left(budget)}, and the cost trial with even n={smallest} would take at least {floor:.0f} s"
        else:
            costs = measure_costs(tune_task, model, recipe, train, seed, forward)
            size = affordable_size(len(train_split), costs, train, BUDGET_SHARE * (budget.left() - 60))
            if size == 0:
                least = fine_tune_seconds(smallest, costs, train)
                why = f"{_budget_left(budget)}, and even n={smallest} would take about {least:.0f} s"
            estimate = fine_tune_seconds(size, costs, train) if size else 0.0
    if why:
        choice = FROZEN if user_n < FINE_TUNE_RULE_N else TUNE
        return Decision(
            "frozen or fine-tuned",
            choice,
            f"{user_n} labelled training examples",
            f"the chapter's rule of thumb: frozen below ~{FINE_TUNE_RULE_N} labels",
            f"rule of thumb: not measured ({why})",
        )
    start = time.perf_counter()
    decision = step_fine_tune(
        tune_task, model, recipe, steps / "runs", seed, progress, train=train, user_n=user_n, size=size
    )
    took = time.perf_counter() - start
    return replace(decision, evidence=decision.evidence + f"; this step: estimated {estimate:.0f} s, took {took:.0f} s")


def _budget_left(budget) -> str:
    now = budget.left()
    return f"{now:.0f} s of the budget left" if now > 0 else f"the earlier steps used the budget ({-now:.0f} s over)"


def _seconds_per_text(model: str, texts: list[str], precision: str) -> float:
    """Forward time per text, measured on a few of the user's texts at the training precision."""
    (rate,) = texts_per_second([Embedder(Recipe(model=model, precision=precision))], texts)
    return 1 / rate
