"""`bertlens recommend`: measure the user's data and say what to do, decision by decision, with the evidence.

The chapter's decision framework as five measured steps, each within what is left of a time budget:
  1. text length vs the model's limit       -> truncate / head+tail / windows
  2. domain fit (tokenizer, masked-LM loss)  -> continue pre-training (`pretrain`) or not
  3. representation (a sweep on a sample)    -> the recipe, its interval, the candidates tied with it
                                                (whitening scored as a candidate for similarity tasks)
  4. frozen probe vs a quick fine-tune       -> whether fine-tuning is worth its cost here
  5. latency of the recipe (fp32, bf16)      -> which precision to serve, or that a student is needed
A step the budget cannot cover gives the rule-of-thumb answer, marked as such. Every finished step is
cached in OUT/steps/ (keyed by data, model and settings), so an interrupted run resumes from there.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from bertlens.embedding.embedder import Embedder
from bertlens.encoding.encoder import Encoder
from bertlens.encoding.precision import native_bf16
from bertlens.errors import BertlensError
from bertlens.experiments.compare import CompareConfig, curve, run_compare, task_splits
from bertlens.experiments.domain import default_reference, measure_domain
from bertlens.experiments.sweep import SweepConfig, run_sweep
from bertlens.io.cache import cached_result, content_key
from bertlens.progress import Progress, silent
from bertlens.representation.recipe import Recipe
from bertlens.tasks.catalog import data_dir
from bertlens.tasks.loaders import Split, TaskData
from bertlens.training.loop import TrainConfig
from bertlens.training.strategies import parse_strategy

LONG_SHARE = 0.05  # above this share of texts over the limit, truncation is no longer a safe default
SWEEP_EXAMPLES = 2000  # a sample per split: enough to rank candidates, small enough for the budget
FINE_TUNE_RULE_N = 1000  # the chapter's rule of thumb: below ~1k labels a frozen probe is usually as good


@dataclass(frozen=True)
class Decision:
    step: str
    decision: str
    evidence: str
    rule: str
    confidence: str  # "measured", or "rule of thumb: <why not measured>"
    commands: tuple[str, ...] = ()
    recipe_changes: dict = field(default_factory=dict)  # what this decision sets in the recommended recipe

    @classmethod
    def from_dict(cls, data: dict) -> Decision:
        return cls(**{**data, "commands": tuple(data["commands"])})


@dataclass(frozen=True)
class Recommendation:
    task: str
    model: str
    decisions: tuple[Decision, ...]
    recipe: Recipe
    seconds: float
    notes: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Budget:
    seconds: float
    start: float = field(default_factory=time.perf_counter)

    def left(self) -> float:
        return self.seconds - (time.perf_counter() - self.start)


def _texts(task: TaskData) -> list[str]:
    return task.all_texts()


def _sample(values: list, count: int, seed: int) -> list:
    if len(values) <= count:
        return values
    keep = np.sort(np.random.default_rng(seed).choice(len(values), count, replace=False))
    return [values[i] for i in keep]


def step_lengths(task: TaskData, encoder: Encoder, seed: int) -> Decision:
    texts = _sample(_texts(task), 5000, seed)
    lengths = np.array([len(ids) for ids in encoder.tokenizer(texts, add_special_tokens=True)["input_ids"]])
    limit = encoder.max_length
    over = float((lengths > limit).mean())
    evidence = (
        f"{len(texts)} texts: median {int(np.median(lengths))} tokens, 95th percentile {int(np.percentile(lengths, 95))}, "
        f"{100 * over:.1f}% over the model's limit of {limit}"
    )
    rule = f"truncation is safe when fewer than {100 * LONG_SHARE:.0f}% of texts are cut"
    if over < LONG_SHARE:
        return Decision("text length", "truncate at the limit (the default)", evidence, rule, "measured")
    strategy = "windows:mean" if np.median(lengths) > 2 * limit else "head_tail:64"
    return Decision(
        "text length",
        f"use a long-text strategy: --long-text {strategy}",
        evidence,
        rule + "; windows when the median text is over twice the limit, head+tail otherwise (measured on "
        "movie_reviews in docs/results.md: both beat truncation)",
        "measured lengths; strategy by the rule (compare them on your data with `bertlens longdoc`)",
        ("bertlens longdoc --data ... --out out/longdoc", f"bertlens embed texts.txt --long-text {strategy} ..."),
        {"long_text": strategy},
    )


def step_domain(task: TaskData, encoder: Encoder, reference: tuple[list[str], str] | None, seed: int) -> Decision:
    if reference is None:
        return Decision(
            "domain",
            "not measured",
            "no reference corpus (UD EWT under $BERTLENS_DATA) was found",
            "adapt when the masked-LM loss gap, word pieces per word or unknown rate exceed the `domain` thresholds",
            "rule of thumb: no reference to compare with; run `bertlens domain --texts ... --reference ...`",
        )
    result = measure_domain(encoder, _texts(task), reference[0], reference[1], samples=200, seed=seed)
    evidence = (
        f"word pieces per word {result.user.fertility:.2f} vs {result.ref.fertility:.2f} on the reference; unknown "
        f"{100 * result.user.unk_rate:.2f}%"
    )
    if result.gap is not None:
        evidence += f"; masked-LM loss gap {result.gap[0]:+.2f} nats [{result.gap[1]:+.2f}, {result.gap[2]:+.2f}]"
    confidence = "measured" if result.gap is not None else "measured (tokenizer only: " + "; ".join(result.notes) + ")"
    rule = "adapt when the loss gap is >= 0.5 nats (interval above 0), pieces per word >= 1.25x, or unknown >= 1%"
    if result.adapt:
        return Decision(
            "domain",
            "continue pre-training on your texts (DAPT or TAPT)",
            evidence + "; " + "; ".join(result.reasons),
            rule,
            confidence,
            (f"bertlens pretrain --from {result.model} --texts your_corpus.txt --out models/dapt",),
        )
    return Decision("domain", "no adaptation needed", evidence, rule, confidence)


def step_representation(task: TaskData, model: str, cache_dir: Path, seed: int, progress: Progress):
    postprocess = "whiten" if task.kind == "similarity" else None
    config = SweepConfig(resamples=500, seed=seed, postprocess=postprocess)
    result = run_sweep(task, model, cache_dir=cache_dir, config=config, progress=progress)
    protocol = result.main  # the protocol the recommendation was made by
    names = [c.name for c in protocol.candidates]
    i = names.index(result.recommended.name)
    tied = [n for n, t in zip(names, protocol.test.tied_with_best, strict=True) if t and n != names[i]]
    evidence = (
        f"{result.recommended.name}: {protocol.metric} {protocol.test.value[i]:.4f} "
        f"[{protocol.test.low[i]:.4f}, {protocol.test.high[i]:.4f}] on {protocol.split} (n={protocol.n_test}); "
        f"tied with the best: {', '.join(tied[:6]) or 'none'}{' ...' if len(tied) > 6 else ''}"
    )
    if postprocess:
        whitened = [n for n in names if "whiten" in n]
        evidence += f"; whitening scored as {len(whitened)} candidates" + (
            ", and chosen" if "whiten" in result.recommended.name else ", not chosen"
        )
    decision = Decision(
        "representation",
        f"use {result.recommended.name}",
        evidence,
        "the candidate with the best validation score (never test); ties go to fewer dimensions, then single layers",
        "measured",
        ("bertlens embed texts.txt --recipe OUT/recipe.json --out vectors.npy",),
    )
    return decision, result.recipe


def _with_test_split(task: TaskData, seed: int) -> TaskData:
    """A cross-validated task gets a seeded 20% test split for the fine-tuning comparison."""
    if not task.uses_cv:
        return task
    data = task.splits["all"]
    order = np.random.default_rng(seed).permutation(len(data))
    cut = max(1, len(order) // 5)
    test, train = np.sort(order[:cut]), np.sort(order[cut:])
    return replace(task, splits={"train": data.subset(train), "test": data.subset(test)})


def step_fine_tune(task: TaskData, model: str, recipe: Recipe, runs_dir: Path, seed: int, progress) -> Decision:
    task = _with_test_split(task, seed)
    n = len(task_splits(task, 500, seed)[0])  # the training rows left once dev is carved
    sizes = tuple(sorted({n, max(16, n // 4)} if n >= 64 else {n}))
    config = CompareConfig(
        sizes=sizes,
        strategies=(parse_strategy("frozen", 1), parse_strategy("full", 1)),
        seeds=(seed, seed + 1),
        train=TrainConfig(epochs=2, min_steps=50, seed=seed),
        max_dev=500,
    )
    result = run_compare(task, model, recipe, config, runs_dir, seed=seed, progress=progress)
    points = {(p.strategy, p.size): p for p in curve(result)}
    frozen, tuned = points[("frozen", n)], points[("full", n)]
    paired = np.array(
        [
            t.test - f.test
            for t in result.runs
            for f in result.runs
            if t.strategy == "full" and f.strategy == "frozen" and t.size == f.size == n and t.seed == f.seed
        ]
    )
    diff = float(paired.mean())
    spread = float(paired.std(ddof=1)) if len(paired) > 1 else float("nan")
    evidence = (
        f"at n={n}: frozen probe {frozen.mean:.4f} [{frozen.low:.4f}, {frozen.high:.4f}], full fine-tune "
        f"{tuned.mean:.4f} [{tuned.low:.4f}, {tuned.high:.4f}] ({len(paired)} seeds; paired difference "
        f"{diff:+.4f}, seed-to-seed spread {spread:.4f}); fine-tuning took {tuned.seconds:.0f} s per run"
    )
    rule = (
        f"fine-tune when it beats the frozen probe in every seed by more than the seeds vary; where the "
        f"measurement cannot decide, the chapter's rule of thumb: frozen below ~{FINE_TUNE_RULE_N} labels"
    )
    choice, confidence = fine_tune_choice(paired, n)
    commands = ("bertlens finetune --task ... --strategy full --out models/tuned",) if choice == TUNE else ()
    return Decision("frozen or fine-tuned", choice, evidence, rule, confidence, commands)


TUNE, FROZEN = "fine-tune", "keep the encoder frozen (linear probe)"


def fine_tune_choice(paired: np.ndarray, n: int) -> tuple[str, str]:
    """(decision, confidence) from the per-seed differences fine-tuned - frozen at the user's size.

    Fine-tune when every seed gains and the mean gain exceeds the seed-to-seed spread; stay frozen when no
    seed gains; otherwise the measurement cannot decide and the rule of thumb does (frozen below ~1k labels).
    """
    if len(paired) > 1 and (paired > 0).all() and paired.mean() > paired.std(ddof=1):
        return TUNE, "measured"
    if len(paired) > 1 and (paired <= 0).all():
        return FROZEN, "measured"
    choice = FROZEN if n < FINE_TUNE_RULE_N else TUNE
    return choice, f"rule of thumb: the measured difference is within the seed-to-seed spread (n={n})"


def step_latency(recipe: Recipe, texts: list[str], budget_ms: float | None, target: float | None) -> Decision:
    sample = texts[:256]
    rows = []
    precisions = ["fp32"] + (["bf16"] if native_bf16()[0] else [])
    for precision in precisions:
        embedder = Embedder(recipe.replace(precision=precision))
        embedder.encode(sample[:16])
        start = time.perf_counter()
        embedder.encode(sample)
        rate = len(sample) / (time.perf_counter() - start)
        single = []
        for text in sample[:20]:
            start = time.perf_counter()
            embedder.encode([text])
            single.append(1000 * (time.perf_counter() - start))
        rows.append((precision, rate, float(np.median(single))))
    evidence = "; ".join(f"{p}: {r:,.0f} texts/s, {ms:.1f} ms for one text" for p, r, ms in rows)
    if len(precisions) == 1:
        evidence += "; bf16 skipped: " + native_bf16()[1]
    rule = (
        "serve the precision with the most texts/s among those meeting the per-text latency budget (bf16 vectors "
        "match fp32 to min cosine >= 0.9999, docs/results.md)"
    )
    meeting = [r for r in rows if (budget_ms is None or r[2] <= budget_ms) and (target is None or r[1] >= target)]
    if meeting:
        best = max(meeting, key=lambda row: row[1])
        return Decision(
            "latency",
            f"serve at {best[0]}",
            evidence,
            rule,
            "measured",
            ("bertlens serve --recipe OUT/recipe.json",),
            {"precision": best[0]},
        )
    return Decision(
        "latency",
        "too slow for the budget: distil a smaller student, or export to ONNX int8 behind the fidelity gate",
        evidence + f"; budget: {budget_ms} ms per text, target {target} texts/s",
        rule,
        "measured",
        (
            "bertlens distill --teacher OUT/recipe.json --student layers:3 --texts corpus.txt --out models/student",
            "bertlens export --format onnx --quantize int8 --recipe OUT/recipe.json --out export/int8",
        ),
    )


def run_recommend(
    task: TaskData,
    model: str,
    out: Path,
    *,
    budget_minutes: float = 15.0,
    latency_budget_ms: float | None = None,
    throughput_target: float | None = None,
    data: Path | None = None,
    cache_dir: Path | None = None,
    seed: int = 0,
    progress: Progress = silent,
) -> Recommendation:
    """Run the five steps within the budget; each finished step is cached in OUT/steps/.

    `data`: the shared data folder holding the domain step's reference corpus (default $BERTLENS_DATA).
    """
    if budget_minutes <= 0:
        raise BertlensError("--budget-minutes must be positive")
    budget = Budget(budget_minutes * 60)
    encoder = Encoder(model)
    key = content_key([task.name, task.kind, model, encoder.ref.fingerprint, seed], _texts(task))
    steps = out / "steps"
    decisions = []

    def cached(name: str, compute: Callable[[], Decision]) -> Decision:
        return cached_result(steps / f"{name}.json", content_key([key, name]), compute, asdict, Decision.from_dict)

    progress("text length", 0, 5)
    decisions.append(cached("lengths", lambda: step_lengths(task, encoder, seed)))
    progress("domain", 1, 5)
    decisions.append(cached("domain", lambda: step_domain(task, encoder, _reference(data), seed)))
    progress("representation", 2, 5)
    sweep_task = _sample_task(task, SWEEP_EXAMPLES, seed)
    recipe_path = steps / "recipe.json"

    def representation() -> Decision:
        decision, recipe = step_representation(sweep_task, model, cache_dir or steps / "cache", seed, progress)
        recipe.save(recipe_path)
        return decision

    decisions.append(cached("representation", representation))
    recipe = Recipe.load(recipe_path) if recipe_path.is_file() else Recipe(model=model)
    if task.kind in ("classification", "similarity", "pair_classification") and budget.left() > 0.4 * budget.seconds:
        progress("frozen or fine-tuned", 3, 5)
        tune_task = _sample_task(task, 2000, seed)
        decisions.append(
            cached("fine_tune", lambda: step_fine_tune(tune_task, model, recipe, steps / "runs", seed, progress))
        )
    else:
        n = len(task.splits.get("train") or task.splits["all"])
        choice = "keep the encoder frozen (linear probe)" if n < FINE_TUNE_RULE_N else "fine-tune"
        decisions.append(
            Decision(
                "frozen or fine-tuned",
                choice,
                f"{n} labelled training examples",
                f"the chapter's rule of thumb: frozen below ~{FINE_TUNE_RULE_N} labels",
                f"rule of thumb: not measured ({budget.left():.0f} s of the budget left)",
            )
        )
    progress("latency", 4, 5)
    decisions.append(
        cached("latency", lambda: step_latency(recipe, _texts(task), latency_budget_ms, throughput_target))
    )
    progress("done", 5, 5)
    for decision in decisions:
        recipe = recipe.replace(**decision.recipe_changes) if decision.recipe_changes else recipe
    return Recommendation(task.name, model, tuple(decisions), recipe, budget.seconds - budget.left())


def _reference(data: Path | None) -> tuple[list[str], str] | None:
    """The default reference corpus (UD EWT training sentences) when the shared data has it, else None."""
    try:
        return default_reference(data or data_dir(None))
    except BertlensError:
        return None


def _sample_task(task: TaskData, count: int, seed: int) -> TaskData:
    """At most `count` examples per split (seeded): the budget's version of the task."""

    def cut(split: Split) -> Split:
        if len(split) <= count:
            return split
        return split.subset(np.sort(np.random.default_rng(seed).choice(len(split), count, replace=False)))

    return replace(task, splits={name: cut(split) for name, split in task.splits.items()})
