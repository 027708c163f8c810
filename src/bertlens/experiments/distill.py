"""`bertlens distill` as a library call: bake any recipe (the teacher) into a smaller, plain model (the student).

The teacher's vectors for the training texts are computed once (cached by content); the student
(a subset of the teacher's layers, or a small BERT from a config) learns to reproduce them with mean
pooling of its last layer, plus a learned linear projection when the widths differ or the teacher's
space was post-processed. Training is the one loop with the Distillation objective (strategies,
checkpoints, exact resume, progress). The result is a model directory + recipe.json that every
command accepts, and distill.json with the fidelity (cosine to the teacher on held-out texts), the
speed of both measured in the same run, and optionally a task score of both with a paired interval.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from bertlens.embedding.cached import cached_vectors
from bertlens.embedding.embedder import Embedder
from bertlens.embedding.speed import texts_per_second
from bertlens.encoding.encoder import Encoder
from bertlens.errors import OptionError, literal
from bertlens.io.atomic import write_json
from bertlens.io.cache import default_cache_dir
from bertlens.io.run_context import RunContext
from bertlens.metrics.geometry import row_cosine
from bertlens.models import resolve_model
from bertlens.probing.task_comparison import TaskComparison, compare_on_task
from bertlens.representation.apply import Representation
from bertlens.representation.postprocess import PostProcessor
from bertlens.representation.recipe import Recipe
from bertlens.tasks.loaders import TaskData
from bertlens.tasks.splits import carve_dev
from bertlens.training.config import DISTILL_DEFAULTS, PROJECTIONS, TrainConfig
from bertlens.training.loop import fine_tune
from bertlens.training.objectives import Distillation
from bertlens.training.saved_model import run_checkpoint, save_finetuned
from bertlens.training.strategies import parse_strategy
from bertlens.training.students import StudentSpec, build_student, student_width

PROJECTION_FILE = "projection.safetensors"
UNIT_NORM_TOLERANCE = 1e-3  # teacher vectors within this of length 1 are taken as normalised
SPEED_TEXTS = 1000
HELDOUT_LIMIT = 2000  # held-out texts for the fidelity figure: enough for its 1st percentile


@dataclass(frozen=True)
class Fidelity:
    """Cosine of the student's vector to the teacher's on held-out texts."""

    texts: int
    mean: float
    p1: float
    min: float


@dataclass(frozen=True)
class DistillOutcome:
    recipe: Recipe
    fidelity: Fidelity
    teacher_texts_per_s: float
    student_texts_per_s: float
    steps: int
    seconds: float
    evaluations: tuple[TaskComparison, ...]
    record: dict


def _fit_projection(student: np.ndarray, teacher: np.ndarray) -> nn.Linear:
    """A linear map student [n, H] -> teacher [n, D] started at the least-squares fit (ridge 1e-3), so training
    refines a good map instead of learning one from noise."""
    x = np.hstack([student, np.ones((len(student), 1))]).astype(np.float64)  # [n, H+1]
    gram = x.T @ x + 1e-3 * np.eye(x.shape[1])
    solution = np.linalg.solve(gram, x.T @ teacher.astype(np.float64))  # [H+1, D]
    layer = nn.Linear(student.shape[1], teacher.shape[1])
    with torch.no_grad():
        layer.weight.copy_(torch.from_numpy(solution[:-1].T).float())
        layer.bias.copy_(torch.from_numpy(solution[-1]).float())
    return layer


def fidelity(student: np.ndarray, teacher: np.ndarray) -> Fidelity:
    cosines = row_cosine(student, teacher)  # [n]
    return Fidelity(len(cosines), float(cosines.mean()), float(np.percentile(cosines, 1)), float(cosines.min()))


def check_options(projection: str, cosine_weight: float, heldout: float) -> None:
    if projection not in PROJECTIONS:
        raise OptionError(f"{{projection}} must be one of {', '.join(PROJECTIONS)}, got {literal(projection)}",
                          "projection")  # fmt: skip
    if cosine_weight < 0:
        raise OptionError(f"{{cosine_weight}} must be 0 or more, got {cosine_weight}", "cosine_weight")
    if not 0 < heldout < 0.5:
        raise OptionError(f"{{heldout}} must be a share between 0 and 0.5, e.g. 0.05; got {heldout}", "heldout")


def _needs_projection(projection: str, teacher: Embedder, width: int) -> bool:
    """A learned map student -> teacher: when asked, or (auto) when the widths differ or the teacher post-processes."""
    needed = projection == "always" or (
        projection == "auto" and (teacher.dim != width or teacher.recipe.postprocess is not None)
    )
    if not needed and teacher.dim != width:
        raise OptionError(
            f"{{projection}} never: the teacher's vectors have {teacher.dim} dimensions and the student's {width}; "
            "allow a projection (auto)",
            "projection",
        )
    return needed


def _save_student(out: Path, recipe: Recipe, layer: nn.Linear | None, unit: bool) -> Recipe:
    """The student's recipe: mean of the last layer, then the learned projection (as an affine post-processor)."""
    final = recipe.replace(normalize=unit and layer is None)
    if layer is None:
        return final
    weight = layer.weight.detach().double().numpy().T  # [H, D]
    PostProcessor.affine(weight, layer.bias.detach().double().numpy(), normalize=unit).save(out / PROJECTION_FILE)
    return final.replace(postprocess=PROJECTION_FILE)


