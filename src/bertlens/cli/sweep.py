"""`bertlens sweep --task NAME | --data FILE ...`: score every representation choice, recommend one. Its flags are
derived from `SweepOptions` (api/sweep.py; cli/derived.py)."""

from __future__ import annotations

from pathlib import Path

from bertlens.cli.console import STDERR, print_table, progress_bar, say
from bertlens.cli.derived import CommandLine

COMMAND = CommandLine(
    "sweep",
    "bertlens.api.sweep:SweepOptions",
    "Encode once, score every layer x pooler and layer mix, recommend a recipe.",
    defaults={"out": Path("out/sweep")},
    python_only=("models",),
)


def run(options) -> None:
    from bertlens.api.sweep import run_sweep_command

    source = options.task or Path(options.data or options.texts).stem
    if len(options.model_names) > 1:
        source += f" with {len(options.model_names)} models"
    label = f"sweep {source}" + (" (texts alone)" if options.texts is not None else "")
    with progress_bar(label, enabled=not options.quiet) as update:
        outcome = run_sweep_command(options, progress=update, notify=say)
    if options.texts is not None:
        return _report_texts(outcome, options.out)
    if len(options.model_names) > 1:
        return _report_models(outcome, options.out)
    _report(outcome, options.out)


def _report_models(outcome, out: Path) -> None:
    """Several models: each one's own and best reading with its price, the leaderboard's top, the choice."""
    from bertlens.reports.models import TOP, model_rows

    result = outcome.result
    rows = [
        (r["model"], f"{r['own_reading']}: {r['own_value']:.4f}" if r["own_reading"] else "-",
         f"{r['best_reading']}: {r['best_value']:.4f} [{r['best_ci'][0]:.4f}, {r['best_ci'][1]:.4f}]",
         f"{r['texts_per_s']:,.0f}", f"{r['ms_one_text']:.1f}", str(r["dim"]),
         "chosen" if r["chosen"] else "tied" if r["tied_with_best"] else "")
        for r in model_rows(result)
    ]  # fmt: skip
    print_table(
        f"{result.results[0].task}: {len(rows)} models ({result.metric}; texts/s on {result.prices[0].machine})",
        ("model", "own reading", "best reading [95% CI]", "texts/s", "ms, one text", "dim", ""),
        rows,
    )
    board = result.board
    tied = [f"{m} {c}" for (m, c), t in zip(result.names, board.tied_with_best, strict=True) if t]
    say(
        f"tied with the best across models ({len(tied)}): {', '.join(tied[:TOP])}" + (" ..." if len(tied) > TOP else "")
    )
    for note in result.notes:
        say(f"note: {note}")
    STDERR.print(f"recommended [bold]{outcome.recommended}[/]: {result.choice.rule}")
    if result.runner_up:
        say(f"passed over: {result.runner_up}")
    say(
        f"wrote {out / 'report.md'}, {out / 'results.json'}, {out / 'recipe.json'} and each model's sweep under "
        f"{out / 'models'} (reproduce: bertlens embed FILE --recipe {out / 'recipe.json'})"
    )


def _report(outcome, out: Path) -> None:
    from bertlens.reports.sweep import interval_level, leaderboard, recommended_score

    result = outcome.result
    level = interval_level(result)
    for name, protocol in result.protocols.items():
        print_table(
            f"{result.task}: {name} ({protocol.metric}, {protocol.split}, {level} CI)",
            ("#", "candidate", f"score [{level} CI]", ""),
            leaderboard(protocol),
        )
    if result.staging is not None:
        say(result.notes[-1])
    if result.disagreement:
        STDERR.print(f"[yellow]note:[/] {result.disagreement}")
    STDERR.print(f"recommended [bold]{result.recommended.name}[/] ({recommended_score(result)}): {result.basis}")
    if result.trust is not None:
        print_trust(result.trust)
    main = result.main
    if main.selection is not None:
        s = main.selection
        say(
            f"the choice, cross-validated (chosen per fold on inner dev): {main.metric} {s.value[0]:.4f} "
            f"[{s.low[0]:.4f}, {s.high[0]:.4f}]"
        )
    say("tied with best: the paired-bootstrap interval of (best - candidate) includes 0")
    say(
        f"wrote {out / 'report.md'}, {out / 'results.json'} and {out / 'recipe.json'} "
        f"(reproduce: bertlens embed FILE --recipe {out / 'recipe.json'})"
    )
    if result.late_interaction is not None:
        from bertlens.reports.sweep import LATE_RECIPE

        STDERR.print(f"[yellow]late interaction:[/] {result.late_interaction.comparison}")
        say(f"its multi-vector recipe: {out / LATE_RECIPE} (bertlens index CORPUS --recipe {out / LATE_RECIPE})")


def print_trust(trust) -> None:
    """How far the label-free pick holds on this labelled task, and how many labels settle the choice."""
    from bertlens.reports.sweep import trust_lines

    for line in trust_lines(trust):
        say(line)


def _report_texts(outcome, out: Path) -> None:
    """sweep --texts FILE: no labels; the label-free protocol chose."""
    from bertlens.probing.label_free import CATALOG_TRUST
    from bertlens.reports.sweep import leaderboard

    result, protocol = outcome.result, outcome.result.main
    print_table(
        f"{result.task}: label-free (combined rank score, {protocol.split}, 95% range)",
        ("#", "candidate", "score [95% range]", ""),
        leaderboard(protocol),
    )
    STDERR.print(
        f"recommended [bold]{result.recommended.name}[/] from {protocol.n_test} texts, no labels: {result.basis}"
    )
    say(
        f"how far this can be trusted: {CATALOG_TRUST}; with a few labels, `bertlens sweep --data FILE ... "
        "--protocols probe,label_free` says how far it holds on your task"
    )
    say(f"wrote {out / 'report.md'}, {out / 'results.json'} and {out / 'recipe.json'}")
    say(f"reproduce: bertlens embed FILE --recipe {out / 'recipe.json'}")
