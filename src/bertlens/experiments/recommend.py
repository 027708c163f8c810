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

import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from bertlens.embedding.embedder import Embedder
from bertlens.embedding.speed import texts_per_second
from bertlens.encoding.encoder import Encoder
from bertlens.encoding.precision import choose_precision, native_bf16
from bertlens.errors import BertlensError
from bertlens.experiments.compare import CompareConfig, curve, run_compare, task_splits
from bertlens.experiments.domain import default_reference, measure_domain
from bertlens.experiments.longdoc import compare_long_text, documents
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
LONGDOC_SAMPLE = 400  # documents for the measured long-text comparison (5-fold CV): intervals of about +-4 points
LONGDOC_MIN = 40  # fewer labelled long documents than this cannot rank strategies
DRIFT_TEXTS = 64  # texts each fine-tuning run's CKA is measured on (not a decision input here)
BUDGET_SHARE = 0.85  # of the time left, what step 4 may plan to use: estimates are from a short trial


@dataclass(frozen=True)
class Decision:
    step: str
    decision: str
    evidence: str
    rule: str
    confidence: str  # "measured", or "rule of thumb: <why not measured>"
    commands: tuple[str, ...] = ()
    recipe_changes: dict = field(default_factory=dict)  # what this decision sets in the recommended recipe
    seconds: float = 0.0  # what measuring it took (kept with the cached step, so a resumed run still says)

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


def step_lengths(
    task: TaskData,
    encoder: Encoder,
    seed: int,
    *,
    recipe: Recipe | None = None,
    measure: bool = True,
    progress: Progress = silent,
) -> Decision:
    """Truncate, head+tail or windows: from the share of texts over the limit and, for labelled documents, a
    measured comparison of the three on a sample (`measure=False` when the budget cannot cover it)."""
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
    head_tail = f"head_tail:{limit // 4}"  # a quarter head, the rest tail: Sun et al. (2019)'s 128 + 382 of 510
    documents = _long_documents(task)
    comparable = documents is not None and len(documents) >= LONGDOC_MIN and _two_per_class(documents)
    measured = None
    if measure and comparable:
        measured = _measured_long_text(
            documents, encoder, recipe or Recipe(model=encoder.ref.name), head_tail, seed, evidence, rule, progress
        )
        if measured is not None:
            return measured
    strategy = "windows:mean" if np.median(lengths) > 2 * limit else head_tail
    if documents is None:
        why = f"a {task.kind} task has no labels to compare strategies on"
    elif len(documents) < LONGDOC_MIN:
        why = f"only {len(documents)} labelled documents (the comparison needs {LONGDOC_MIN})"
    elif not comparable or measure:
        why = "a class has a single document (cross-validation needs two per class)"
    else:
        why = "the budget left no time to compare strategies"
    return Decision(
        "text length",
        f"use a long-text strategy: --long-text {strategy}",
        evidence,
        rule + "; windows when the median text is over twice the limit, head+tail otherwise (measured on "
        "movie_reviews in docs/results.md: both beat truncation)",
        f"rule of thumb: {why}; lengths measured (compare strategies with `bertlens longdoc`)",
        ("bertlens longdoc --data ... --out out/longdoc", f"bertlens embed texts.txt --long-text {strategy} ..."),
        {"long_text": strategy},
    )


def _two_per_class(docs: Split) -> bool:
    return bool(np.unique(np.asarray(docs.targets), return_counts=True)[1].min() >= 2)


def _long_documents(task: TaskData) -> Split | None:
    """Every labelled document of a classification task, or None (other kinds: no comparison to run)."""
    return documents(task) if task.kind == "classification" else None


