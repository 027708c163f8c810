"""`bertlens recommend`: measure the user's data and say what to do, decision by decision, with the evidence.

The chapter's decision framework as five measured steps, each within what is left of a time budget:
  1. text length vs the model's limit       -> truncate / head+tail / windows
  2. domain fit (tokenizer, masked-LM loss)  -> continue pre-training (`pretrain`) or not
  3. representation (a sweep on a sample)    -> the recipe, its interval, the candidates tied with it
                                                (whitening scored as a candidate for similarity tasks)
  4. frozen probe vs a quick fine-tune       -> whether fine-tuning is worth its cost here
  5. latency of the recipe (fp32, bf16, its  -> which precision or export to serve, or that a student is needed
     own gated ONNX int8 export)
A step the budget cannot cover gives the rule-of-thumb answer, marked as such. The steps are `Step` objects over
one `Walk` (the run's state: the budget, the decisions so far and the chosen recipe, in memory); which steps run is
the task kind's (`steps_for`: retrieval runs its own three), and progress counts those. Every finished step is
cached in OUT/steps/ (its decisions and recipe, keyed by data, model and settings; the latency step also by its
budget, target, alternatives and int8 choice), so an interrupted run resumes from there.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from bertlens.encoding.encoder import Encoder
from bertlens.errors import BertlensError
from bertlens.experiments.sweep import SweepConfig, check_config
from bertlens.extras import has_extra
from bertlens.io.cache import cached_result, content_key
from bertlens.io.run_context import RunContext
from bertlens.models import weights_read_once
from bertlens.representation.recipe import Recipe
from bertlens.tasks.kinds import JUDGEMENTS
from bertlens.tasks.loaders import TaskData
from bertlens.workflows.decision import Budget, CommandSources, Decision, fill_commands, sample_rows
from bertlens.workflows.domain_step import reference_corpus, step_domain
from bertlens.workflows.fine_tune_step import fine_tune_or_rule
from bertlens.workflows.label_free_step import no_labels_fine_tune, step_label_free
from bertlens.workflows.latency_step import Alternative, plan_int8, step_latency
from bertlens.workflows.length_step import step_lengths
from bertlens.workflows.representation_step import step_representation, sweep_sample
from bertlens.workflows.retrieval_step import step_retrieval_fine_tune, step_retrieval_representation


@dataclass(frozen=True)
class Recommendation:
    task: str
    model: str
    decisions: tuple[Decision, ...]
    recipe: Recipe
    seconds: float
    notes: tuple[str, ...] = field(default_factory=tuple)


def _int8_plan(served: Recipe, texts: list[str], out: Path, budget: Budget, own_int8: bool) -> tuple[Path | None, str]:
    """Where the latency step writes its own int8 export (None: not made) and how long it was planned to take (or,
    when the budget is short, why it was not made), from a trial pass on the user's texts."""
    if not own_int8:
        return None, ""
    if not has_extra("onnx"):
        return None, "own ONNX int8 skipped: the 'onnx' extra is not installed (pip install 'bertlens[onnx]')"
    plan = plan_int8(served, texts)
    if budget.left() > plan.seconds:
        return out / "onnx-int8", f"own ONNX int8: {plan.describe()}"
    return None, f"own ONNX int8 skipped: it needs {plan.describe()}, {max(budget.left(), 0):.0f} s of the budget left"


@dataclass(frozen=True)
class RecommendOptions:
    budget_minutes: float = 15.0  # the whole walk's time budget
    latency_budget_ms: float | None = None  # one text's latency the served recipe must meet
    throughput_target: float | None = None  # texts/s the served recipe must reach
    alternatives: tuple[Alternative, ...] = ()  # faster things to serve, timed beside the recipe
    own_int8: bool = True  # the latency step exports the recipe to ONNX int8 behind the fidelity gate itself
    data: Path | None = None  # the shared data folder holding the domain step's reference corpus ($BERTLENS_DATA)
    prompt_sets: tuple = ()  # retrieval: prompt sets to sweep
    sources: CommandSources = CommandSources()  # what the printed commands' DATA and TEXTS stand for (OUT: run.out)


def run_recommend(
    task: TaskData, model: str, run: RunContext, options: RecommendOptions = RecommendOptions()
) -> Recommendation:
    """Run the steps within the budget, the model's weights read from disk once for all of them (each step's
    encoders and fine-tuning runs start from a copy in memory: models.weights_read_once)."""
    with weights_read_once():
        return _recommend(task, model, run, options)


