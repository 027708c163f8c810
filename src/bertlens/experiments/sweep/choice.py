"""From scores to a recommendation: ranking, the choice (cross-validated under CV), the notes, the SweepResult."""

from __future__ import annotations

import numpy as np

from bertlens.errors import BertlensError
from bertlens.features.bank import Bank
from bertlens.probing.candidates import LIMITATIONS
from bertlens.representation.recipe import Recipe
from bertlens.tasks.kinds import RETRIEVAL, SIMILARITY
from bertlens.tasks.loaders import TaskData
from bertlens.tasks.splits import Fold

from .config import SweepConfig
from .results import RECIPE_PROBES, ProtocolResult, SweepResult


def mean_over_folds(per_fold: np.ndarray) -> np.ndarray:
    """[F, C] -> [C], summed fold by fold (the order the published figures used)."""
    validation = np.zeros(per_fold.shape[1])
    for row in per_fold:
        validation += row / len(per_fold)
    return validation


def rank(validation: np.ndarray, test_value: np.ndarray, candidates, width: int, scored_by=()) -> list[int]:
    """Candidates with a defined score, best validation first; ties: fewer dimensions, then a single layer.

    With a screened probe only the candidates the full probe scored can be chosen (the screen's
    figures rank, they do not recommend)."""
    defined = [
        i
        for i in range(len(candidates))
        if np.isfinite(validation[i])
        and np.isfinite(test_value[i])
        and (not scored_by or scored_by[i] in RECIPE_PROBES)
    ]
    return sorted(
        defined,
        key=lambda i: (-round(validation[i], 6), candidates[i].width(width), candidates[i].mixer != "single"),
    )


def choose(result: ProtocolResult, width: int) -> int:
    """Best validation score among candidates whose score is defined; never an undefined one."""
    order = rank(result.validation, result.test.value, result.candidates, width, result.scored_by)
    if not order:
        raise BertlensError(
            f"no candidate has a defined {result.metric} under protocol '{result.protocol}' (constant vectors or "
            "constant targets?); check the task's labels or scores"
        )
    return order[0]


def nested_selection(
    per_fold: np.ndarray,
    outputs: np.ndarray,
    folds: list[Fold],
    candidates,
    bank: Bank,
    test_value: np.ndarray,
    scored_by: tuple[str, ...] = (),
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Cross-validation of the choice itself: in each fold, the candidate chosen on that fold's inner dev
    split, scored on that fold's held-out rows. Returns its out-of-fold outputs [n] and the names chosen."""
    chosen, selected, offset = [], np.zeros(outputs.shape[1]), 0
    for k, fold in enumerate(folds):
        order = rank(per_fold[k], test_value, candidates, bank.width, scored_by)
        pick = order[0] if order else 0
        selected[offset : offset + len(fold.test)] = outputs[pick, offset : offset + len(fold.test)]
        chosen.append(candidates[pick].name)
        offset += len(fold.test)
    return selected, tuple(chosen)


def disagreement(protocols: dict[str, ProtocolResult]) -> str | None:
    """When cosine and the probe pick different best candidates: say so, and how far apart they are."""
    if "cosine" not in protocols or "probe" not in protocols:
        return None
    cos, probe = protocols["cosine"], protocols["probe"]
    best_cos, best_probe = cos.candidates[cos.test.best].name, probe.candidates[probe.test.best].name
    if best_cos == best_probe:
        return None
    in_probe = {c.name: i for i, c in enumerate(probe.candidates)}
    text = f"cosine and probe disagree on the best candidate: {best_cos} (cosine) vs {best_probe} (probe)"
    if best_cos not in in_probe:
        return text + (
            f"; the probe does not score {best_cos} (ScalarMix weights and post-processing are "
            "fitted for the cosine protocol only)"
        )
    tied = bool(probe.test.tied_with_best[in_probe[best_cos]])
    return (
        text
        + f"; under the probe, {best_cos} is {'statistically tied with' if tied else 'significantly below'} {best_probe}"
    )


def notes(task: TaskData, base: Recipe, config: SweepConfig) -> tuple[str, ...]:
    """What the reader of this sweep's figures should know about how they were made."""
    found = LIMITATIONS
    if config.protocols is None and task.uses_cv and task.kind is SIMILARITY:
        found += (
            f"the ridge probe was not run: under {task.folds}-fold cross-validation it costs several times the rest "
            "of the sweep (about 4x on 5,000 pairs, docs/results.md); add it with --protocols cosine,probe",
        )
    if base.long_text and ":max" in base.long_text:
        found += (
            "with max-aggregated windows, layer mixes are scored as the mix of per-layer maxima; the recipe "
            "applies the max to the mixed vectors, so mixed candidates reproduce closely, not exactly",
        )
    if config.postprocess and config.bank_dtype == "float16" and task.kind is SIMILARITY:
        found += (
            "post-processed candidates are scored from a float16 bank; whitening can amplify its rounding where the "
            "space is ill-conditioned (a few points on a random model). --bank-dtype float32 makes the scores equal "
            "to what the recipe gives",
        )
    if task.kind is RETRIEVAL:
        found += (
            "ScalarMix is not scored for retrieval: its weights are learned from labels, and judged queries are "
            "too few to both learn and choose them",
        )
    if config.postprocess and task.kind.main_protocol != "cosine":
        found += (
            f"post-processing ({config.postprocess}) is scored for similarity tasks only: the linear probe "
            "standardises its features, so centring and whitening cannot change what it learns",
        )
    return found


def make_result(task, encoder, base, config, width: int, protocols, timings, fitted, validated_by: str) -> SweepResult:
    """The recommendation from the main protocol's validation scores, and everything the reports need."""
    main = protocols[task.kind.main_protocol]
    chosen = choose(main, width)
    recommended = main.candidates[chosen]
    recipe = recommended.recipe(base, main.mix_weights.get(recommended.name))
    split_word = f"mean inner-dev score over {validated_by}" if task.uses_cv else "dev score"
    if task.kind is RETRIEVAL:
        split_word = f"{main.metric} on {validated_by}"
    if not task.kind.labelled:
        split_word = "the mean combined label-free score over the subsamples"
    basis = (
        f"protocol '{main.protocol}' ({main.description}); chosen by {split_word} "
        f"{main.validation[chosen]:.4f}, ties broken by fewer dimensions then single layers"
    )
    if task.kind.main_protocol == "cosine":
        basis += f"; cosine is how {task.kind.name} embeddings are used and needs no training"
    return SweepResult(
        task.name,
        task.kind,
        encoder.ref.name,
        encoder.ref.fingerprint,
        config.seed,
        protocols,
        recommended,
        recipe,
        basis,
        disagreement(protocols),
        timings,
        task.notes + notes(task, base, config),
        fitted.get(recommended.name),
    )
