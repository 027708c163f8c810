"""When a quantized export may replace the exact one: the fidelity gate, as data (no heavy import)."""

from __future__ import annotations

from dataclasses import dataclass

from bertlens.errors import OptionError


@dataclass(frozen=True)
class Gate:
    """int8 passes when, on held-out calibration texts, the mean and the minimum cosine to fp32 reach these, and
    (with an evaluation task) the task metric drops by at most `max_task_drop`.

    0.995 mean: the vectors keep their direction to within about 6 degrees on average, where measured
    STS-B and probe scores of this project's models move by well under a point; 0.98 minimum: no single
    text may move further (dynamic int8 of the default model, unguarded, reached 0.849 on one text).
    """

    mean_cosine: float = 0.995
    min_cosine: float = 0.98
    max_task_drop: float = 0.005

    def __post_init__(self) -> None:
        for name, value in (("gate_mean", self.mean_cosine), ("gate_min", self.min_cosine)):
            if not -1.0 <= value <= 1.0:
                raise OptionError(f"{{{name}}} is a cosine and must be between -1 and 1, got {value}", name)
        if not 0.0 <= self.max_task_drop <= 1.0:
            raise OptionError(f"{{gate_task_drop}} must be between 0 and 1, got {self.max_task_drop}", "gate_task_drop")

    def passes(self, mean: float, minimum: float) -> bool:
        return mean >= self.mean_cosine and minimum >= self.min_cosine


def share_below_bound(judged: int, below: int, confidence: float = 0.95) -> float:
    """The most texts like the judging ones that can fall under the gate's minimum, as a share: the one-sided upper
    Clopper-Pearson bound (Clopper & Pearson 1934) from `below` of `judged`. Why: a minimum over 150 judging texts
    says nothing of the minimum over 1,000; it bounds how often a text falls under it (2.0% for 0 of 150)."""
    if below >= judged:
        return 1.0
    if below == 0:
        return 1.0 - (1.0 - confidence) ** (1.0 / judged)
    from scipy.stats import beta

    return float(beta.ppf(confidence, below + 1, judged - below))


def vouches_for(gate: Gate, judged: int, below: int) -> str:
    """What a gate judged on `judged` held-out calibration texts says of other texts, in the record's words."""
    bound = share_below_bound(judged, below)
    return (
        f"texts like the calibration texts: {below} of the {judged} judging texts fell under the minimum cosine "
        f"{gate.min_cosine}, so at most {bound:.1%} of such texts do (95%, Clopper-Pearson); texts of another kind "
        "are not vouched for: calibrate on a random sample of what you embed"
    )
