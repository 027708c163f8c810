"""`distill` as one definition: its options, their checks, the run, and the result a notebook reads.

    import bertlens
    student = bertlens.distill(teacher="out/sweep/recipe.json", student="layers:3", task="sst2", out="models/small")
    student.to_pandas()     # fidelity to the teacher on held-out texts, and both speeds

`bertlens distill --teacher R --student layers:3 --task sst2 --out DIR` parses its flags into the same
`DistillOptions` and calls the same `run_distill_command`: a smaller plain model (mean of its last layer, plus a
projection where needed) trained to reproduce any recipe.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from bertlens.api.options import finite, one_of, python_call
from bertlens.api.results import RowsResult, save_options
from bertlens.api.training_options import DistillTraining, training_config
from bertlens.errors import OptionError, literal
from bertlens.io.run_context import check_seed
from bertlens.progress import Progress, silent


@dataclass(frozen=True, kw_only=True)
class DistillOptions(DistillTraining):
    """Every option of `bertlens distill`, by the name of its long flag; the schedule (Reimers & Gurevych 2020's by
    default): `DistillTraining`."""

    teacher: str | None = None
    """a recipe JSON (e.g. from `bertlens sweep`), or a model for its default recipe"""
    student: str | None = None
    """layers:0,2,4 (teacher layers to keep, 0-based), layers:K (K spread evenly) or config:SIZE|FILE.json"""
    texts: Sequence[Path] | None = None
    """unlabelled texts: .txt (one a line), .csv/.tsv/.parquet or .jsonl (with --column); several files may be given.
    From Python a path, a list of Paths, or a list of strings (the texts themselves)"""
    column: str | None = None
    """for --texts CSV/TSV/Parquet/JSONL: the text column (header name or 0-based index) or field"""
    task: str | None = None
    """a catalog task's training texts: sst2, mr, subj, trec, stsb, movie_reviews, cranfield, cisi, npl"""
    data_dir: str | None = None
    """where the shared data lives: catalog tasks, UD EWT (default $BERTLENS_DATA or ../shared/data)"""
    eval_task: Sequence[str] = ()
    """also score teacher and student on these tasks' test splits (stsb, sst2, trec)"""
    heldout: float = 0.05
    """share of texts held out to measure fidelity"""
    cosine_weight: float = 0.0
    """add this x (1 - cosine) to the MSE loss"""
    projection: Literal["auto", "always", "never"] = "auto"
    """a learned linear map to the teacher's space: auto (when the widths differ or the teacher is post-processed),
    always, never"""
    cache_dir: Path | None = None
    """teacher-vector cache (default $BERTLENS_CACHE or ~/.cache/bertlens)"""
    trust_remote_code: bool = False
    """allow model code from the hub (off by default)"""
    seed: int = 0
    """seed for sampling, splits, initialisation and data order"""
    out: Path | None = None
    """model directory to write (an interrupted run resumes here)"""
    quiet: bool = False
    """no progress output"""

    def check(self) -> DistillOptions:
        """Every check that needs no data and no model, in the options' own names."""
        from bertlens.experiments.distill import check_options

        finite(self)
        one_of(self)
        for name, why in (("teacher", "a recipe JSON or a model"), ("student", "layers:K, layers:0,2,4 or config:SIZE"),
                          ("out", "the model directory to write")):  # fmt: skip
            if getattr(self, name) is None:
                raise OptionError(f"{{{name}}} is required: {why}", name)
        if (self.texts is None) == (self.task is None):
            raise OptionError("give exactly one of {texts} or {task}", "texts", "task")
        texts = self.texts
        if isinstance(texts, str | Path):
            texts = (Path(texts),)
        elif texts is not None and not isinstance(texts, Sequence):
            raise OptionError("{texts} must be files or a list of strings", "texts")
        check_options(self.projection, self.cosine_weight, self.heldout)
        check_seed(self.seed)
        training_config(self, self.seed)  # the schedule's own checks, before any model loads
        eval_task = (self.eval_task,) if isinstance(self.eval_task, str) else tuple(self.eval_task)
        return replace(self, texts=texts, eval_task=eval_task, out=Path(self.out))

    def in_memory(self) -> bool:
        """Texts given as a list of strings (files are Paths: the command line's, or one path given as a string)."""
        return self.texts is not None and all(isinstance(t, str) for t in self.texts)


