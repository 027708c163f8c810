"""`--rows auto`: the sweep looks at growing stages of the data and stops when its choice is settled.

Every stage is the sweep as it is (one bank, every protocol, the recommendation) on the task cut to its first rows
(tasks/staging.py: seeded, each class spread evenly over the order); the bank keeps the whole task's key and each
stage encodes only its new rows, so `--rows all` later carries on from them. After each stage the stopping rule
(metrics/sequential.py) reads the main protocol's per-row outputs: it stops when no candidate can be ahead of the pick
by more than the tolerance, on the rows read nor projected to every row from its trend since the previous stage
(learning curves cross: a wider candidate gains more from more rows). Every interval of every stage is computed at
1 - 0.05 / K for the K looks planned (fixed by the data's size before the first), so the intervals reported at the
stop keep 95% coverage under the repeated looks. Tasks under LAST_STEP x 2 x the first stage's rows (30,000 by
default) have fewer than three looks and score every row, as do retrieval (its queries are few; the corpus, which
every stage needs whole, is the cost) and texts without labels (no score to settle on).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from bertlens.metrics.sequential import Look, Rule, judge, look_confidence, looks_until_settled, stage_sizes
from bertlens.progress import DETAIL, Progress
from bertlens.tasks.kinds import CLASS, LABEL_SET, SCORE
from bertlens.tasks.loaders import TaskData
from bertlens.tasks.staging import first_rows, stage_orders, task_rows

from .config import SweepConfig
from .results import Staging, SweepResult

MIN_LOOKS = 3  # fewer looks than this cannot save rows: the last look before all would be most of them
STAGED_TARGETS = (CLASS, SCORE, LABEL_SET)  # targets scored per row from a bank of the task's own texts


def staged(task: TaskData, config: SweepConfig) -> bool:
    """Whether this sweep looks at stages: `rows` auto, a target scored per row from the task's own bank, and at least
    MIN_LOOKS planned looks."""
    if config.rows != "auto" or task.kind.target not in STAGED_TARGETS or task.collection is not None:
        return False
    return len(stage_sizes(task_rows(task), config.first_stage)) >= MIN_LOOKS


def _stage_progress(progress: Progress, number: int, looks: int, rows: int) -> Progress:
    """The sweep's progress lines, each naming the stage it belongs to."""

    def report(stage: str, done: int, total: int) -> None:
        name, _, detail = stage.partition(DETAIL)
        tag = f"{name} [stage {number}/{looks}: {rows:,} rows]"
        progress(tag + (DETAIL + detail if detail else ""), done, total)

    return report


def _estimate_all(result: SweepResult, bank_seconds: float, rows: int, total: int) -> float:
    """Seconds a sweep of every row would take, from this run's costs: the bank at its rate per row over every stage,
    the last stage's probes scaled by rows (the ridge screen and the logistic probes are linear in the rows)."""
    probes = sum(v for k, v in result.timings.items() if k.endswith("_seconds") and k[:-8] in result.protocols)
    return bank_seconds / rows * total + probes * total / rows


def staged_sweep(
    task: TaskData,
    encoder,
    base,
    cache_dir,
    config: SweepConfig,
    progress: Progress,
    sweep: Callable[..., SweepResult],
) -> SweepResult:
    """Run `sweep` (run._bank_sweep) on growing stages of `task` until the choice settles or every row is read."""
    planned = stage_sizes(task_rows(task), config.first_stage)
    confidence = look_confidence(len(planned))
    looking = replace(config, confidence=confidence)
    orders = stage_orders(task, config.seed)
    texts = task.all_texts()  # the bank's rows: those of `--rows all`, so its cache carries over
    last: dict = {"bank_seconds": 0.0, "seconds": 0.0}
    rule = Rule(config.settle_tolerance, confidence, config.resamples, config.seed, total=planned[-1])

    def look_at(rows: int, previous: Look | None) -> Look:
        start = time.perf_counter()
        shown = _stage_progress(progress, planned.index(rows) + 1, len(planned), rows)
        result = sweep(first_rows(task, orders, rows), encoder, base, cache_dir, looking, shown, bank_texts=texts)
        main = result.main
        names = [c.name for c in main.candidates]
        pick = names.index(result.recommended.name)
        look = judge(main.outputs, main.gold, main.metric, names, pick, rows, rule, previous)
        seconds = time.perf_counter() - start
        last.update(result=result, bank_seconds=last["bank_seconds"] + result.timings["bank_seconds"])
        last["seconds"] += seconds
        return replace(look, seconds=seconds)

    looks = looks_until_settled(planned, look_at)
    result = last["result"]
    estimate = _estimate_all(result, last["bank_seconds"], looks[-1].rows, planned[-1])
    staging = Staging(looks, planned, confidence, config.settle_tolerance, last["seconds"], estimate)
    timings = {**result.timings, "bank_seconds": last["bank_seconds"], "stages_seconds": last["seconds"]}
    return replace(result, staging=staging, timings=timings, notes=(*result.notes, _note(staging)))


def _note(staging: Staging) -> str:
    """What the reader of a staged sweep's figures should know: the rows, the rule, the level of its intervals."""
    level = f"{staging.confidence:.2%}".rstrip("0").rstrip(".")
    looks = len(staging.planned)
    if staging.settled:
        how = (
            f"stopped at stage {len(staging.looks)} of {looks} on {staging.rows:,} of {staging.total:,} rows: no "
            f"candidate can be ahead of the pick by more than {staging.tolerance:g}, on the rows read nor on its "
            "trend since the previous stage carried to every row (saved about "
            f"{staging.saved_seconds:,.0f} s of an estimated {staging.estimated_all_seconds:,.0f} s for every row); "
            "--rows all scores every row. The scores are "
            "those of probes trained on the rows read (more rows usually raise them): what is settled is the choice"
        )
    else:
        how = f"read all {staging.total:,} rows in {len(staging.looks)} stages: the choice did not settle earlier"
    return (
        f"--rows auto {how}. Every interval is at {level} ({looks} looks planned, 95% over all of them together: "
        "Bonferroni), so the intervals stay honest under the repeated looks"
    )