def _measure(teacher, student, texts, held_rows, targets, eval_tasks, seed, progress) -> tuple:
    """(fidelity on held-out texts, (teacher, student) texts/s measured together, task comparisons)."""
    measured = fidelity(student.encode([texts[i] for i in held_rows]), targets[held_rows])
    speed_texts = [texts[i] for i in held_rows[:SPEED_TEXTS]]
    progress("measuring speed", 0, 1)
    speeds = texts_per_second([teacher, student], speed_texts)
    progress("measuring speed", 1, 1)
    evaluations = []
    for task in eval_tasks:
        progress("evaluating on " + task.name, 0, 1)
        evaluations.append(compare_on_task(teacher, student, task, seed))
        progress("evaluating on " + task.name, 1, 1)
    return measured, tuple(speeds), len(speed_texts), tuple(evaluations)


@dataclass(frozen=True)
class DistillOptions:
    heldout: float = 0.05  # share of the texts held out for the fidelity figures
    cosine_weight: float = 0.0  # weight of the cosine term beside MSE
    projection: str = "auto"  # a learned projection to the teacher's width: auto, always or never
    eval_tasks: Sequence[TaskData] = ()  # tasks teacher and student are scored on afterwards


def run_distill(
    teacher_recipe: Recipe,
    student: StudentSpec,
    texts: Sequence[str],
    source: str,
    run: RunContext,
    config: TrainConfig = DISTILL_DEFAULTS,
    options: DistillOptions = DistillOptions(),
) -> DistillOutcome:
    """Train the student on `texts`; write run.out (model, recipe.json, distill.json); return the measured outcome."""
    out, cache_dir, restart, progress = run.out, run.cache_dir, run.restart, run.progress
    trust_remote_code = run.trust_remote_code
    heldout, cosine_weight, projection = options.heldout, options.cosine_weight, options.projection
    eval_tasks = options.eval_tasks
    start = time.perf_counter()
    check_options(projection, cosine_weight, heldout)
    teacher = Embedder(teacher_recipe, trust_remote_code=trust_remote_code)
    needs_projection = _needs_projection(projection, teacher, student_width(student, teacher.encoder.hidden_size))
    train_rows, held_rows = carve_dev(
        np.arange(len(texts)), None, config.seed, False, heldout, limit=HELDOUT_LIMIT, min_kept=2
    )
    targets = cached_vectors(
        teacher, texts, default_cache_dir(cache_dir), lambda s, d, t: progress("teacher vectors", d, t)
    )  # [N, D]
    unit = bool(np.all(np.abs(np.linalg.norm(targets, axis=1) - 1) < UNIT_NORM_TOLERANCE))
    init = out / ".student-init"
    teacher_dir = resolve_model(teacher_recipe.model).path
    note = build_student(student, teacher_dir, init, config.seed, teacher.encoder.max_length, trust_remote_code)
    encoder = Encoder(str(init), max_length=teacher.encoder.max_length, trust_remote_code=trust_remote_code)
    # the plain recipe, mean of the last layer, at the teacher's precision setting: the student is timed (and served)
    # as the teacher is, so its speed-up is not a precision difference (training itself runs at config.precision)
    recipe = Recipe(model=str(init), max_length=encoder.max_length, precision=teacher_recipe.precision)
    representation = Representation(recipe, trainable=True)
    train_tok = encoder.tokenize([texts[i] for i in train_rows])
    held_tok = encoder.tokenize([texts[i] for i in held_rows])
    layer = None
    if needs_projection:
        plain = Distillation(encoder, representation, train_tok, targets[train_rows], held_tok, targets[held_rows])
        sample = train_rows[: min(len(train_rows), 2048)]
        layer = _fit_projection(plain.predict(encoder.tokenize([texts[i] for i in sample])), targets[sample])
    objective = Distillation(
        encoder, representation, train_tok, targets[train_rows], held_tok, targets[held_rows], layer, cosine_weight
    )
    checkpoint = run_checkpoint(out, restart)
    strategy = parse_strategy("full", encoder.num_layers)
    result = fine_tune(encoder, objective, strategy, config, checkpoint_dir=checkpoint, progress=progress)
    record = {
        "objective": "distillation",
        "teacher": teacher_recipe.to_dict(),
        "teacher_fingerprint": teacher.encoder.ref.fingerprint,
        "student": student.name,
        "student_init": note,
        "student_layers": encoder.num_layers,
        "student_width": encoder.hidden_size,
        "projection": layer is not None,
        "normalized": unit,
        "source": source,
        "texts": len(texts),
        "train_texts": len(train_rows),
        "heldout_texts": len(held_rows),
        "cosine_weight": cosine_weight,
        "config": asdict(config),
        "steps": result.steps,
        "first_loss": result.first_loss,
        "last_loss": result.last_loss,
        "heldout_cosine_by_epoch": list(result.history),
    }
    save_finetuned(out, encoder, _save_student(out, recipe, layer, unit), None, record)
    shutil.rmtree(checkpoint, ignore_errors=True)
    shutil.rmtree(init, ignore_errors=True)
    saved = Recipe.load(out / "recipe.json")
    student_embedder = Embedder(saved, trust_remote_code=trust_remote_code)  # what users will load, not the trainer
    measured, (teacher_speed, student_speed), timed, evaluations = _measure(
        teacher, student_embedder, texts, held_rows, targets, eval_tasks, config.seed, progress
    )
    seconds = time.perf_counter() - start
    record = {
        **record,
        "fidelity": asdict(measured),
        "speed": {
            "texts": timed,
            "teacher_texts_per_s": round(teacher_speed, 1),
            "student_texts_per_s": round(student_speed, 1),
            "ratio": round(student_speed / teacher_speed, 3),
            "threads": torch.get_num_threads(),
        },
        "evaluation": [asdict(e) for e in evaluations],
        "seconds": round(seconds, 1),
    }
    write_json(out / "distill.json", record)
    return DistillOutcome(saved, measured, teacher_speed, student_speed, result.steps, seconds, evaluations, record)
