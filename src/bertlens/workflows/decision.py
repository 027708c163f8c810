"""What every step of `recommend` returns (a Decision), the time budget the steps share, and seeded samples."""

from __future__ import annotations

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
