"""Task heads on top of a Recipe's sentence vector: single-text and pair classification, similarity.

classification:       logits = W dropout(u) + b
pair_classification:  logits = W dropout([u, v, |u-v|, u*v]) + b   (InferSent / SBERT features)
similarity:           score = cos(u, v), trained with MSE to gold / max score (SBERT's cosine loss)
regression:           score = W dropout(u) + b, trained with MSE to gold / max |gold|
multi_label:          logits = W dropout(u) + b, one sigmoid per label (binary cross-entropy); predict gives the
                      probabilities, cut at each label's threshold chosen on dev by the objective (as the probe)
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import nn

from bertlens.errors import BertlensError, did_you_mean
from bertlens.io.atomic import atomic_path, write_json
from bertlens.representation.logits import logit_loss, logit_width, predict_classes
from bertlens.representation.pairs import pair_features, pair_width
from bertlens.tasks.kinds import KINDS, SCORE, TaskKind

KIND_OF_HEAD = {k.head: k for k in KINDS.values() if k.head}  # head name -> the task kind it is trained for
HEAD_KINDS = tuple(KIND_OF_HEAD)


@dataclass(frozen=True)
class HeadSpec:
    kind: str  # the head's name (a task kind's `head`): saved in head.json
    dim: int
    classes: int = 0  # classification kinds; labels of a label set (multi_label)
    score_max: float = 1.0  # similarity and regression: gold scores are divided by this
    dropout: float = 0.1

    def __post_init__(self) -> None:
        if self.kind not in HEAD_KINDS:
            raise BertlensError(f"unknown head '{self.kind}': {did_you_mean(self.kind, HEAD_KINDS)}")

    @property
    def task_kind(self) -> TaskKind:
        return KIND_OF_HEAD[self.kind]

    @property
    def cosine(self) -> bool:
        """A score target: the head is the cosine of the two vectors, regressed onto the scaled gold score."""
        return self.task_kind.target == SCORE and self.task_kind.pair

    @property
    def regression(self) -> bool:
        """A number per text: one linear output, regressed onto the scaled gold score."""
        return self.task_kind.target == SCORE and not self.task_kind.pair

    @classmethod
    def for_task(cls, kind: TaskKind, dim: int, train_targets: np.ndarray, *other_targets: np.ndarray) -> HeadSpec:
        """Size a head for a task: classes from every split's labels; similarity scores scaled by train's maximum."""
        if kind.head is None:
            raise BertlensError(
                f"a {kind.name} task has no fine-tuning head; fine-tune on classification or similarity"
            )
        if kind.target == SCORE:
            return cls(kind.head, dim, 0, float(max(np.max(np.abs(train_targets)), 1e-9)))
        if kind.label_sets:
            return cls(kind.head, dim, int(train_targets.shape[1]))
        classes = int(max(np.max(t) for t in (train_targets, *other_targets))) + 1
        return cls(kind.head, dim, classes)


class Head(nn.Module):
    def __init__(self, spec: HeadSpec):
        super().__init__()
        self.spec = spec
        self.dropout = nn.Dropout(spec.dropout)
        self.linear = None
        kind = spec.task_kind
        if not spec.cosine:
            width = pair_width(spec.dim, kind) if kind.pair else spec.dim
            outputs = 1 if spec.regression else spec.classes if kind.label_sets else logit_width(spec.classes)
            self.linear = nn.Linear(width, outputs)

    def forward(self, u: torch.Tensor, v: torch.Tensor | None = None) -> torch.Tensor:
        """u, v [B, D] -> logits [B, K] (K = 1 for two classes) or cosine scores [B]."""
        if self.spec.cosine:
            return nn.functional.cosine_similarity(u, v, dim=-1)  # [B]
        kind = self.spec.task_kind
        features = pair_features(u, v if kind.pair else None, kind)
        return self.linear(self.dropout(features))  # [B, K]

    def loss(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        if self.spec.cosine:
            return nn.functional.mse_loss(outputs, targets.float() / self.spec.score_max)
        if self.spec.regression:
            return nn.functional.mse_loss(outputs[:, 0], targets.float() / self.spec.score_max)
        if self.spec.task_kind.label_sets:
            return nn.functional.binary_cross_entropy_with_logits(outputs, targets.float())
        return logit_loss(outputs, targets)

    def predict(self, outputs: torch.Tensor) -> torch.Tensor:
        """Class ids [B], similarity or regression scores [B], or each label's probability [B, L]."""
        if self.spec.cosine:
            return outputs
        if self.spec.regression:
            return outputs[:, 0] * self.spec.score_max
        if self.spec.task_kind.label_sets:
            return torch.sigmoid(outputs)  # cut per label by the objective (training/objectives.py)
        return predict_classes(outputs)

    def save(self, directory: Path) -> None:
        with atomic_path(directory / "head.safetensors") as tmp:
            save_file({k: v.contiguous() for k, v in self.state_dict().items()}, str(tmp))
        write_json(directory / "head.json", asdict(self.spec))

    @classmethod
    def load(cls, directory: Path) -> Head:
        spec_file = directory / "head.json"
        if not spec_file.is_file():
            raise BertlensError(f"{directory}: no head.json; is this a bertlens fine-tuned model directory?")
        head = cls(HeadSpec(**json.loads(spec_file.read_text())))
        if head.linear is not None:
            head.load_state_dict(load_file(str(directory / "head.safetensors")))
        return head
