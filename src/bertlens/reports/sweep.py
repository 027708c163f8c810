"""Sweep outputs: results JSON, terminal leaderboard, heatmaps, Markdown report, recipe."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import numpy as np

from bertlens.experiments.sweep import ProtocolResult, SweepResult
from bertlens.experiments.sweep.stage_times import stage_rows, stages
from bertlens.io.atomic import write_json
from bertlens.probing.candidates import POSTPROCESS_FILE, TOKEN_PROJECTION_FILE
from bertlens.probing.label_trust import Trust
from bertlens.reports.common import provenance
from bertlens.reports.html import write_report
from bertlens.reports.plots import annotated_grid, pyplot, save_figure
from bertlens.representation.poolers import POOLERS
from bertlens.version import __version__

LATE_RECIPE = "recipe.late_interaction.json"  # the late_interaction protocol's pick, beside the sweep's own recipe


def result_rows(result: SweepResult) -> list[dict]:
    """One row per (protocol, candidate): the Report row shape of the design notes."""
    rows = []
    for protocol in result.protocols.values():
        t = protocol.test
        for i, candidate in enumerate(protocol.candidates):
            rows.append(
                {
                    "task": result.task,
                    "split": protocol.split,
                    "candidate": candidate.name,
                    "pooler": candidate.pooler,
                    "mix": candidate.mix,
                    "protocol": protocol.protocol,
                    "scored_by": protocol.scored_by[i] if protocol.scored_by else protocol.protocol,
                    "metric": protocol.metric,
                    "value": _num(t.value[i]),
                    "ci_low": _num(t.low[i]),
                    "ci_high": _num(t.high[i]),
                    "tied_with_best": bool(t.tied_with_best[i]),
                    "validation": _num(protocol.validation[i]),
                    "seed": result.seed,
                    "n": protocol.n_test,
                    "rows_used": result.rows,
                    "confidence": t.confidence,
                    **{name: _num(values[i]) for name, values in protocol.reported.items()},
                }
            )
    return rows


def reported_lines(result: SweepResult, protocol: ProtocolResult, top: int = 10) -> list[str]:
    """The figures reported beside the metric (regression: Pearson, Kendall's tau, R2, RMSE; label sets: macro-F1,
    LRAP, subset accuracy) for the best candidates, the recommended one and the model's own reading."""
    if not protocol.reported:
        return []
    names = list(protocol.reported)
    order = [i for i in np.argsort(-np.nan_to_num(protocol.test.value, nan=-np.inf), kind="stable")[:top]]
    for extra in (result.recommended.name,):
        i = next((k for k, c in enumerate(protocol.candidates) if c.name == extra), None)
        if i is not None and i not in order:
            order.append(i)
    lines = [
        f"Beside {protocol.metric}, on the same {protocol.split} rows (point estimates; every candidate's are in "
        "results.json):",
        "",
        "| candidate | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for i in order:
        cells = " | ".join(f"{protocol.reported[n][i]:.4f}" for n in names)
        lines.append(f"| `{protocol.candidates[i].name}` | {cells} |")
    return lines + [""]


def _num(x) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), 6)


