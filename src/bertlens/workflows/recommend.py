"""`bertlens recommend`: measure the user's data and say what to do, decision by decision, with the evidence.

The chapter's decision framework as five measured steps, each within what is left of a time budget:
  1. text length vs the model's limit       -> truncate / head+tail / windows
  2. domain fit (tokenizer, masked-LM loss)  -> continue pre-training (`pretrain`) or not
  3. representation (a sweep on a sample)    -> the recipe, its interval, the candidates tied with it
                                                (whitening scored as a candidate for similarity tasks)
  4. frozen probe vs a quick fine-tune       -> whether fine-tuning is worth its cost here
  5. latency of the recipe (fp32, bf16, its  -> which precision or export to serve, or that a student is needed
     own gated ONNX int8 export)
A step the budget cannot cover gives the rule-of-thumb answer, marked as such. Every finished step is
cached in OUT/steps/ (keyed by data, model and settings; the latency step also by its budget, target,
alternatives and int8 choice), so an interrupted run resumes from there.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from bertlens.encoding.encoder import Encoder
from bertlens.errors import BertlensError
from bertlens.experiments.sweep import SweepConfig, check_config
from bertlens.extras import has_extra
from bertlens.io.atomic import write_json
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


def _retrieval_decisions(task, model, encoder, run: RunContext, budget, cached, prompt_sets=()):
    """Document lengths, representation and long-document reading (one retrieval sweep), frozen vs fine-tuned;
    returns the decisions and the recipe they make. The steps' files go to run.out/steps."""
    steps, cache_dir, seed, progress = run.out / "steps", run.cache_dir, run.seed, run.progress
    documents = sample_rows(list(task.collection.documents), 5000, seed)
    lengths = np.array([len(ids) for ids in encoder.tokenizer(documents, add_special_tokens=True)["input_ids"]])
    over = float((lengths > encoder.max_length).mean())
    recipe_path = steps / "recipe.json"
    progress("representation", 1, 5)

    reading_path = steps / "long_documents.json"

    def representation() -> Decision:
        chosen, long_documents, recipe, _ = step_retrieval_representation(
            task, model, cache_dir or steps / "cache", seed, over, progress, prompt_sets
        )
        recipe.save(recipe_path)
        write_json(reading_path, asdict(long_documents))
        return chosen

    decisions = [cached("representation", representation)]
    if reading_path.is_file():
        decisions.append(Decision.from_dict(json.loads(reading_path.read_text(encoding="utf-8"))))
    recipe = Recipe.load(recipe_path) if recipe_path.is_file() else Recipe(model=model)
    progress("fine-tuning", 3, 5)
    decisions.append(cached("fine_tune", lambda: step_retrieval_fine_tune(task, recipe, steps, seed, budget, progress)))
    for decision in decisions:
        recipe = recipe.replace(**decision.recipe_changes) if decision.recipe_changes else recipe
    return decisions, recipe


def _representation(task, model, cache_dir, recipe_path, seed, budget, progress) -> Decision:
    """Step 3: the label-free sweep for texts alone, else a sweep on a sample sized to the budget; the recipe is
    saved next to the steps."""
    if not task.kind.labelled:
        decision, recipe = step_label_free(task, model, cache_dir, seed, progress)
    else:
        sweep_task, plan = sweep_sample(task, model, budget.left(), seed)
        decision, recipe = step_representation(sweep_task, model, cache_dir, seed, progress, plan)
    recipe.save(recipe_path)
    return decision


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
    """Run the five steps within the budget, the model's weights read from disk once for all of them (each step's
    encoders and fine-tuning runs start from a copy in memory: models.weights_read_once)."""
    with weights_read_once():
        return _recommend(task, model, run, options)


