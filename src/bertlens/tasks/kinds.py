"""Task kinds as data: what each kind of task is, read by every loader, protocol, report and command.

A new kind of task is one entry here (what its examples hold, how it is scored, what trains on it) plus its loader
and its sweep protocol; nothing else compares kind names. An unknown kind fails in one line that names the known
ones, wherever it is read (`task_kind`).
"""

from __future__ import annotations

from dataclasses import dataclass

from bertlens.errors import BertlensError, did_you_mean

CLASS, SCORE, LABEL_SET, JUDGEMENTS, NONE = "class", "score", "label_set", "judgements", "none"  # a kind's target
SYMMETRIC = "symmetric"  # (|u - v|, u * v): order-free, for similarity (SentEval's STS features)
ORDERED = "ordered"  # (u, v, |u - v|, u * v): InferSent's features, for pair classification (NLI)


@dataclass(frozen=True, eq=False)
class TaskKind:
    name: str
    pair: bool  # two texts per example (similarity, pair classification), one otherwise
    target: str  # CLASS (label ids), SCORE (a real number), LABEL_SET (bool [N, L]), JUDGEMENTS (qrels), NONE
    metric: str  # the metric its figures are in (metrics/bootstrap.py computes each)
    protocols: tuple[str, ...]  # the sweep's protocols that apply; the first is the one a recommendation rests on
    head: str | None  # the fine-tuning head (training/heads.py) or None: fine-tuned another way, or not at all
    stratify: bool  # hold-outs and folds keep the class proportions
    pair_features: str = ""  # how a probe reads a pair (representation/pairs.py): SYMMETRIC, ORDERED, or "" (one text)

    def __eq__(self, other: object) -> bool:
        """Kinds are the singletons below; a comparison with a name is the string dispatch this module replaces."""
        if isinstance(other, str):
            raise TypeError(f"TaskKind {self.name!r} compared with the string {other!r}: read its fields instead")
        return self is other

    __hash__ = object.__hash__

    @property
    def main_protocol(self) -> str:
        return self.protocols[0]

    @property
    def labelled(self) -> bool:
        return self.target != NONE

    @property
    def single_text_classes(self) -> bool:
        """Class labels of one text each (not pairs): what a probe of a text's own vector, or a document, reads."""
        return self.classes and not self.pair

    @property
    def classes(self) -> bool:
        """Targets are class labels (accuracy, stratified folds, a class index)."""
        return self.target == CLASS

    @property
    def label_sets(self) -> bool:
        """Targets are sets of labels, an indicator matrix [N, L] (micro-F1, iteratively stratified folds)."""
        return self.target == LABEL_SET

    @property
    def named_labels(self) -> bool:
        """Targets index named labels (class names, or the label set's columns), kept in the task's class_names."""
        return self.target in (CLASS, LABEL_SET)


CLASSIFICATION = TaskKind(
    "classification", False, CLASS, "accuracy", ("probe", "clustering", "label_free"), "classification", True
)
PAIR_CLASSIFICATION = TaskKind(
    "pair_classification", True, CLASS, "accuracy", ("probe",), "pair_classification", True, ORDERED
)
SIMILARITY = TaskKind(
    "similarity", True, SCORE, "spearman", ("cosine", "probe", "label_free"), "similarity", False, SYMMETRIC
)
RETRIEVAL = TaskKind(
    "retrieval", True, JUDGEMENTS, "ndcg@10", ("cosine", "late_interaction", "label_free"), None, False
)
REGRESSION = TaskKind("regression", False, SCORE, "spearman", ("probe", "label_free"), "regression", False)
MULTI_LABEL = TaskKind("multi_label", False, LABEL_SET, "micro_f1", ("probe",), "multi_label", True)
TEXTS = TaskKind("texts", False, NONE, "combined", ("label_free",), None, False)  # texts alone: label-free only

KINDS: dict[str, TaskKind] = {
    k.name: k for k in (CLASSIFICATION, PAIR_CLASSIFICATION, SIMILARITY, REGRESSION, MULTI_LABEL, RETRIEVAL, TEXTS)
}


def user_kinds() -> tuple[str, ...]:
    """The kinds a user's labelled file can be (--task-type); texts alone come in through --texts."""
    return tuple(name for name, k in KINDS.items() if k.labelled)


def task_kind(name: str | TaskKind, valid: tuple[str, ...] | None = None) -> TaskKind:
    """The kind called `name` (a TaskKind passes through), or one line naming the known ones (or those `valid`)."""
    if isinstance(name, TaskKind):
        return name
    valid = tuple(KINDS) if valid is None else valid
    if name not in valid:
        raise BertlensError(f"unknown task type '{name}': {did_you_mean(str(name), valid)}")
    return KINDS[name]
