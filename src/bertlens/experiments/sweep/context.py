"""What every protocol of a sweep shares: the bank, the examples as bank rows, the folds, the settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from bertlens.encoding.encoder import Encoder
from bertlens.features.bank import Bank
from bertlens.models import own_pooler
from bertlens.probing.candidates import Candidate, candidate_features, enumerate_candidates
from bertlens.progress import Progress, silent
from bertlens.representation.pairs import pair_features
from bertlens.representation.postprocess import PostProcessor
from bertlens.representation.recipe import Recipe
from bertlens.tasks.loaders import TaskData
from bertlens.tasks.splits import Fold, make_folds

from .config import SweepConfig


@dataclass(frozen=True)
class Examples:
    """The task's examples as bank rows, every split stacked in one table."""

    a: np.ndarray  # [n] bank row of the first text
    b: np.ndarray | None  # [n] bank row of the second text
    targets: np.ndarray  # [n]


def examples(task: TaskData, index: dict[str, int]) -> tuple[Examples, dict[str, np.ndarray]]:
    """Stack every split into one table; returns it and each split's row indices."""
    a, b, targets, where, start = [], [], [], {}, 0
    for name, split in task.splits.items():
        a += [index[t] for t in split.texts_a]
        if split.texts_b is not None:
            b += [index[t] for t in split.texts_b]
        targets.append(split.targets)
        where[name] = np.arange(start, start + len(split))
        start += len(split)
    return Examples(np.array(a), np.array(b) if b else None, np.concatenate(targets)), where


def sweep_folds(task: TaskData, targets: np.ndarray, where: dict[str, np.ndarray], config: SweepConfig) -> list[Fold]:
    """The task's own splits (dev carved when missing), or k-fold CV when it has no test split."""
    return make_folds(
        where,
        targets,
        stratify=task.kind.stratify,
        cv_folds=task.folds if task.uses_cv else None,
        seed=config.seed,
        dev_fraction=config.dev_fraction,
    )


def all_rows(folds: list[Fold]) -> np.ndarray:
    return np.unique(np.concatenate([np.concatenate([f.train, f.dev, f.test]) for f in folds]))


@dataclass(frozen=True)
class SweepContext:
    """Built once per sweep and handed to every protocol: what it reads, never what it changes (fitted
    post-processors are the one exception: the cosine protocol leaves the recipe's own in `fitted`)."""

    task: TaskData
    bank: Bank
    ex: Examples
    folds: list[Fold]
    config: SweepConfig
    encoder: Encoder
    base: Recipe
    cache_dir: Path | None
    texts: list[str]
    progress: Progress = silent
    fitted: dict[str, PostProcessor] = field(default_factory=dict)

    @property
    def own_reading(self) -> str:
        """The candidate that is the model's own reading (its trained pooling of its last layer)."""
        return f"{own_pooler(self.encoder.ref)}/L{self.bank.num_layers}"

    @property
    def probe_device(self) -> torch.device:
        """Where the probes run: the encoder's device (a GPU when it encodes there), each job's rows moved there once.
        On the CPU this is the path there always was: the probes are torch on either."""
        return getattr(self.encoder, "device", torch.device("cpu"))

    @property
    def test_gold(self) -> np.ndarray:
        return self.ex.targets[np.concatenate([f.test for f in self.folds])]

    def candidates(self, scalar_mix: bool = True) -> list[Candidate]:
        """Every candidate the settings name (layers x poolers x mixes); without ScalarMix when it cannot be learned."""
        every = enumerate_candidates(self.bank.num_layers, self.config.poolers, self.config.layers)
        return every if scalar_mix else [c for c in every if c.mixer != "scalar_mix"]

    def pair_features(self, candidate: Candidate, rows: np.ndarray, mix: np.ndarray | None = None) -> np.ndarray:
        """[n, D] features of `rows`: the candidate's vector, or its kind's pair features of both texts."""
        u = candidate_features(self.bank, candidate, self.ex.a[rows], mix)
        v = candidate_features(self.bank, candidate, self.ex.b[rows], mix) if self.ex.b is not None else None
        return pair_features(u, v, self.task.kind)

    def stack(self, candidates: list[Candidate], ids: list[int], rows: np.ndarray, mixes: dict | None = None):
        """Features of candidates `ids` for `rows`, filled into one preallocated tensor [C, n, D]: a text's features
        are read from the bank straight into their place, a pair's are built and copied in."""
        mixes = mixes or {}
        if self.ex.b is None:
            width = candidates[ids[0]].width(self.bank.width)
            out = np.empty((len(ids), len(rows), width), dtype=np.float32)  # [C, n, D]
            for j, i in enumerate(ids):
                candidate_features(self.bank, candidates[i], self.ex.a[rows], mixes.get(candidates[i].name), out[j])
            return torch.from_numpy(out)
        out = None
        for j, i in enumerate(ids):
            features = self.pair_features(candidates[i], rows, mixes.get(candidates[i].name))  # [n, D]
            if out is None:
                out = np.empty((len(ids), *features.shape), dtype=np.float32)
            out[j] = features
        return torch.from_numpy(out)


def width_groups(candidates: list[Candidate], width: int) -> dict[int, list[int]]:
    """Candidate indices grouped by feature width (so each group stacks into one tensor)."""
    groups: dict[int, list[int]] = {}
    for i, candidate in enumerate(candidates):
        groups.setdefault(candidate.width(width), []).append(i)
    return groups