def to_json(result: SweepResult) -> dict:
    return {
        "task": result.task,
        "kind": result.kind.name,
        "model": result.model,
        "model_fingerprint": result.fingerprint,
        **provenance(),
        "seed": result.seed,
        "recommended": result.recommended.name,
        "recipe": result.recipe.to_dict(),
        "basis": result.basis,
        "disagreement": result.disagreement,
        "timings": {k: round(v, 3) for k, v in result.timings.items()},
        "stages": [
            {"stage": label, "seconds": round(seconds, 3), "x_bank": None if ratio is None else round(ratio, 3)}
            for label, seconds, ratio in stage_rows(stages(result.timings, result.protocols))
        ],
        "notes": list(result.notes),
        "protocols": {
            name: {
                "description": p.description,
                "metric": p.metric,
                "n": p.n_test,
                "split": p.split,
                "best_on_test": p.candidates[p.test.best].name,
                "scalar_mix_weights": p.mix_weights,
                **(
                    {
                        "choice_cross_validated": {
                            "value": _num(p.selection.value[0]),
                            "ci_low": _num(p.selection.low[0]),
                            "ci_high": _num(p.selection.high[0]),
                            "chosen_per_fold": list(p.selected),
                        }
                    }
                    if p.selection is not None
                    else {}
                ),
            }
            for name, p in result.protocols.items()
        },
        "rows": result_rows(result),
        "staging": result.staging.as_dict()
        if result.staging is not None
        else {"rows": "all", "rows_used": result.rows},
        **({"late_interaction": late_interaction_json(result)} if result.late_interaction is not None else {}),
        **({"label_free": label_free_json(result)} if result.label_free is not None else {}),
    }


def late_interaction_json(result: SweepResult) -> dict:
    """The late-interaction pick, its recipe, the comparison with the pooled pick and each row's index size."""
    late = result.late_interaction
    return {
        "chosen": late.candidate.name,
        "recipe": late.recipe.to_dict(),
        "comparison": late.comparison,
        "bytes_per_document": {name: round(size, 1) for name, size in late.bytes_per_document.items()},
    }


def late_interaction_lines(result: SweepResult) -> list[str]:
    """The report's section on keeping the tokens: the verdict, and what each reading costs in index size."""
    late = result.late_interaction
    protocol = result.protocols["late_interaction"]
    lines = [
        "## Keep the tokens? (late interaction)",
        "",
        f"{late.comparison[0].upper()}{late.comparison[1:]}. Its multi-vector recipe is `{LATE_RECIPE}` "
        "(`bertlens index CORPUS --recipe` it, then `bertlens search`)"
        + (
            f"; it re-ranks the top {late.recipe.rerank_depth} of its first stage, the pooled "
            f"`{late.recipe.first_stage.pooler}` reading, as these rows were scored (the index keeps both vectors)."
            if late.recipe.first_stage is not None
            else "."
        ),
        "",
        "| reading | nDCG@10 [95% CI] | index size per document (float16) |",
        "|---|---|---|",
    ]
    for i, candidate in enumerate(protocol.candidates):
        t = protocol.test
        lines.append(
            f"| `{candidate.name}` | {t.value[i]:.4f} [{t.low[i]:.4f}, {t.high[i]:.4f}] | "
            f"{late.bytes_per_document[candidate.name] / 1024:.1f} KB |"
        )
    return [*lines, ""]


def label_free_json(result: SweepResult) -> dict:
    """Every component per candidate, the combined score's form and, on a labelled task, the trust figures."""
    scores = result.label_free
    out = {
        "form": scores.form,
        "components": {
            c.name: {name: _num(scores.value(name)[i]) for name in (*scores.components, "combined")}
            for i, c in enumerate(scores.candidates)
        },
    }
    if result.trust is not None:
        out["trust"] = asdict(result.trust)
    return out


def trust_lines(trust: Trust) -> list[str]:
    """The label-free pick judged by this task's labels, in sentences."""
    best = trust.regrets[0]
    line = (
        f"label-free pick {trust.pick}: {best.value:+.4f} [{best.low:+.4f}, {best.high:+.4f}] vs the best "
        f"({best.reference}; {'within' if trust.pick_within_best else 'outside'} its interval)"
    )
    for last in trust.regrets[1:]:
        line += (
            f", {last.value:+.4f} [{last.low:+.4f}, {last.high:+.4f}] vs the last-layer default ({last.reference}; "
            f"{'not below it' if trust.pick_not_below_last else 'below it'})"
        )
    lines = [
        line,
        "label-free scores vs the labelled score across "
        f"{trust.candidates} candidates (Spearman [95% CI]): "
        + ", ".join(f"{a.score} {a.rho:+.2f} [{a.low:+.2f}, {a.high:+.2f}]" for a in trust.agreements),
    ]
    if trust.settling:
        lines.append(
            "labels that settle the choice (share of draws whose choice is tied with the full-label best): "
            + ", ".join(f"{s.labels}: {s.within_best:.0%}" for s in trust.settling)
        )
    return lines