@dataclass
class Walk:
    """One recommend run's state: what every step reads (the task, the model, the budget, the options) and what the
    steps have decided so far, the chosen recipe among it, in memory."""

    task: TaskData
    model: str
    encoder: Encoder
    run: RunContext
    options: RecommendOptions
    budget: Budget
    key: str  # the data, model, seed and prompts: a finished step is reused only under the same key
    decisions: list[Decision] = field(default_factory=list)
    recipe: Recipe | None = None  # the representation step's choice (the other steps' changes apply on top)
    notes: list[str] = field(default_factory=list)

    @property
    def steps_dir(self) -> Path:
        return self.run.out / "steps"

    def chosen(self) -> Recipe:
        return self.recipe or Recipe(model=self.model)

    def served(self) -> Recipe:
        """The chosen recipe with every decision's changes so far (e.g. the length step's long-text reading)."""
        recipe = self.chosen()
        for decision in self.decisions:
            recipe = recipe.replace(**decision.recipe_changes) if decision.recipe_changes else recipe
        return recipe


@dataclass(frozen=True)
class Outcome:
    """What a step decided (one decision, or two for the retrieval sweep: representation and long documents) and the
    recipe it chose, if it chooses one; cached whole in OUT/steps/NAME.json."""

    decisions: tuple[Decision, ...]
    recipe: Recipe | None = None

    def to_dict(self) -> dict:
        return {"decisions": [asdict(d) for d in self.decisions], "recipe": self.recipe and self.recipe.to_dict()}

    @classmethod
    def from_dict(cls, data: dict) -> Outcome:
        recipe = Recipe.from_dict(data["recipe"]) if data["recipe"] else None
        return cls(tuple(Decision.from_dict(d) for d in data["decisions"]), recipe)


def _none(walk: Walk) -> tuple:
    return ()


@dataclass(frozen=True)
class Step:
    """One step of the walk: its cache file's name, what progress shows, and how it decides from the walk so far.
    `settings` are what, besides the walk's key, must match for a finished step to be reused; a step that is not
    `cached` (it measures nothing) is decided again on every run."""

    name: str
    label: str
    decide: Callable[[Walk], Outcome]
    settings: Callable[[Walk], tuple] = _none
    cached: bool = True

    def outcome(self, walk: Walk) -> Outcome:
        """The step's outcome from OUT/steps/ when its key matches, else decided (and timed) now."""
        if not self.cached:
            return self.decide(walk)

        def timed() -> Outcome:
            start = time.perf_counter()
            outcome = self.decide(walk)
            took = round(time.perf_counter() - start, 1)
            return replace(outcome, decisions=tuple(replace(d, seconds=took) for d in outcome.decisions))

        key = content_key([walk.key, STEP_FORMAT, self.name, *self.settings(walk)])
        return cached_result(walk.steps_dir / f"{self.name}.json", key, timed, Outcome.to_dict, Outcome.from_dict)


STEP_FORMAT = 2  # a step's cache file holds an Outcome (decisions and recipe); older files are recomputed


def _lengths(walk: Walk) -> Outcome:
    task = walk.task
    measure = task.kind.labelled and walk.budget.left() > 0.7 * walk.budget.seconds
    return Outcome((step_lengths(task, walk.encoder, walk.run.seed, measure=measure, progress=walk.run.progress),))


def _domain(walk: Walk) -> Outcome:
    reference = reference_corpus(walk.options.data)
    return Outcome((step_domain(walk.task, walk.encoder, reference, walk.run.seed),))


def _representation(walk: Walk) -> Outcome:
    """The label-free sweep for texts alone, else a sweep on a sample sized to the budget."""
    task, run = walk.task, walk.run
    cache_dir = run.cache_dir or walk.steps_dir / "cache"
    if not task.kind.labelled:
        decision, recipe = step_label_free(task, walk.model, cache_dir, run.seed, run.progress)
    else:
        sweep_task, plan = sweep_sample(task, walk.model, walk.budget.left(), run.seed)
        decision, recipe = step_representation(sweep_task, walk.model, cache_dir, run.seed, run.progress, plan)
    return Outcome((decision,), recipe)


def _fine_tune(walk: Walk) -> Outcome:
    run = walk.run
    decision = fine_tune_or_rule(walk.task, walk.model, walk.chosen(), walk.steps_dir, run.seed, walk.budget,
                                 run.progress)  # fmt: skip
    return Outcome((decision,))


def _retrieval_representation(walk: Walk) -> Outcome:
    """Document lengths, then one retrieval sweep: the representation and the long-document reading."""
    task, run = walk.task, walk.run
    documents = sample_rows(list(task.collection.documents), 5000, run.seed)
    tokenizer = walk.encoder.tokenizer
    lengths = np.array([len(ids) for ids in tokenizer(documents, add_special_tokens=True)["input_ids"]])
    over = float((lengths > walk.encoder.max_length).mean())
    chosen, long_documents, recipe, _ = step_retrieval_representation(
        task, walk.model, run.cache_dir or walk.steps_dir / "cache", run.seed, over, run.progress,
        walk.options.prompt_sets,
    )  # fmt: skip
    return Outcome((chosen, long_documents), recipe)


