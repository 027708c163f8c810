"""`bertlens recommend`: measure the data and say what to do (length, domain, representation, fine-tuning,
latency), with the evidence behind each decision."""

from __future__ import annotations

from bertlens.cli.console import print_table, progress_bar, say
from bertlens.cli.derived import CommandLine

COMMAND = CommandLine(
    "recommend",
    "bertlens.api.recommend:RecommendOptions",
    "Measure your data within a time budget and recommend: text length strategy, domain adaptation, the "
    "representation (a sweep), frozen vs fine-tuned, and the serving precision; each decision with its evidence, "
    "rule and confidence. Writes report.md/.html, results.json and recipe.json.",
    required={"out": "the directory the steps, the report and the recipe go to (a rerun reuses finished steps)"},
    python_only=("models",),
)


def run(options) -> None:
    from bertlens.api.recommend import run_recommend_command

    with progress_bar("recommend", unit="steps", enabled=not options.quiet) as update:
        outcome = run_recommend_command(options, progress=update, notify=say)
    result, out = outcome.result, options.out
    print_table(
        f"recommend: {result.task}",
        ["step", "decision", "how sure"],
        [[d.step, d.decision, d.confidence] for d in result.decisions],
    )
    say(f"report: {out / 'report.md'} and {out / 'report.html'}; recipe: {out / 'recipe.json'}")