def recommended_score(result: SweepResult) -> str:
    """The recommended candidate's test score and interval under the protocol it was chosen by."""
    protocol = result.main
    i = next(k for k, c in enumerate(protocol.candidates) if c.name == result.recommended.name)
    t = protocol.test
    return f"{protocol.split} {protocol.metric} {t.value[i]:.4f} [{t.low[i]:.4f}, {t.high[i]:.4f}]" + (
        ", tied with the best" if t.tied_with_best[i] else ""
    )


TIED = (
    "'tied with best' means the 95% paired-bootstrap interval of (best - candidate) includes 0. The test is "
    "paired per example, so a candidate can be tied with the best while one scoring higher is not, when the "
    "higher one's errors differ more from the best's."
)


SETTLING = (
    "The choice from few labels uses a ridge classifier cross-validated on the drawn labels (classification) or the "
    "pair cosine's Spearman on the drawn pairs (similarity); draws come from the training rows (every row under "
    "cross-validation), several seeded repeats per count."
)


def interval_level(result: SweepResult) -> str:
    """How the intervals read: '95%', or for a staged sweep '95% over 5 looks (99% each)'."""
    if result.staging is None:
        return "95%"
    each = f"{result.staging.confidence:.2%}".rstrip("0").rstrip(".")
    return f"95% over {len(result.staging.planned)} looks ({each} each)"


def staging_lines(result: SweepResult) -> list[str]:
    """`--rows auto`: every look, its pick and the largest gap any candidate may still have over it."""
    staging = result.staging
    if staging is None:
        return []
    lines = [
        "## Rows: stages and where the sweep stopped",
        "",
        f"`--rows auto` looked at up to {len(staging.planned)} stages "
        f"({', '.join(f'{n:,}' for n in staging.planned)} rows; seeded, every class spread evenly over the order) "
        f"and stops when no candidate can be ahead of the pick by more than {staging.tolerance:g} (the upper end "
        f"of its paired gap, at {interval_level(result)}), on the rows read and on every row: each gap is carried to "
        f"all {staging.total:,} rows at the candidate's gain on the pick per doubling of the rows since the previous "
        "stage (learning curves cross; a first stage has no trend, so it does not stop). Every interval is widened "
        "for the looks planned (Bonferroni), so the reported intervals keep 95% coverage however the stop fell.",
        "",
        "| stage | rows | pick | largest gap to the pick (upper end) | candidate | projected to every row | candidate "
        "| settled | seconds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for number, look in enumerate(staging.looks, start=1):
        gap = f"{look.largest_gap:+.4f}" if np.isfinite(look.largest_gap) else "-"
        reach = f"{look.projected_gap:+.4f}" if np.isfinite(look.projected_gap) else "no trend yet"
        lines.append(
            f"| {number} | {look.rows:,} | `{look.pick}` | {gap} | {look.ahead or '-'} | {reach} | "
            f"{look.reaching or '-'} | {'yes' if look.settled else 'no'} | {look.seconds:.1f} |"
        )
    if staging.settled:
        lines += [
            "",
            f"Stopped on {staging.rows:,} of {staging.total:,} rows; every row would have taken about "
            f"{staging.estimated_all_seconds:,.0f} s (this run's bank rate per row, its last stage's probes scaled by "
            f"rows), this took {staging.seconds:,.0f} s: about {staging.saved_seconds:,.0f} s saved. To score every "
            "row: the same command with `--rows all` (`rows='all'` from Python); it reuses the rows encoded here.",
        ]
    else:
        lines += ["", f"The choice did not settle before the last stage: all {staging.total:,} rows were scored."]
    return lines + [""]


def scored_on(protocol: ProtocolResult) -> str:
    if protocol.split_name:
        return f"on {protocol.split_name} ({protocol.n_test} texts each)"
    if protocol.folds > 1:
        return f"out-of-fold over {protocol.n_test} examples ({protocol.folds}-fold cross-validation)"
    return f"on {protocol.n_test} test examples"


def leaderboard(protocol: ProtocolResult, top: int = 10) -> list[tuple[str, str, str, str]]:
    """(rank, candidate, value [low, high], tie mark), best first."""
    t = protocol.test
    order = np.argsort(-np.nan_to_num(t.value, nan=-np.inf))[:top]
    return [
        (
            str(r + 1),
            protocol.candidates[i].name,
            f"{t.value[i]:.4f} [{t.low[i]:.4f}, {t.high[i]:.4f}]",
            "; ".join(
                note
                for note in (
                    "tied with best" if t.tied_with_best[i] else "",
                    protocol.scored_by[i]
                    if protocol.scored_by and protocol.scored_by[i] not in ("logistic", "cosine")
                    else "",
                )
                if note
            ),
        )
        for r, i in enumerate(order)
    ]


def heatmap_figure(protocol: ProtocolResult, title: str):
    """Layer x pooler grid of test scores (single layers only), as a matplotlib Figure."""
    plt = pyplot()

    known = list(POOLERS)
    poolers = sorted(
        {c.pooler for c in protocol.candidates}, key=lambda p: (known.index(p) if p in known else len(known), p)
    )
    layers = sorted({c.single_layer for c in protocol.candidates if c.single_layer is not None})
    grid = np.full((len(layers), len(poolers)), np.nan)
    for i, c in enumerate(protocol.candidates):
        if c.single_layer is not None:
            grid[layers.index(c.single_layer), poolers.index(c.pooler)] = protocol.test.value[i]
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(poolers), 1.2 + 0.45 * len(layers)))
    image = annotated_grid(ax, grid)
    ax.set_xticks(range(len(poolers)), poolers)
    ax.set_yticks(range(len(layers)), [f"layer {k}" for k in layers])
    ax.set_title(title, fontsize=9)
    fig.colorbar(image, ax=ax, label=protocol.metric)
    fig.tight_layout()
    return fig


