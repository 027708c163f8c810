"""What a sweep produces: one ProtocolResult per protocol, and the SweepResult with its recommendation."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bertlens.metrics.bootstrap import Intervals
from bertlens.metrics.sequential import Look
from bertlens.probing.candidates import Candidate
from bertlens.probing.label_free import LabelFreeScores
from bertlens.probing.label_trust import Trust
from bertlens.probing.screened_probe import LOGISTIC
from bertlens.representation.postprocess import PostProcessor
from bertlens.representation.recipe import Recipe
from bertlens.representation.token_projection import TokenProjection
from bertlens.tasks.kinds import TaskKind

RECIPE_PROBES = (LOGISTIC, "cosine", "maxp", "label_free")  # what a recommendation may rest on (not a ridge screen)


@dataclass(frozen=True)
class ProtocolResult:
    protocol: str
    metric: str
    candidates: tuple[Candidate, ...]
    validation: np.ndarray  # [C] score used for selection (dev, inner dev, or mean over folds)
    test: Intervals
    n_test: int
    mix_weights: dict[str, tuple[float, ...]]
    description: str
    folds: int = 1  # > 1: scores are out-of-fold (cross-validation), not a test split
    selection: Intervals | None = None  # cross-validation: the choice itself, made per fold on inner dev (nested)
    selected: tuple[str, ...] = ()  # the candidate each fold chose
    scored_by: tuple[str, ...] = ()  # per candidate, the probe behind its figures when they differ (screened probe)
    seconds: dict[str, float] = field(default_factory=dict)  # wall time of the protocol's stages
    split_name: str = ""  # where the scores come from, when neither a test split nor out-of-fold (clustering)
    outputs: np.ndarray | None = field(default=None, repr=False)  # [C, n] per-example outputs the intervals came from
    gold: np.ndarray | None = field(default=None, repr=False)  # [n] their targets (None: per-example scores)
    # the choosing data's own per-example outputs [C, n_dev] and targets (None: per-example scores): what a choice
    # between two candidates rests on (choice.choose keeps the model's own reading when it is tied on them)
    validation_outputs: np.ndarray | None = field(default=None, repr=False)
    validation_gold: np.ndarray | None = field(default=None, repr=False)
    # figures reported beside the metric on the same rows (point estimates, metrics/reported.py): name -> [C]
    reported: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def split(self) -> str:
        """Where the scores come from: 'test', or 'cv10' for 10-fold out-of-fold scores."""
        return self.split_name or (f"cv{self.folds}" if self.folds > 1 else "test")


@dataclass(frozen=True)
class LateInteractionPick:
    """The late_interaction protocol's pick (retrieval): its multi-vector recipe, written beside the sweep's own
    (`recipe.late_interaction.json`), the projection its reduction fitted, how it compares with the recommended
    pooled reading on the test queries, and each late-interaction row's index size per document."""

    candidate: Candidate
    recipe: Recipe
    projection: TokenProjection | None
    comparison: str
    bytes_per_document: dict[str, float]


@dataclass(frozen=True)
class Staging:
    """How a `--rows auto` sweep used its rows: every look, where it stopped, and what it saved."""

    looks: tuple[Look, ...]
    planned: tuple[int, ...]  # rows at each planned look (the last is every row)
    confidence: float  # every interval's level: 1 - 0.05 / len(planned)
    tolerance: float
    seconds: float  # wall time of every look
    estimated_all_seconds: float  # every row scored, from this run's own per-row costs (see `_estimate_all`)

    @property
    def rows(self) -> int:
        return self.looks[-1].rows

    @property
    def total(self) -> int:
        return self.planned[-1]

    @property
    def settled(self) -> bool:
        """The rule stopped it before every row was read."""
        return self.looks[-1].settled and self.rows < self.total

    @property
    def saved_seconds(self) -> float:
        return max(0.0, self.estimated_all_seconds - self.seconds)

    def as_dict(self) -> dict:
        return {
            "rows": self.rows,
            "total_rows": self.total,
            "planned": list(self.planned),
            "settled": self.settled,
            "confidence": self.confidence,
            "settle_tolerance": self.tolerance,
            "seconds": round(self.seconds, 1),
            "estimated_all_seconds": round(self.estimated_all_seconds, 1),
            "saved_seconds": round(self.saved_seconds, 1),
            "looks": [
                {
                    "rows": look.rows,
                    "pick": look.pick,
                    "settled": look.settled,
                    "largest_gap": None if not np.isfinite(look.largest_gap) else round(look.largest_gap, 6),
                    "ahead": look.ahead,
                    "projected_gap": None if not np.isfinite(look.projected_gap) else round(look.projected_gap, 6),
                    "reaching": look.reaching,
                    "seconds": round(look.seconds, 1),
                }
                for look in self.looks
            ],
        }


@dataclass(frozen=True)
class SweepResult:
    task: str
    kind: TaskKind
    model: str
    fingerprint: str
    seed: int
    protocols: dict[str, ProtocolResult]
    recommended: Candidate
    recipe: Recipe
    basis: str
    disagreement: str | None
    timings: dict[str, float]
    notes: tuple[str, ...] = field(default_factory=tuple)
    postprocessor: PostProcessor | None = None  # fitted for the recommended candidate, when it has one
    label_free: LabelFreeScores | None = None  # every label-free component, when the label_free protocol ran
    trust: Trust | None = None  # a labelled task: how far the label-free pick can be trusted on it
    late_interaction: LateInteractionPick | None = None  # retrieval with --protocols ...,late_interaction
    staging: Staging | None = None  # --rows auto on a task large enough to stage: its looks and where it stopped
    rows: int | None = None  # the rows (examples, or queries) the figures come from

    @property
    def main(self) -> ProtocolResult:
        """The protocol the recommendation is made by."""
        return self.protocols[self.kind.main_protocol]
