"""The label-free protocol: every candidate scored from the texts alone, and (on a labelled task) how far its pick
can be trusted, with the labels that would settle the choice."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bertlens.encoding.encoder import Encoder
from bertlens.features.bank import Bank
from bertlens.features.views import BankOptions, build_views, view_rows
from bertlens.io.cache import default_cache_dir
from bertlens.probing.candidates import enumerate_candidates
from bertlens.probing.few_labels import classification_chooser, regression_chooser, similarity_chooser
from bertlens.probing.label_free import SUBSAMPLE_SIZE as LF_SUBSAMPLE_SIZE
from bertlens.probing.label_free import SUBSAMPLES as LF_SUBSAMPLES
from bertlens.probing.label_free import LabelFreeScores, score_label_free, view_count
from bertlens.probing.label_trust import Trust, label_free_trust, last_layer_default, settle
from bertlens.progress import Progress
from bertlens.representation.recipe import Recipe

from .config import SweepConfig
from .context import SweepContext, all_rows
from .protocol import Outcome, Plan
from .results import ProtocolResult


class LabelFree:
    name = "label_free"
    reads = "three dropout / word-dropout view passes over a sample of the texts"

    def plan(self, ctx: SweepContext) -> Plan:
        return Plan(self.name, tuple(ctx.candidates(scalar_mix=False)), "")  # described once scored (its form)

    def run(self, ctx: SweepContext, plan: Plan) -> Outcome:
        result, scores = score_texts(
            ctx.bank, ctx.encoder, ctx.texts, ctx.base, ctx.cache_dir, ctx.config, ctx.progress
        )
        return Outcome(result, scores)


def score_texts(
    bank: Bank, encoder: Encoder, texts: list[str], base: Recipe, cache_dir, config: SweepConfig, progress: Progress
) -> tuple[ProtocolResult, LabelFreeScores]:
    """Every candidate but ScalarMix (learned from labels) scored from the texts alone: the bank, plus three view
    passes over a sample of the texts (probing/label_free.py)."""
    candidates = [
        c for c in enumerate_candidates(bank.num_layers, config.poolers, config.layers) if c.mixer != "scalar_mix"
    ]
    rows = view_rows(len(texts), view_count(len(texts)), config.seed)
    options = BankOptions(config.poolers, base.include_special, config.bank_dtype, base.long_text_strategy)
    views = build_views(encoder, texts, rows, default_cache_dir(cache_dir), options, config.seed, progress)
    scores = score_label_free(bank, candidates, np.arange(len(texts)), views, config.seed, progress=progress)
    form = " + ".join(f"{w:g} x {name}" for name, w in scores.form.items())
    description = (
        f"no labels read: effective rank, matrix entropy, anisotropy and uniformity of the vectors, alignment under "
        f"two dropout views and under word dropout ({len(rows)} texts encoded three more times); the combined score "
        f"is the weighted mean of each component's rank percentile across candidates ({form}), on {LF_SUBSAMPLES} "
        f"seeded subsamples of the texts (ties: paired over subsamples); ScalarMix is not scored (learned from labels)"
    )
    protocol = ProtocolResult(
        "label_free",
        "combined",
        tuple(candidates),
        scores.value("combined"),
        scores.intervals(),
        min(len(texts), LF_SUBSAMPLE_SIZE),
        {},
        description,
        split_name="text subsamples",
    )
    return protocol, scores


def labelled_trust(scores: LabelFreeScores, main: ProtocolResult, ctx: SweepContext) -> Trust:
    """The label-free pick judged by the task's labels, and the labelled choice from a few labels (settle)."""
    bank, ex, config = ctx.bank, ctx.ex, ctx.config
    names = [c.name for c in main.candidates]
    last = last_layer_default(names, bank.num_layers)
    trust = label_free_trust(
        scores, names, main.test, main.outputs, main.gold, main.metric, last, bank.width, config.seed
    )
    eligible = [i for i, c in enumerate(main.candidates) if c.mixer != "scalar_mix" and not c.post]
    chosen = [main.candidates[i] for i in eligible]
    pool = all_rows(ctx.folds) if ctx.task.uses_cv else ctx.folds[0].train
    if ctx.task.kind.classes:
        choose = classification_chooser(bank, chosen, ex.a, ex.targets, int(ex.targets.max()) + 1, config.seed)
    elif ex.b is not None:  # a pair's score: the pair cosine, untrained
        choose = similarity_chooser(bank, chosen, ex.a, ex.b, ex.targets)
    else:  # a number per text: a ridge cross-validated on the drawn rows
        choose = regression_chooser(bank, chosen, ex.a, ex.targets, config.seed)
    return replace(trust, settling=settle(lambda rows: eligible[choose(rows)], pool, main.test, config.seed))