def heatmap(protocol: ProtocolResult, path: Path, title: str) -> Path:
    return save_figure(heatmap_figure(protocol, title), path)


def time_lines(result: SweepResult) -> list[str]:
    """Where the sweep's time went: each stage's seconds and its multiple of the encoding pass (the bank)."""
    rows = stage_rows(stages(result.timings, result.protocols))
    lines = ["## Where the time went", "", "| stage | seconds | x the bank |", "|---|---|---|"]
    for label, seconds, ratio in rows:
        shown = f"**{label}**" if label == rows[-1][0] else label
        lines.append(f"| {shown} | {seconds:,.1f} | {'-' if ratio is None else f'{ratio:.2f}'} |")
    return lines + [""]


def markdown(result: SweepResult, images: dict[str, str]) -> str:
    lines = [
        f"# bertlens sweep: {result.task}",
        "",
        f"Model `{result.model}` (fingerprint `{result.fingerprint}`), seed {result.seed}, bertlens {__version__}.",
        "",
        f"**Recommended:** `{result.recommended.name}` ({recommended_score(result)}), {result.basis}.",
        "",
    ]
    main = result.main
    if main.selection is not None:
        s = main.selection
        lines += [
            f"**The choice, cross-validated:** choosing on each fold's inner dev split and scoring on that fold's "
            f"held-out rows gives {main.metric} {s.value[0]:.4f} [{s.low[0]:.4f}, {s.high[0]:.4f}] "
            f"(chosen per fold: {', '.join(sorted(set(main.selected)))}). This is the honest estimate for the "
            "recommendation: the candidate scores below are each fitted per fold but the best of them is picked after "
            "seeing them all.",
            "",
        ]
    if result.disagreement:
        lines += [f"**Note:** {result.disagreement}.", ""]
    for name, protocol in result.protocols.items():
        lines += [
            f"## Protocol: {name}",
            "",
            protocol.description
            + f"; {protocol.metric} {scored_on(protocol)}, {interval_level(result)} paired-bootstrap intervals. "
            + TIED,
            "",
            f"| rank | candidate | {protocol.split} [{interval_level(result)} CI] | |",
            "|---|---|---|---|",
        ]
        lines += [f"| {r} | `{c}` | {v} | {t} |" for r, c, v, t in leaderboard(protocol, top=15)]
        lines += ["", *reported_lines(result, protocol), f"![{name} heatmap]({images[name]})", ""]
    if result.late_interaction is not None:
        lines += late_interaction_lines(result)
    if result.trust is not None:
        lines += ["## Can the label-free pick be trusted here?", ""] + [f"- {x}" for x in trust_lines(result.trust)]
        lines += ["", SETTLING, "", f"![label-free vs labelled]({images['trust']})", ""]
    lines += staging_lines(result)
    lines += time_lines(result)
    lines += ["", "## Limits", ""] + [f"- {n}" for n in result.notes]
    return "\n".join(lines) + "\n"


