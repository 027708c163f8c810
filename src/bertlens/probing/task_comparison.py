"""Two frozen encoders on one task's test split, paired: which is better, and by how much.

Used wherever a replacement is checked against what it replaces (a distilled student against its
teacher, an int8 export against fp32): similarity tasks by cosine Spearman, classification tasks by
a logistic probe's accuracy (C chosen on dev); intervals and the paired difference from the same
bootstrap resamples.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from bertlens.embedding.protocol import TextEncoder
from bertlens.errors import BertlensError
from bertlens.metrics.bootstrap import bootstrap, paired_difference
from bertlens.metrics.geometry import row_cosine
from bertlens.probing.selection import logistic_on_dev
from bertlens.tasks.kinds import SCORE
from bertlens.tasks.loaders import TaskData
from bertlens.tasks.splits import task_splits


@dataclass(frozen=True)
class TaskComparison:
    task: str
    metric: str
    teacher: tuple[float, float, float]  # value, 2.5th, 97.5th percentile
    student: tuple[float, float, float]
    difference: tuple[float, float, float]  # student - teacher, paired

    @property
    def share(self) -> float:
        return self.student[0] / self.teacher[0] if self.teacher[0] else float("nan")


def compare_on_task(teacher: TextEncoder, student: TextEncoder, task: TaskData, seed: int = 0) -> TaskComparison:
    """Teacher vs student on a task's test split, both frozen: STS cosine Spearman, or a logistic probe's accuracy
    (C chosen on dev, the sweep's grid); intervals from the same paired bootstrap resamples."""
    if not (task.kind.target == SCORE or task.kind.single_text_classes):
        raise BertlensError(f"--eval-task '{task.name}' is {task.kind.name}; use a similarity or classification task")
    train, dev, test = task_splits(task, seed=seed)
    if task.kind.target == SCORE:
        outputs = []
        for embedder in (teacher, student):
            outputs.append(row_cosine(embedder.encode(list(test.texts_a)), embedder.encode(list(test.texts_b))))
        gold, metric = test.targets, "spearman"
    else:
        texts = [*train.texts_a, *dev.texts_a, *test.texts_a]
        features = torch.from_numpy(np.stack([teacher.encode(texts), student.encode(texts)]))  # [2, n, D]
        selected = logistic_on_dev(features, len(train), len(dev), train.targets, dev.targets)
        outputs, gold, metric = list(selected.predictions), test.targets, "accuracy"
    stacked = np.stack(outputs)  # [2, n_test]
    intervals = bootstrap(stacked, gold, metric, seed=seed)
    diff = paired_difference(stacked, gold, metric, seed=seed)

    def triple(i: int) -> tuple[float, float, float]:
        return float(intervals.value[i]), float(intervals.low[i]), float(intervals.high[i])

    return TaskComparison(task.name, metric, triple(0), triple(1), diff)
