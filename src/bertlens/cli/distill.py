"""`bertlens distill`: train a smaller, plain model (mean pooling of its last layer) to reproduce any recipe. Its
flags are derived from `DistillOptions` (api/distill.py; cli/derived.py)."""

from __future__ import annotations

from bertlens.cli.console import progress_bar, say
from bertlens.cli.derived import CommandLine

COMMAND = CommandLine(
    "distill",
    "bertlens.api.distill:DistillOptions",
    "Distil a teacher recipe (any model, layers, mixer, pooler, post-processing) into a student whose plain output "
    "(mean pooling of its last layer, plus a linear projection where needed) reproduces it; writes a model directory "
    "+ recipe.json every command accepts, and distill.json with the fidelity and speed of both.",
    required={
        "teacher": "a recipe JSON or a model",
        "student": "layers:K, layers:0,2,4 or config:SIZE",
        "out": "the model directory to write (an interrupted run resumes here)",
    },
)


def run(options) -> None:
    from bertlens.api.distill import run_distill_command
    from bertlens.models import resolve_model

    with progress_bar(f"distill {options.student}", unit="steps", enabled=not options.quiet) as update:
        done = run_distill_command(options, progress=update)
    outcome, out = done.outcome, options.out
    record, fid = outcome.record, outcome.fidelity
    teacher_score = student_score = ""
    for ev in outcome.evaluations:
        teacher_score += f"; {ev.task} test {ev.metric} {ev.teacher[0]:.4f} [{ev.teacher[1]:.4f}, {ev.teacher[2]:.4f}]"
        student_score += (
            f"; {ev.task} test {ev.metric} {ev.student[0]:.4f} [{ev.student[1]:.4f}, {ev.student[2]:.4f}] = "
            f"{ev.share:.1%} of teacher, difference {ev.difference[0]:+.4f} "
            f"[{ev.difference[1]:+.4f}, {ev.difference[2]:+.4f}]"
        )
    say(f"distilled from {done.texts:,} texts of {done.source}, {outcome.steps} steps, {outcome.seconds:.0f} s")
    teacher_layers = resolve_model(record["teacher"]["model"]).num_layers
    say(f"teacher: {teacher_layers} layers, {outcome.teacher_texts_per_s:,.0f} texts/s" + teacher_score)
    say(
        f"student {record['student']}: {record['student_layers']} layers, {outcome.student_texts_per_s:,.0f} texts/s "
        f"({outcome.student_texts_per_s / outcome.teacher_texts_per_s:.2f}x); cosine to the teacher on {fid.texts} "
        f"held-out texts: mean {fid.mean:.4f}, 1st percentile {fid.p1:.4f}, min {fid.min:.4f}" + student_score
    )
    say(f"saved {out} (use --model {out} or --recipe {out / 'recipe.json'}); figures in distill.json")