def _retrieval_fine_tune(walk: Walk) -> Outcome:
    run = walk.run
    return Outcome((step_retrieval_fine_tune(walk.task, walk.chosen(), walk.steps_dir, run.seed, walk.budget,
                                             run.progress),))  # fmt: skip


def _latency(walk: Walk) -> Outcome:
    # in a seeded random order: the step times and calibrates on the first ones, and a file sorted by genre, label
    # or date would otherwise vouch for one corner of it (bench/calibration_shift.py)
    every = walk.task.all_texts()
    served, options = walk.served(), walk.options
    texts = [every[i] for i in np.random.default_rng(walk.run.seed).permutation(len(every))]
    where, planned = _int8_plan(served, texts, walk.run.out, walk.budget, options.own_int8)
    decision = step_latency(served, texts, options.latency_budget_ms, options.throughput_target, options.alternatives,
                            where, walk.run.progress, planned)  # fmt: skip
    return Outcome((decision,))


def _latency_settings(walk: Walk) -> tuple:
    """The latency step is reused only for the same served recipe, budget, target, alternatives and int8 choice."""
    options = walk.options
    alternatives = [str(a.path) for a in options.alternatives]
    return (walk.served().to_dict(), options.latency_budget_ms, options.throughput_target, alternatives,
            options.own_int8)  # fmt: skip


LATENCY = Step("latency", "latency", _latency, _latency_settings)
RETRIEVAL_STEPS = (
    Step("representation", "representation", _retrieval_representation),
    Step("fine_tune", "fine-tuning", _retrieval_fine_tune),
    LATENCY,
)


def steps_for(task: TaskData) -> tuple[Step, ...]:
    """The steps that will run for this task, in order: the kind's table decides (judged queries over a corpus get
    the retrieval sweep; texts without labels get no fine-tuning comparison)."""
    if task.kind.target == JUDGEMENTS:
        return RETRIEVAL_STEPS
    fine_tune = (
        Step("fine_tune", "frozen or fine-tuned", _fine_tune)
        if task.kind.labelled
        else Step("fine_tune", "frozen or fine-tuned", lambda walk: Outcome((no_labels_fine_tune(),)), cached=False)
    )
    return (
        Step("lengths", "text length", _lengths),
        Step("domain", "domain", _domain),
        Step("representation", "representation", _representation),
        fine_tune,
        LATENCY,
    )


def _recommend(task: TaskData, model: str, run: RunContext, options: RecommendOptions) -> Recommendation:
    """Walk the task's steps within the budget over one state; each finished step is cached in run.out/steps/.

    `options.own_int8`: the latency step exports the recipe to ONNX int8 behind the fidelity gate (OUT/onnx-int8)
    and times it with the rest, when the budget has time for it (latency_step.plan_int8: from a trial pass on the
    user's texts). The time-hungry steps (the long-text comparison, fine-tuning) size themselves to what is left of
    the budget and fall back to the rule of thumb, marked as such, when even their smallest version does not fit.
    """
    if options.budget_minutes <= 0:
        raise BertlensError("--budget-minutes must be positive")
    check_config(SweepConfig(prompt_sets=tuple(options.prompt_sets)), task.kind, task.name)  # before any work
    encoder = Encoder(model)
    prompts = [[p.name, p.query, p.document] for p in options.prompt_sets]  # a finished step is reused for the same
    key = content_key([task.name, task.kind.name, model, encoder.ref.fingerprint, run.seed] + prompts, task.all_texts())
    walk = Walk(task, model, encoder, run, options, Budget(options.budget_minutes * 60), key)
    walk.notes.extend(task.notes)  # what was read (kind, dialect, folds), first in the report
    steps = steps_for(task)
    for number, step in enumerate(steps):
        run.progress(step.label, number, len(steps))
        outcome = step.outcome(walk)
        walk.decisions.extend(outcome.decisions)
        walk.recipe = outcome.recipe or walk.recipe
        if step.name == "representation" and walk.decisions[0].recipe_changes and task.kind.target != JUDGEMENTS:
            walk.notes.append(
                "The representation was swept on truncated texts; the long-text strategy applies on top of the "
                "chosen recipe (pooling and layers chosen on the first window)."
            )
    run.progress("done", len(steps), len(steps))
    sources = options.sources
    sources = replace(sources, out=str(run.out)) if sources.out == "OUT" and run.out else sources
    return _finished(task, model, walk.decisions, walk.served(), walk.budget, tuple(walk.notes), sources)


def _finished(task, model, decisions, recipe, budget: Budget, notes, sources: CommandSources) -> Recommendation:
    """The walk's result, its printed commands filled with this run's paths and data flags."""
    filled = tuple(fill_commands(d, sources) for d in decisions)
    return Recommendation(task.name, model, filled, recipe, budget.seconds - budget.left(), notes)