def _recommend(task: TaskData, model: str, run: RunContext, options: RecommendOptions) -> Recommendation:
    """Run the five steps within the budget; each finished step is cached in run.out/steps/.

    `options.own_int8`: the latency step exports the recipe to ONNX int8 behind the fidelity gate (OUT/onnx-int8)
    and times it with the rest, when the budget has time for it (latency_step.plan_int8: from a trial pass on the
    user's texts). The time-hungry steps (the long-text comparison, fine-tuning) size themselves to what is left of
    the budget and fall back to the rule of thumb, marked as such, when even their smallest version does not fit.
    """
    out, cache_dir, seed, progress = run.out, run.cache_dir, run.seed, run.progress
    budget_minutes, latency_budget_ms, throughput_target = (
        options.budget_minutes,
        options.latency_budget_ms,
        options.throughput_target,
    )
    alternatives, own_int8, data, prompt_sets = (
        options.alternatives,
        options.own_int8,
        options.data,
        options.prompt_sets,
    )
    sources = replace(options.sources, out=str(out)) if options.sources.out == "OUT" and out else options.sources
    if budget_minutes <= 0:
        raise BertlensError("--budget-minutes must be positive")
    check_config(SweepConfig(prompt_sets=tuple(prompt_sets)), task.kind, task.name)  # before any work
    budget = Budget(budget_minutes * 60)
    encoder = Encoder(model)
    prompts = [[p.name, p.query, p.document] for p in prompt_sets]  # a finished step is reused for the same ones
    key = content_key([task.name, task.kind.name, model, encoder.ref.fingerprint, seed] + prompts, task.all_texts())
    steps = out / "steps"
    decisions = []
    notes = []

    def latency(served: Recipe) -> Decision:
        texts = task.all_texts()
        where, planned = _int8_plan(served, texts, out, budget, own_int8)
        return step_latency(served, texts, latency_budget_ms, throughput_target, alternatives, where, progress, planned)

    def cached(name: str, compute: Callable[[], Decision], settings: tuple = ()) -> Decision:
        """The step's decision from OUT/steps/ when the data, model and the step's own `settings` match, else computed."""

        def timed() -> Decision:
            start = time.perf_counter()
            decision = compute()
            return replace(decision, seconds=round(time.perf_counter() - start, 1))

        step_key = content_key([key, name, *settings])
        return cached_result(steps / f"{name}.json", step_key, timed, asdict, Decision.from_dict)

    def cached_latency(served: Recipe) -> Decision:
        """The latency step, reused only for the same served recipe, budget, target, alternatives and int8 choice."""
        settings = (served.to_dict(), latency_budget_ms, throughput_target, [str(a.path) for a in alternatives])
        return cached("latency", lambda: latency(served), (*settings, own_int8))

    if task.kind.target == JUDGEMENTS:  # judged queries over a corpus: the kind's target decides, not its name
        decisions, recipe = _retrieval_decisions(task, model, encoder, run, budget, cached, prompt_sets)
        decisions.append(cached_latency(recipe))
        return _finished(task, model, decisions, recipe, budget, (), sources)
    progress("text length", 0, 5)
    measure_lengths = task.kind.labelled and budget.left() > 0.7 * budget.seconds
    decisions.append(
        cached("lengths", lambda: step_lengths(task, encoder, seed, measure=measure_lengths, progress=progress))
    )
    progress("domain", 1, 5)
    decisions.append(cached("domain", lambda: step_domain(task, encoder, reference_corpus(data), seed)))
    progress("representation", 2, 5)
    recipe_path = steps / "recipe.json"

    decisions.append(
        cached(
            "representation",
            lambda: _representation(task, model, cache_dir or steps / "cache", recipe_path, seed, budget, progress),
        )
    )
    recipe = Recipe.load(recipe_path) if recipe_path.is_file() else Recipe(model=model)
    if decisions[0].recipe_changes:
        notes.append(
            "The representation was swept on truncated texts; the long-text strategy applies on top of the chosen "
            "recipe (pooling and layers chosen on the first window)."
        )
    if not task.kind.labelled:
        decisions.append(no_labels_fine_tune())
    else:
        decisions.append(
            cached("fine_tune", lambda: fine_tune_or_rule(task, model, recipe, steps, seed, budget, progress))
        )
    progress("latency", 4, 5)
    served = recipe.replace(**decisions[0].recipe_changes) if decisions[0].recipe_changes else recipe
    decisions.append(cached_latency(served))
    progress("done", 5, 5)
    for decision in decisions:
        recipe = recipe.replace(**decision.recipe_changes) if decision.recipe_changes else recipe
    return _finished(task, model, decisions, recipe, budget, tuple(notes), sources)


def _finished(task, model, decisions, recipe, budget: Budget, notes, sources: CommandSources) -> Recommendation:
    """The walk's result, its printed commands filled with this run's paths and data flags."""
    filled = tuple(fill_commands(d, sources) for d in decisions)
    return Recommendation(task.name, model, filled, recipe, budget.seconds - budget.left(), notes)