def trust_plot(result: SweepResult, path: Path) -> Path:
    """Each candidate's combined label-free score against its labelled score, the pick, the best and the last
    layer marked: how well the texts alone ordered the candidates on this task."""
    plt = pyplot()
    main, scores = result.main, result.label_free
    index = {c.name: i for i, c in enumerate(main.candidates)}
    common = [k for k, c in enumerate(scores.candidates) if c.name in index]
    free = scores.value("combined")[common]
    labelled = np.array([main.test.value[index[scores.candidates[k].name]] for k in common])
    fig, ax = plt.subplots(figsize=(5.6, 4.2))
    ax.scatter(free, labelled, s=14, color="0.55")
    marks = (
        (result.trust.pick, "label-free pick", "tab:blue"),
        (main.candidates[main.test.best].name, "labelled best", "tab:green"),
        *((r.reference, "last layer", "tab:red") for r in result.trust.regrets[1:]),
    )
    for name, label, colour in marks:
        k = next((j for j, i in enumerate(common) if scores.candidates[i].name == name), None)
        if k is not None:
            ax.scatter(free[k], labelled[k], s=60, facecolors="none", edgecolors=colour, linewidths=1.6, label=label)
    ax.set_xlabel("combined label-free score (no labels)")
    ax.set_ylabel(f"{main.metric} ({main.split})")
    ax.set_title(f"{result.task}: label-free vs labelled, {result.model}", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return save_figure(fig, path)


def write_outputs(result: SweepResult, out: Path) -> dict[str, Path]:
    """results.json, recipe.json, heatmap-<protocol>.png and report.md under `out`, each atomic."""
    out.mkdir(parents=True, exist_ok=True)
    images = {}
    for name, protocol in result.protocols.items():
        file = heatmap(
            protocol, out / f"heatmap-{name}.png", f"{result.task}: {name} ({protocol.metric}), {result.model}"
        )
        images[name] = file.name
    if result.trust is not None:
        images["trust"] = trust_plot(result, out / "label-free-trust.png").name
    write_json(out / "results.json", to_json(result))
    if result.postprocessor is not None:
        result.postprocessor.save(out / POSTPROCESS_FILE)  # the recipe names it relative to itself
    result.recipe.save(out / "recipe.json")
    late = {}
    if result.late_interaction is not None:
        if result.late_interaction.projection is not None:
            result.late_interaction.projection.save(out / TOKEN_PROJECTION_FILE)  # named relative to its recipe
        late = {"late_interaction_recipe": result.late_interaction.recipe.save(out / LATE_RECIPE)}
    return {
        "results": out / "results.json",
        "recipe": out / "recipe.json",
        **late,
        **write_report(out, markdown(result, images)),
    }
