"""`bertlens distill`: train a smaller, plain model (mean pooling of its last layer) to reproduce any recipe."""

from __future__ import annotations

import argparse
from dataclasses import replace

from bertlens.cli.commands import COMMANDS
from bertlens.cli.console import progress_bar, say
from bertlens.cli.options import add_trained_model_options, add_training_options, training_config
from bertlens.cli.sources import add_data_dir_option, add_texts_options, file_texts, training_texts
from bertlens.errors import BertlensError
from bertlens.models import resolve_model
from bertlens.representation.recipe import Recipe
from bertlens.tasks.catalog import CATALOG, data_dir, get_task
from bertlens.training.config import DISTILL_DEFAULTS, PROJECTIONS, STUDENT_FORMS


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "distill",
        help=COMMANDS["distill"],
        description="Distil a teacher recipe (any model, layers, mixer, pooler, post-processing) into a student "
        "whose plain output (mean pooling of its last layer, plus a linear projection where needed) reproduces "
        "it; writes a model directory + recipe.json every command accepts, and distill.json with the fidelity "
        "and speed of both.",
    )
    parser.add_argument(
        "--teacher", required=True, help="a recipe JSON (e.g. from `bertlens sweep`), or a model for its default recipe"
    )
    parser.add_argument("--student", required=True, help=STUDENT_FORMS)
    source = parser.add_mutually_exclusive_group(required=True)
    add_texts_options(parser, "unlabelled texts", target=source, many=True)
    source.add_argument("--task", help=f"a catalog task's training texts: {', '.join(CATALOG)}")
    add_data_dir_option(parser)
    parser.add_argument(
        "--eval-task",
        nargs="+",
        default=[],
        help="also score teacher and student on these tasks' test splits (stsb, sst2, trec)",
    )
    parser.add_argument("--heldout", type=float, default=0.05, help="share of texts held out to measure fidelity")
    parser.add_argument(
        "--cosine-weight", type=float, default=0.0, help="add this x (1 - cosine) to the MSE loss (default 0)"
    )
    parser.add_argument(
        "--projection",
        choices=PROJECTIONS,
        default="auto",
        help="a learned linear map to the teacher's space: auto (when the widths differ or the teacher is "
        "post-processed), always, never",
    )
    add_training_options(parser, DISTILL_DEFAULTS)
    add_trained_model_options(parser, "teacher-vector cache")
    parser.set_defaults(run=run)


def _teacher(spec: str) -> Recipe:
    if spec.endswith(".json"):
        return Recipe.load(spec)
    return Recipe(model=spec)


def _texts(args: argparse.Namespace) -> tuple[list[str], str]:
    from bertlens.tasks.loaders import load_catalog_task

    if args.task:
        texts, source = (
            training_texts(load_catalog_task(get_task(args.task), data_dir(args.data_dir))),
            (f"task {args.task} (training texts)"),
        )
    else:
        texts = [t for path in args.texts for t in file_texts(path, args.column)]
        source = ", ".join(str(p) for p in args.texts)
    distinct = list(dict.fromkeys(texts))  # a repeated text must not sit in both the training and held-out parts
    if len(distinct) < 3:
        raise BertlensError(f"{source}: need at least 3 distinct non-empty texts, found {len(distinct)}")
    return distinct, source


def run(args: argparse.Namespace) -> None:
    from bertlens.experiments.distill import DistillOptions, run_distill
    from bertlens.io.run_context import RunContext
    from bertlens.tasks.loaders import load_catalog_task
    from bertlens.training.students import parse_student

    config = training_config(args, args.seed)
    teacher = _teacher(args.teacher)
    student = parse_student(args.student, resolve_model(teacher.model).num_layers)
    texts, source = _texts(args)
    eval_tasks = []
    for name in args.eval_task:
        task = load_catalog_task(get_task(name), data_dir(args.data_dir))
        if task.uses_cv:
            raise BertlensError(f"--eval-task '{name}' has no test split; use stsb, sst2 or trec")
        eval_tasks.append(task)
    with progress_bar(f"distill {student.name}", unit="steps", enabled=not args.quiet) as update:
        run_context = RunContext(args.out, args.cache_dir, config.seed, update, restart=args.restart)
        options = DistillOptions(args.heldout, args.cosine_weight, args.projection, eval_tasks)
        outcome = run_distill(
            teacher,
            student,
            texts,
            source,
            replace(run_context, trust_remote_code=args.trust_remote_code),
            config,
            options,
        )
    record, fid = outcome.record, outcome.fidelity
    teacher_score = student_score = ""
    for ev in outcome.evaluations:
        teacher_score += f"; {ev.task} test {ev.metric} {ev.teacher[0]:.4f} [{ev.teacher[1]:.4f}, {ev.teacher[2]:.4f}]"
        student_score += (
            f"; {ev.task} test {ev.metric} {ev.student[0]:.4f} [{ev.student[1]:.4f}, {ev.student[2]:.4f}] = "
            f"{ev.share:.1%} of teacher, difference {ev.difference[0]:+.4f} "
            f"[{ev.difference[1]:+.4f}, {ev.difference[2]:+.4f}]"
        )
    say(f"distilled from {len(texts):,} texts of {source}, {outcome.steps} steps, {outcome.seconds:.0f} s")
    say(
        f"teacher: {resolve_model(teacher.model).num_layers} layers, {outcome.teacher_texts_per_s:,.0f} texts/s"
        + teacher_score
    )
    say(
        f"student {record['student']}: {record['student_layers']} layers, {outcome.student_texts_per_s:,.0f} texts/s "
        f"({outcome.student_texts_per_s / outcome.teacher_texts_per_s:.2f}x); cosine to the teacher on {fid.texts} "
        f"held-out texts: mean {fid.mean:.4f}, 1st percentile {fid.p1:.4f}, min {fid.min:.4f}" + student_score
    )
    say(f"saved {args.out} (use --model {args.out} or --recipe {args.out / 'recipe.json'}); figures in distill.json")
