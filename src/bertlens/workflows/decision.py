"""What every step of `recommend` returns (a Decision), the time budget the steps share, and seeded samples."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field, replace

import numpy as np

from bertlens.tasks.loaders import Split, TaskData


@dataclass(frozen=True)
class Decision:
    step: str
    decision: str
    evidence: str
    rule: str
    confidence: str  # "measured", or "rule of thumb: <why not measured>"
    commands: tuple[str, ...] = ()
    recipe_changes: dict = field(default_factory=dict)  # what this decision sets in the recommended recipe
    seconds: float = 0.0  # what measuring it took (kept with the cached step, so a resumed run still says)

    @classmethod
    def from_dict(cls, data: dict) -> Decision:
        return cls(**{**data, "commands": tuple(data["commands"])})


# Placeholders in a decision's commands, filled by `fill_commands` with what the run read and wrote, so a printed
# command runs as printed: OUT (the run's output directory), DATA (the flags that read the task: `--task sst2`,
# `--data reviews.csv --text-col text --label-col label`), TEXTS (a texts source: `reviews.csv --column text`).
PLACEHOLDERS = ("OUT", "DATA", "TEXTS")


@dataclass(frozen=True)
class CommandSources:
    """What the placeholders stand for in this run (a Python caller keeps the placeholder names by default)."""

    out: str = "OUT"
    data: str = "DATA"
    texts: str = "TEXTS"


def fill_commands(decision: Decision, sources: CommandSources) -> Decision:
    """The decision with its commands' placeholders (whole words) replaced by this run's paths and flags."""
    values = {"OUT": sources.out, "DATA": sources.data, "TEXTS": sources.texts}
    pattern = re.compile(r"\b(" + "|".join(PLACEHOLDERS) + r")\b")
    filled = tuple(pattern.sub(lambda m: values[m.group(1)], command) for command in decision.commands)
    return replace(decision, commands=filled)


@dataclass(frozen=True)
class Budget:
    seconds: float
    start: float = field(default_factory=time.perf_counter)

    def left(self) -> float:
        return self.seconds - (time.perf_counter() - self.start)


def sample_rows(values: list, count: int, seed: int) -> list:
    if len(values) <= count:
        return values
    keep = np.sort(np.random.default_rng(seed).choice(len(values), count, replace=False))
    return [values[i] for i in keep]


def sample_task(task: TaskData, count: int, seed: int) -> TaskData:
    """At most `count` examples per split (seeded): the budget's version of the task."""

    def cut(split: Split) -> Split:
        if len(split) <= count:
            return split
        return split.subset(np.sort(np.random.default_rng(seed).choice(len(split), count, replace=False)))

    return replace(task, splits={name: cut(split) for name, split in task.splits.items()})