def _measured_long_text(
    docs: Split, encoder: Encoder, recipe: Recipe, head_tail: str, seed: int, evidence: str, rule: str, progress
) -> Decision | None:
    """head vs head+tail vs windows:mean on a seeded sample, 5-fold out-of-fold accuracy with intervals.

    The choice is the cheapest strategy tied with the best (truncation < head+tail < windows): only the choice's
    rule sees the scores, and each score is out-of-fold, so no number reported was fitted on what scores it.
    """
    rows = _sample(list(range(len(docs))), LONGDOC_SAMPLE, seed)
    texts = [docs.texts_a[i] for i in rows]
    labels = np.asarray(docs.targets)[rows]
    strategies = ("head", head_tail, "windows:mean")  # cheapest first
    folds = int(min(5, np.unique(labels, return_counts=True)[1].min()))
    if folds < 2:  # the sample lost a class's second document: fewer folds cannot help, the rule decides
        return None
    precision = choose_precision("auto")[0]  # a comparison of strategies, not of precisions: the fast one
    result = compare_long_text(
        Encoder(encoder.ref.name, precision=precision),
        recipe,
        texts,
        labels,
        strategies,
        task="sample",
        folds=folds,
        seed=seed,
        resamples=1000,
        progress=progress,
    )
    iv = result.intervals
    chosen = next(i for i in range(len(strategies)) if iv.tied_with_best[i])
    scores = "; ".join(
        f"{s} {100 * iv.value[i]:.1f} [{100 * iv.low[i]:.1f}, {100 * iv.high[i]:.1f}]"
        + (f" ({len(texts) / result.encode_seconds[result.pass_of[s]]:.1f} docs/s)")
        for i, s in enumerate(strategies)
    )
    evidence += f"; on {len(texts)} labelled documents ({folds}-fold out-of-fold accuracy, 95% bootstrap): {scores}"
    rule += "; otherwise the cheapest of truncation, head+tail and windows that is tied with the best measured one"
    name = strategies[chosen]
    if name == "head":
        return Decision(
            "text length", "truncate at the limit (measured: as good as reading more)", evidence, rule, "measured"
        )
    return Decision(
        "text length",
        f"use a long-text strategy: --long-text {name}",
        evidence,
        rule,
        "measured",
        (f"bertlens embed texts.txt --long-text {name} ...", "bertlens longdoc --data ... --out out/longdoc"),
        {"long_text": name},
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


@dataclass(frozen=True)
class Costs:
    """What step 4 costs on this machine, measured on the user's texts before it is sized."""

    forward: float  # seconds per text, one forward pass (scoring dev, test and the drift texts; frozen encoding)
    train_example: float  # seconds per training example (forward + backward + optimizer, padded batches)
    dev: int  # dev examples, scored every epoch
    test: int  # test examples, scored once per run
    start_up: float = 0.0  # seconds per fine-tuning run besides its examples (optimizer, best-weights restore)


def fine_tune_seconds(n: int, costs: Costs, train: TrainConfig) -> float:
    """Estimated time of step 4 at n training examples: two seeds of full fine-tuning at n and n/4 (each at least
    `min_steps` batches, dev scored every epoch, test and the drift texts once), plus the frozen probes' encoding."""
    seeds, total = 2, 0.0
    for size in (n, max(16, n // 4)):
        steps_per_epoch = -(-size // train.batch_size)
        epochs = max(train.epochs, -(-train.min_steps // steps_per_epoch))  # as the training loop counts
        scored = epochs * costs.dev + costs.test + 2 * DRIFT_TEXTS
        total += seeds * (epochs * size * costs.train_example + scored * costs.forward + costs.start_up)
    return total + (n + costs.dev + costs.test) * costs.forward


def affordable_size(n: int, costs: Costs, train: TrainConfig, seconds: float) -> int:
    """The largest training size up to n whose fine-tuning comparison fits in `seconds` (0 when even 64 does not)."""
    steps = (16000, 8000, 6000, 5000, 4000, 3000, 2000, 1500, 1000, 500, 250, 128, 64)
    for size in sorted({n, *(s for s in steps if s < n)}, reverse=True):
        if fine_tune_seconds(size, costs, train) <= seconds:
            return size
    return 0


def measure_costs(task: TaskData, model: str, recipe: Recipe, train: TrainConfig, seed: int) -> Costs:
    """A forward pass over 64 of the user's texts, and two short fine-tuning trials (4 and 12 steps at the real batch
    size and precision, through the same `run_compare` the step uses): the difference is the cost of a training
    example without the fixed start-up cost, which is counted once per run. The sizing then holds on any machine."""
    forward = _seconds_per_text(model, _sample(_texts(task), 64, seed), train.precision)
    train_split, dev_split, test_split = task_splits(task, 500, seed)
    short, long = (min(len(train_split), k * train.batch_size) for k in (4, 12))
    tiny = test_split.subset(np.arange(min(16, len(test_split))))
    config = CompareConfig(
        sizes=tuple(sorted({short, long})),
        strategies=(parse_strategy("full", 1),),
        seeds=(seed,),
        train=replace(train, epochs=1, min_steps=1),
        max_dev=16,
        drift_texts=8,
    )
    with tempfile.TemporaryDirectory() as runs:
        trial = run_compare(replace(task, splits={**task.splits, "test": tiny}), model, recipe, config, Path(runs))
    seconds = {run.size: run.seconds for run in trial.runs}
    if long > short:
        # never below two forward passes: noise (a tiny model, a busy machine) can flatten the slope
        per_example = max((seconds[long] - seconds[short]) / (long - short), 2 * forward)
        start_up = max(seconds[short] - short * per_example, 0.0)
    else:  # a training set of at most 4 batches: no slope to take, the whole run is the cost
        per_example, start_up = seconds[short] / short, 0.0
    return Costs(forward, per_example, len(dev_split), len(test_split), start_up)


def step_fine_tune(
    task: TaskData,
    model: str,
    recipe: Recipe,
    runs_dir: Path,
    seed: int,
    progress,
    *,
    train: TrainConfig,
    user_n: int,
    size: int,
) -> Decision:
    """Frozen probe vs full fine-tuning at `size` training examples (the user's own count when the budget allows)
    and at a quarter of it, two seeds each, paired by seed. `task` has a test split (see `_with_test_split`)."""
    train_split, _, _ = task_splits(task, 500, seed)
    n = min(size, len(train_split))
    sizes = tuple(sorted({n, max(16, n // 4)} if n >= 64 else {n}))
    config = CompareConfig(
        sizes=sizes,
        strategies=(parse_strategy("frozen", 1), parse_strategy("full", 1)),
        seeds=(seed, seed + 1),
        train=train,
        max_dev=500,
        drift_texts=DRIFT_TEXTS,  # drift is not a decision here: a few texts keep the runs' CKA cheap
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
    small = max(16, n // 4)
    at_small = ""
    if ("full", small) in points and small != n:
        at_small = f"; at n={small}: frozen {points[('frozen', small)].mean:.4f}, fine-tuned {points[('full', small)].mean:.4f}"
    # a similarity task's frozen score is the cosine of frozen vectors: nothing is trained, so seeds agree
    frozen_name = "frozen encoder (cosine, untrained)" if task.kind == "similarity" else "frozen probe"
    sampled = (
        f" (a seeded sample of the {len(train_split):,} training examples left after the dev split: what the budget "
        "affords)"
        if n < len(train_split)
        else f" (every training example left after the dev split, of your {user_n:,})"
    )
    evidence = (
        f"at n={n}{sampled}: {frozen_name} {frozen.mean:.4f} [{frozen.low:.4f}, {frozen.high:.4f}], full fine-tune "
        f"{tuned.mean:.4f} [{tuned.low:.4f}, {tuned.high:.4f}] ({len(paired)} seeds; paired difference "
        f"{diff:+.4f}, seed-to-seed spread {spread:.4f}){at_small}; fine-tuning took {tuned.seconds:.0f} s per run "
        f"({train.epochs} epochs, {train.precision})"
    )
    rule = (
        f"fine-tune when it beats the frozen probe in every seed by more than the seeds vary; where the "
        f"measurement cannot decide, the chapter's rule of thumb: frozen below ~{FINE_TUNE_RULE_N} labels"
    )
    choice, confidence = fine_tune_choice(paired, user_n)
    if confidence == "measured" and n < len(train_split):
        confidence = f"measured at n={n} of {len(train_split):,} (more labels usually favour fine-tuning more)"
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


@dataclass(frozen=True)
class Alternative:
    """Something faster to serve than the recipe itself: an ONNX export directory or a (distilled) recipe file."""

    label: str
    path: Path
    fidelity: str  # what its own record says about its agreement with the recipe it replaces
    onnx: bool  # an `export` directory (served with --backend onnx), else a recipe file

    def embedder(self):
        if self.onnx:
            from bertlens.embedding.onnx_backend import OnnxEmbedder

            return OnnxEmbedder(self.path)
        return Embedder(Recipe.load(self.path))


def load_alternative(path: Path) -> Alternative:
    """An export directory (export.json checked) or a recipe (a distill output directory or its recipe.json)."""
    path = Path(path)
    if (path / "export.json").is_file():
        from bertlens.embedding.onnx_backend import read_export

        record = read_export(path)
        int8 = record.get("int8")
        precision = "int8" if int8 else "fp32"
        fidelity = (
            f"mean cosine {int8['mean_cosine']:.4f}, min {int8['min_cosine']:.4f} to fp32"
            if int8
            else "parity with bertlens fp32 checked at export"
        )
        return Alternative(f"onnx {precision} ({path.name})", path, fidelity, onnx=True)
    recipe_file = path / "recipe.json" if path.is_dir() else path
    if not recipe_file.is_file():
        raise BertlensError(
            f"--alternatives: {path} is neither an ONNX export (export.json) nor a recipe; give an `export` output "
            "directory, a `distill` output directory or a recipe .json"
        )
    Recipe.load(recipe_file)  # validated now, not after the other steps
    fidelity = "no fidelity record"
    record_file = recipe_file.parent / "distill.json"
    if record_file.is_file():
        try:
            measured = json.loads(record_file.read_text())["fidelity"]
            fidelity = f"mean cosine {measured['mean_cosine']:.4f} to its teacher on held-out texts"
        except (ValueError, KeyError, TypeError):
            raise BertlensError(f"{record_file}: unreadable distill record; distil again") from None
    return Alternative(f"recipe {recipe_file.parent.name}/{recipe_file.name}", recipe_file, fidelity, onnx=False)


def _timing(embedder, sample: list[str]) -> tuple[float, float]:
    """(texts/s on the sample in batches, best of two passes; median ms for one text alone, after a warm-up)."""
    (rate,) = texts_per_second([embedder], sample)
    single = []
    embedder.encode(sample[:1])
    for text in sample[:20]:
        start = time.perf_counter()
        embedder.encode([text])
        single.append(1000 * (time.perf_counter() - start))
    return rate, float(np.median(single))


@dataclass(frozen=True)
class Timing:
    label: str  # "fp32", "bf16" (the recipe itself) or an alternative's label
    texts_per_s: float
    ms_one_text: float
    own: bool  # the recipe itself (full fidelity) rather than an alternative
    fidelity: str = ""


def serving_choice(timings: list[Timing], budget_ms: float | None, target: float | None) -> Timing | None:
    """The recipe itself at its fastest precision meeting the budget; else the fastest alternative meeting it;
    None when nothing does. Full fidelity comes first: an alternative only when the recipe cannot serve."""
    meets = [
        t
        for t in timings
        if (budget_ms is None or t.ms_one_text <= budget_ms) and (target is None or t.texts_per_s >= target)
    ]
    pool = [t for t in meets if t.own] or meets
    return max(pool, key=lambda t: t.texts_per_s) if pool else None


def step_latency(
    recipe: Recipe,
    texts: list[str],
    budget_ms: float | None,
    target: float | None,
    alternatives: tuple[Alternative, ...] = (),
) -> Decision:
    """Time the recipe at fp32 and (where native) bf16, then each alternative, on the user's texts."""
    sample = texts[: 32 if recipe.long_text else 256]  # a long-text recipe reads every window: fewer documents
    precisions = ["fp32"] + (["bf16"] if native_bf16()[0] else [])
    timings = [Timing(p, *_timing(Embedder(recipe.replace(precision=p)), sample), own=True) for p in precisions]
    timings += [Timing(a.label, *_timing(a.embedder(), sample), own=False, fidelity=a.fidelity) for a in alternatives]
    evidence = "; ".join(
        f"{t.label}: {t.texts_per_s:,.0f} texts/s, {t.ms_one_text:.1f} ms for one text"
        + (f" ({t.fidelity})" if t.fidelity else "")
        for t in timings
    )
    evidence += f" ({len(sample)} of your texts, {torch.get_num_threads()} threads)"
    if len(precisions) == 1:
        evidence += "; bf16 skipped: " + native_bf16()[1]
    if budget_ms is not None or target is not None:
        evidence += f"; budget: {budget_ms or 'any'} ms per text, {target or 'any'} texts/s"
    rule = (
        "serve the recipe itself at the precision with the most texts/s among those meeting the budget (bf16 "
        "vectors match fp32 to min cosine >= 0.9999, docs/results.md); only when none does, the fastest "
        "alternative (ONNX/int8 export, distilled student) that meets it"
    )
    best = serving_choice(timings, budget_ms, target)
    if best is not None and best.own:
        return Decision(
            "latency",
            f"serve at {best.label}",
            evidence,
            rule,
            "measured",
            ("bertlens serve --recipe OUT/recipe.json",),
            {"precision": best.label},
        )
    if best is not None:
        alt = next(a for a in alternatives if a.label == best.label)
        serve = (
            f"bertlens serve --backend onnx --model {alt.path}" if alt.onnx else f"bertlens serve --recipe {alt.path}"
        )
        return Decision(
            "latency", f"serve {best.label}: the recipe itself misses the budget", evidence, rule, "measured", (serve,)
        )
    return Decision(
        "latency",
        "too slow for the budget: distil a smaller student, or export to ONNX int8 behind the fidelity gate",
        evidence,
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
    alternatives: tuple[Alternative, ...] = (),
    data: Path | None = None,
    cache_dir: Path | None = None,
    seed: int = 0,
    progress: Progress = silent,
) -> Recommendation:
    """Run the five steps within the budget; each finished step is cached in OUT/steps/.

    `data`: the shared data folder holding the domain step's reference corpus (default $BERTLENS_DATA).
    The time-hungry steps (the long-text comparison, fine-tuning) size themselves to what is left of the budget
    and fall back to the rule of thumb, marked as such, when even their smallest version does not fit.
    """
    if budget_minutes <= 0:
        raise BertlensError("--budget-minutes must be positive")
    budget = Budget(budget_minutes * 60)
    encoder = Encoder(model)
    key = content_key([task.name, task.kind, model, encoder.ref.fingerprint, seed], _texts(task))
    steps = out / "steps"
    decisions = []
    notes = []

    def cached(name: str, compute: Callable[[], Decision]) -> Decision:
        def timed() -> Decision:
            start = time.perf_counter()
            decision = compute()
            return replace(decision, seconds=round(time.perf_counter() - start, 1))

        return cached_result(steps / f"{name}.json", content_key([key, name]), timed, asdict, Decision.from_dict)

    progress("text length", 0, 5)
    decisions.append(
        cached(
            "lengths",
            lambda: step_lengths(task, encoder, seed, measure=budget.left() > 0.7 * budget.seconds, progress=progress),
        )
    )
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
    if decisions[0].recipe_changes:
        notes.append(
            "The representation was swept on truncated texts; the long-text strategy applies on top of the chosen "
            "recipe (pooling and layers chosen on the first window)."
        )
    decisions.append(
        cached("fine_tune", lambda: _fine_tune_or_rule(task, model, recipe, steps, seed, budget, progress))
    )
    progress("latency", 4, 5)
    served = recipe.replace(**decisions[0].recipe_changes) if decisions[0].recipe_changes else recipe
    decisions.append(
        cached(
            "latency",
            lambda: step_latency(served, _texts(task), latency_budget_ms, throughput_target, alternatives),
        )
    )
    progress("done", 5, 5)
    for decision in decisions:
        recipe = recipe.replace(**decision.recipe_changes) if decision.recipe_changes else recipe
    return Recommendation(task.name, model, tuple(decisions), recipe, budget.seconds - budget.left(), tuple(notes))


# the training `compare` uses (4 epochs, >= 100 steps, early stopping), so both agree; checkpoints sparser (each
# writes the model and AdamW state: a cost the short trial does not see)
TRAIN = TrainConfig(checkpoint_every=200)
FINE_TUNE_TEST = 2000  # test examples scored per run: intervals of about +-2 points on accuracy


def _fine_tune_or_rule(task, model, recipe, steps, seed, budget, progress) -> Decision:
    """Step 4 measured at the largest training size the budget affords (keeping 60 s for step 5), else the rule."""
    progress("frozen or fine-tuned", 3, 5)
    user_n = len(task.splits.get("train") or task.splits["all"])
    why = f"{task.kind} tasks are not compared" if task.kind not in TUNABLE else ""
    size, estimate = 0, 0.0
    if not why:
        tune_task = _with_test_split(task, seed)
        test = tune_task.splits["test"]
        if len(test) > FINE_TUNE_TEST:
            test = test.subset(np.sort(np.random.default_rng(seed).choice(len(test), FINE_TUNE_TEST, replace=False)))
        tune_task = replace(tune_task, splits={**tune_task.splits, "test": test})
        train_split, _, _ = task_splits(tune_task, 500, seed)
        train = replace(TRAIN, seed=seed, precision=choose_precision("auto")[0])
        costs = measure_costs(tune_task, model, recipe, train, seed)
        left = BUDGET_SHARE * (budget.left() - 60)
        size = affordable_size(len(train_split), costs, train, left)
        if size == 0:
            why = f"{budget.left():.0f} s of the budget left, and even n=64 would take about " + (
                f"{fine_tune_seconds(64, costs, train):.0f} s"
            )
        estimate = fine_tune_seconds(size, costs, train) if size else 0.0
    if why:
        choice = FROZEN if user_n < FINE_TUNE_RULE_N else TUNE
        return Decision(
            "frozen or fine-tuned",
            choice,
            f"{user_n} labelled training examples",
            f"the chapter's rule of thumb: frozen below ~{FINE_TUNE_RULE_N} labels",
            f"rule of thumb: not measured ({why})",
        )
    start = time.perf_counter()
    decision = step_fine_tune(
        tune_task, model, recipe, steps / "runs", seed, progress, train=train, user_n=user_n, size=size
    )
    took = time.perf_counter() - start
    return replace(decision, evidence=decision.evidence + f"; this step: estimated {estimate:.0f} s, took {took:.0f} s")


TUNABLE = ("classification", "similarity", "pair_classification")


def _seconds_per_text(model: str, texts: list[str], precision: str) -> float:
    """Forward time per text, measured on a few of the user's texts at the training precision."""
    (rate,) = texts_per_second([Embedder(Recipe(model=model, precision=precision))], texts)
    return 1 / rate


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