@dataclass(frozen=True)
class DistillRun(RowsResult):
    """A student in `out` (a model directory + recipe.json every command accepts): its cosine to the teacher on
    held-out texts, both speeds, and the task scores of both when asked."""

    outcome: Any  # experiments/distill.py:DistillOutcome
    texts: int
    source: str
    options: DistillOptions

    def rows(self) -> list[dict]:
        o, f = self.outcome, self.outcome.fidelity
        row = {"student": o.record["student"], "layers": o.record["student_layers"], "texts": self.texts,
               "mean_cosine": f.mean, "p1_cosine": f.p1, "min_cosine": f.min, "teacher_texts_per_s":
               o.teacher_texts_per_s, "student_texts_per_s": o.student_texts_per_s, "steps": o.steps,
               "seconds": o.seconds}  # fmt: skip
        for ev in o.evaluations:
            row[f"{ev.task}_teacher"], row[f"{ev.task}_student"] = ev.teacher[0], ev.student[0]
        return [row]

    def __repr__(self) -> str:
        row = self.rows()[0]
        return (f"DistillRun({row['student']}: mean cosine {row['mean_cosine']:.4f} to the teacher, "
                f"{row['student_texts_per_s'] / row['teacher_texts_per_s']:.2f}x its speed; model in "
                f"{self.options.out})")  # fmt: skip

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(repr(self))}</p>"


def distill_texts(options: DistillOptions) -> tuple[list[str], str]:
    """The distinct texts the student learns from (a repeated text must not sit in both the training and held-out
    parts), and where they came from."""
    from bertlens.api.sources import file_texts, training_texts
    from bertlens.io.tables import is_blank
    from bertlens.tasks.catalog_fetch import load_catalog

    if options.task:
        texts = training_texts(load_catalog(options.task, options.data_dir))
        source = f"task {options.task} (training texts)"
    elif options.in_memory():
        texts, source = [t for t in options.texts if not is_blank(t)], f"{len(options.texts)} texts in memory"
    else:
        texts = [t for path in options.texts for t in file_texts(Path(path), options.column)]
        source = ", ".join(str(p) for p in options.texts)
    distinct = list(dict.fromkeys(texts))
    if len(distinct) < 3:
        raise OptionError(f"{literal(source)}: need at least 3 distinct non-empty texts, found {len(distinct)}",
                          "texts")  # fmt: skip
    return distinct, source


def run_distill_command(options: DistillOptions, *, progress: Progress = silent) -> DistillRun:
    """Check the options (before any model loads), read the texts, and train the student into `out`."""
    from bertlens.experiments.distill import DistillOptions as Settings
    from bertlens.experiments.distill import run_distill
    from bertlens.io.run_context import RunContext
    from bertlens.models import resolve_model
    from bertlens.representation.recipe import Recipe
    from bertlens.tasks.catalog_fetch import load_catalog
    from bertlens.training.students import parse_student

    checked = options.check()
    config = training_config(checked, checked.seed)
    teacher = Recipe.load(checked.teacher) if checked.teacher.endswith(".json") else Recipe(model=checked.teacher)
    student = parse_student(checked.student, resolve_model(teacher.model).num_layers)
    texts, source = distill_texts(checked)
    eval_tasks = []
    for name in checked.eval_task:
        task = load_catalog(name, checked.data_dir)
        if task.uses_cv:
            raise OptionError(f"{{eval_task}} '{literal(name)}' has no test split; use stsb, sst2 or trec",
                              "eval_task")  # fmt: skip
        eval_tasks.append(task)
    run = RunContext(checked.out, checked.cache_dir, config.seed, progress, restart=checked.restart,
                     trust_remote_code=checked.trust_remote_code)  # fmt: skip
    settings = Settings(checked.heldout, checked.cosine_weight, checked.projection, eval_tasks)
    outcome = run_distill(teacher, student, texts, source, run, config, settings)
    save_options(checked.out, checked)
    return DistillRun(outcome, len(texts), source, checked)


def distill(**options: Any) -> DistillRun:
    """Distil a teacher recipe into a smaller, plain student model: the keywords are `bertlens distill`'s long flags
    (see `DistillOptions`); the texts may be given as a list."""
    return python_call(DistillOptions, run_distill_command, options)
