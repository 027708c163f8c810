"""recommend's fine-tuning step under small budgets, before and after dev is scored every 25 steps (issue #50 item 5).

For a user with n labelled SST-2 training examples (n = 16, 64, 256: a seeded sample of SST-2's train; dev 500 of
the rest, SST-2's test), the step's own cost trial (`measure_costs`) gives the estimate recommend sizes the step
by, under the old schedule (dev scored after every epoch: `eval_every=0`) and the new one (`TRAIN.eval_every`).
For each budget (3, 5 and 15 minutes for the whole `recommend`), the step is measured when its estimate fits
`BUDGET_SHARE` of what recommend leaves it (the budget less the earlier steps' seconds, less 60 s kept for the
latency step), as `fine_tune_or_rule` decides; then the step runs once per schedule at n (its took, the epochs its
runs trained and the decision). Finally one whole `bertlens recommend --task sst2 --budget-minutes 3` per schedule,
in-process, says what a user sees.

    cd bench && BERTLENS_DATA=../../shared/data ../.venv/bin/python fine_tune_budget.py [--sizes 16,64,256]
        [--schedules before,after] [--whole 3,5: the whole recommend runs' budgets; '' for none]
        [--earlier-steps SECONDS: steps 1-3's time when no whole run measures it] [--no-sized: no per-n table]

Run it alone on the machine: the figures are seconds.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from bertlens.encoding.precision import choose_precision
from bertlens.representation.recipe import Recipe
from bertlens.tasks.catalog import get_task
from bertlens.tasks.loaders import load_catalog_task
from bertlens.tasks.splits import task_splits
from bertlens.workflows import fine_tune_step
from bertlens.workflows.fine_tune_step import (
    BUDGET_SHARE,
    TRAIN,
    affordable_size,
    fine_tune_seconds,
    measure_costs,
    step_fine_tune,
)
from common import DATA, lscpu_summary

BUDGETS = (3, 5, 15)  # minutes for the whole recommend
SCHEDULES = {"before": replace(TRAIN, eval_every=0), "after": TRAIN}  # dev scored every epoch / every 25 steps


def user_task(n: int, seed: int):
    """SST-2 as a user with n labelled training examples has it: n of train (seeded), dev carved from the rest."""
    task = load_catalog_task(get_task("sst2"), DATA)
    train = task.splits["train"]
    rows = np.random.default_rng(seed).permutation(len(train))
    dev = train.subset(np.sort(rows[n : n + 500]))
    return replace(task, splits={"train": train.subset(np.sort(rows[:n])), "dev": dev, "test": task.splits["test"]})


def whole_recommend(train, budget_minutes: int, seed: int) -> tuple[float, float, str, str]:
    """One in-process `recommend --task sst2` with `train` as step 4's schedule: (wall s, steps 1-3 s, step 4's
    confidence, its evidence)."""
    import bertlens

    fine_tune_step.TRAIN = train
    try:
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            advice = bertlens.recommend(
                task="sst2", budget_minutes=budget_minutes, seed=seed, out=Path(out), quiet=True
            )
            wall = time.perf_counter() - start
    finally:
        fine_tune_step.TRAIN = TRAIN
    step4 = next(d for d in advice.decisions if d.step == "frozen or fine-tuned")
    before = sum(d.seconds for d in advice.decisions[: advice.decisions.index(step4)])
    return wall, before, step4.confidence, step4.evidence


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="16,64,256")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--earlier-steps", type=float, default=None, help="steps 1-3 seconds (default: measured)")
    parser.add_argument("--schedules", default="before,after", help="which schedules to run")
    parser.add_argument("--whole", default="3", help="budgets (minutes) of the whole recommend runs ('' for none)")
    parser.add_argument("--sized", action=argparse.BooleanOptionalAction, default=True, help="the per-n table")
    args = parser.parse_args()
    print(lscpu_summary())
    precision = choose_precision("auto")[0]
    model, recipe = "default", Recipe(model="default", pooler="mean", precision=precision)

    schedules = {name: SCHEDULES[name] for name in args.schedules.split(",")}
    whole = {}
    for minutes in (int(m) for m in args.whole.split(",") if m):
        for name, train in schedules.items():
            run = whole_recommend(replace(train, seed=args.seed, precision=precision), minutes, args.seed)
            whole[name, minutes] = run
            print(f"recommend --task sst2 --budget-minutes {minutes}, {name}: {run[0]:.0f} s; step 4: {run[2]}")
            print(f"  evidence: {run[3]}", flush=True)
    earlier = args.earlier_steps if args.earlier_steps is not None else min(w[1] for w in whole.values())
    print(f"steps 1-3 of recommend on SST-2 took {earlier:.0f} s; step 4 has 0.85 x (budget - {earlier:.0f} - 60) s")

    rows = []
    for n in (int(s) for s in args.sizes.split(",") if args.sized):
        task = user_task(n, args.seed)
        base = replace(TRAIN, seed=args.seed, precision=precision)
        costs = measure_costs(task, model, recipe, base, args.seed)
        print(f"n={n}: {costs}", flush=True)
        train_split, _, _ = task_splits(task, 500, args.seed)
        for name, train in schedules.items():
            train = replace(train, seed=args.seed, precision=precision)
            estimate = fine_tune_seconds(len(train_split), costs, train)
            fits = []
            for minutes in BUDGETS:
                size = affordable_size(len(train_split), costs, train, BUDGET_SHARE * (60 * minutes - earlier - 60))
                fits.append(f"n={size}" if size else "rule")
            with tempfile.TemporaryDirectory() as runs:
                start = time.perf_counter()
                decision = step_fine_tune(
                    task, model, recipe, Path(runs), args.seed, lambda *a: None, train=train, user_n=n, size=n
                )
                took = time.perf_counter() - start
            epochs = decision.evidence.split("per run (")[1].split(",")[0]
            print(f"  {name}: {decision.evidence}", flush=True)
            rows.append((n, name, estimate, took, *fits, epochs, decision.decision))
            print(rows[-1], flush=True)

    print("\n| n | schedule | estimate | took | 3 min | 5 min | 15 min | epochs trained | decision |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n, name, estimate, took, *fits, epochs, choice in rows:
        print(f"| {n} | {name} | {estimate:.0f} s | {took:.0f} s | {' | '.join(fits)} | {epochs} | {choice} |")


if __name__ == "__main__":
    main()
