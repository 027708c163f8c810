"""From scores to a recommendation: ranking, the choice (cross-validated under CV), the notes, the SweepResult."""

from __future__ import annotations

import numpy as np

from bertlens.errors import BertlensError
from bertlens.features.bank import Bank
from bertlens.metrics.bootstrap import paired_difference
from bertlens.models import own_pooler
from bertlens.probing.candidates import LIMITATIONS
from bertlens.representation.recipe import Recipe
from bertlens.tasks.kinds import JUDGEMENTS, SCORE
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


def own_reading(num_layers: int, pooler: str) -> str:
    """The candidate that is the model's own reading: its trained pooling (models.own_pooler) of its last layer."""
    return f"{pooler}/L{num_layers}"


def prefer_own(order: list[int], names: list[str], default: str | None, outputs, gold, metric: str, seed: int):
    """The first of `order`, unless the model's own reading `default` is tied with it on the choosing data (a paired
    bootstrap of their difference on `outputs` [C, n] includes 0): then `default`. A user is moved off the reading
    the model was trained with only when the evidence says the move is better. Returns (index, why)."""
    best = order[0]
    if default is None or default not in names or names[best] == default or outputs is None:
        return best, ""
    own = names.index(default)
    pair = np.asarray(outputs)[[own, best]]
    if own not in order or not np.isfinite(pair).all() or pair.shape[1] < 2:
        return best, ""
    gain, low, high = paired_difference(pair, gold, metric, resamples=1000, seed=seed)
    figures = f"{gain:+.4f} [{low:+.4f}, {high:+.4f}] on the choosing data (paired bootstrap)"
    if low <= 0:
        return own, (
            f"; {names[best]} scored higher on the choosing data but is tied there with the model's own reading "
            f"{default} ({figures}): the model's own reading is kept"
        )
    return best, f"; better than the model's own reading {default} by {figures}"


def choose(result: ProtocolResult, width: int, default: str | None = None, seed: int = 0) -> tuple[int, str]:
    """Best validation score among candidates whose score is defined (never an undefined one), unless it is tied
    with the model's own reading on the choosing data (prefer_own); (index, why) for the basis."""
    order = rank(result.validation, result.test.value, result.candidates, width, result.scored_by)
    if not order:
        raise BertlensError(
            f"no candidate has a defined {result.metric} under protocol '{result.protocol}' (constant vectors or "
            "constant targets?); check the task's labels or scores"
        )
    names = [c.name for c in result.candidates]
    if result.validation_outputs is None and result.protocol == "label_free" and default in names:
        own = names.index(default)  # no labels: its evidence is the paired subsamples the intervals come from
        if own in order and order[0] != own and bool(result.test.tied_with_best[own]):
            return own, f"; tied with the model's own reading {default} over the subsamples: it is kept"
        return order[0], ""
    return prefer_own(order, names, default, result.validation_outputs, result.validation_gold, result.metric, seed)


def nested_selection(
    per_fold: np.ndarray,
    outputs: np.ndarray,
    folds: list[Fold],
    candidates,
    bank: Bank,
    test_value: np.ndarray,
    scored_by: tuple[str, ...] = (),
    own: tuple | None = None,
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Cross-validation of the choice itself: in each fold, the candidate chosen on that fold's inner dev
    split (by the same rule as the recommendation: `own` = (default name, validation outputs [C, sum of dev rows],
    their gold, metric, seed) keeps the model's own reading when tied), scored on that fold's held-out rows.
    Returns its out-of-fold outputs [n] ([n, L] for label sets) and the names chosen."""
    chosen, selected, offset, dev_offset = [], np.zeros(outputs.shape[1:], dtype=outputs.dtype), 0, 0
    names = [c.name for c in candidates]
    for k, fold in enumerate(folds):
        order = rank(per_fold[k], test_value, candidates, bank.width, scored_by)
        pick = order[0] if order else 0
        if order and own is not None and own[1] is not None:
            default, dev_outputs, dev_gold, metric, seed = own
            rows = slice(dev_offset, dev_offset + len(fold.dev))
            gold = None if dev_gold is None else dev_gold[rows]
            pick, _ = prefer_own(order, names, default, dev_outputs[:, rows], gold, metric, seed)
        dev_offset += len(fold.dev)
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
    if config.protocols is None and task.uses_cv and task.kind.target == SCORE and task.kind.pair:
        found += (
            f"the ridge probe was not run: under {task.folds}-fold cross-validation it costs several times the rest "
            "of the sweep (about 4x on 5,000 pairs, docs/results-log.md); add it with --protocols cosine,probe",
        )
    if base.long_text_strategy is not None and base.long_text_strategy.aggregate == "max":
        found += (
            "with max-aggregated windows, layer mixes are scored as the mix of per-layer maxima; the recipe "
            "applies the max to the mixed vectors, so mixed candidates reproduce closely, not exactly",
        )
    if config.postprocess and config.bank_dtype == "float16" and task.kind.target == SCORE:
        found += (
            "post-processed candidates are scored from a float16 bank; whitening can amplify its rounding where the "
            "space is ill-conditioned (a few points on a random model). --bank-dtype float32 makes the scores equal "
            "to what the recipe gives",
        )
    if task.kind.target == JUDGEMENTS:
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
    chosen, why = choose(main, width, own_reading(encoder.num_layers, own_pooler(encoder.ref)), config.seed)
    recommended = main.candidates[chosen]
    recipe = recommended.recipe(base, main.mix_weights.get(recommended.name))
    split_word = f"mean inner-dev score over {validated_by}" if task.uses_cv else "dev score"
    if task.kind.target == JUDGEMENTS:
        split_word = f"{main.metric} on {validated_by}"
    if not task.kind.labelled:
        split_word = "the mean combined label-free score over the subsamples"
    basis = (
        f"protocol '{main.protocol}' ({main.description}); chosen by {split_word} "
        f"{main.validation[chosen]:.4f}, ties broken by fewer dimensions then single layers{why}"
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
