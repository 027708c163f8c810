"""Outputs of `bertlens compare`: results.json, a learning-curve plot, a CKA plot, report.md."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import numpy as np

from bertlens.experiments.compare import CompareResult, curve, payoff
from bertlens.io.atomic import write_json
from bertlens.reports.common import provenance, table
from bertlens.reports.html import write_report
from bertlens.reports.plots import pyplot, save_figure
from bertlens.version import __version__


def drift_summary(result: CompareResult) -> list[dict]:
    """Per fine-tuning strategy and size: mean CKA per layer and the second task's probe change."""
    rows = []
    for strategy in dict.fromkeys(r.strategy for r in result.runs if r.cka is not None):
        for size in sorted({r.size for r in result.runs if r.strategy == strategy}):
            chosen = [r for r in result.runs if r.strategy == strategy and r.size == size]
            row = {
                "strategy": strategy,
                "size": size,
                "cka": np.mean([r.cka for r in chosen], axis=0).round(4).tolist(),
            }
            if chosen[0].drift_before is not None:
                row["probe_before"] = chosen[0].drift_before
                row["probe_after"] = float(np.mean([r.drift_after for r in chosen]))
            rows.append(row)
    return rows


def to_json(result: CompareResult) -> dict:
    return {
        "command": "compare",
        "task": result.task,
        "kind": result.kind,
        "metric": result.metric,
        "model": result.model,
        "recipe": result.recipe.to_dict(),
        **provenance(),
        "sizes": list(result.config.sizes),
        "strategies": [s.name for s in result.config.strategies],
        "seeds": list(result.config.seeds),
        "train_config": asdict(result.config.train),
        "n_test": result.n_test,
        "payoff": payoff(result),
        "curve": [asdict(p) for p in curve(result)],
        "drift_task": result.drift_task,
        "drift": drift_summary(result),
        "notes": list(result.notes),
        "runs": [asdict(r) for r in result.runs],
    }


def learning_curve_plot(result: CompareResult, path: Path) -> Path:
    return save_figure(learning_curve_figure(result), path)


def learning_curve_figure(result: CompareResult):
    """Test score by training size, one line per strategy, with the 95% interval over seeds."""
    plt = pyplot()
    points = curve(result)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for strategy in dict.fromkeys(p.strategy for p in points):
        mine = [p for p in points if p.strategy == strategy]
        sizes = [p.size for p in mine]
        means = np.array([p.mean for p in mine])
        errors = np.array([[p.mean - p.low for p in mine], [p.high - p.mean for p in mine]])
        ax.errorbar(sizes, means, yerr=errors, marker="o", capsize=3, label=strategy)
    ax.set_xscale("log")
    ax.set_xlabel("training examples")
    ax.set_ylabel(f"test {result.metric}")
    ax.set_title(
        f"{result.task}: frozen vs fine-tuned ({Path(result.model).name}); mean and 95% CI over seeds", fontsize=9
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def cka_plot(result: CompareResult, path: Path) -> Path | None:
    rows = drift_summary(result)
    if not rows:
        return None
    plt = pyplot()
    largest = max(r["size"] for r in rows)
    fig, ax = plt.subplots(figsize=(6.0, 3.8))
    for row in (r for r in rows if r["size"] == largest):
        ax.plot(range(len(row["cka"])), row["cka"], marker="o", label=row["strategy"])
    ax.set_xlabel("layer")
    ax.set_ylabel("linear CKA, before vs after")
    ax.set_title(f"representation drift after fine-tuning on {largest} examples", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, path)


def table_rows(result: CompareResult) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the learning-curve table: one row per strategy, one column per size."""
    points = curve(result)
    sizes = sorted({p.size for p in points})
    header = ["strategy", *(f"n={s}" for s in sizes), "mean seconds per run"]
    rows = []
    for strategy in dict.fromkeys(p.strategy for p in points):
        cells = []
        for size in sizes:
            p = next((p for p in points if p.strategy == strategy and p.size == size), None)
            cells.append("" if p is None else f"{100 * p.mean:.1f} [{100 * p.low:.1f}, {100 * p.high:.1f}]")
        seconds = np.mean([p.seconds for p in points if p.strategy == strategy])
        rows.append([strategy, *cells, f"{seconds:.1f}"])
    return header, rows


def markdown_table(result: CompareResult) -> list[str]:
    return table(*table_rows(result))


def markdown(result: CompareResult, images: dict[str, str]) -> str:
    lines = [
        f"# bertlens compare: {result.task}",
        "",
        f"Model `{result.model}`, recipe pooler `{result.recipe.pooler}`, layers {list(result.recipe.layers)} "
        f"({result.recipe.mixer}); seeds {list(result.config.seeds)}; test {result.metric} in % on "
        f"{result.n_test} examples, mean over seeds with a 95% t-interval. bertlens {__version__}.",
        "",
        f"**{payoff(result)}.**",
        "",
    ]
    lines += markdown_table(result)
    lines += ["", f"![learning curves]({images['curves']})", ""]
    drift = drift_summary(result)
    if drift:
        lines += [
            "## Drift",
            "",
            "Linear CKA per layer between the encoder before and after fine-tuning (1 = unchanged)"
            + (f"; and a linear probe on `{result.drift_task}` before -> after" if result.drift_task else "")
            + ".",
            "",
            "| strategy | n | CKA by layer | second-task probe |",
            "|---|---|---|---|",
        ]
        for row in drift:
            probe = (
                f"{100 * row['probe_before']:.1f} -> {100 * row['probe_after']:.1f}" if "probe_before" in row else ""
            )
            lines.append(
                f"| {row['strategy']} | {row['size']} | {' '.join(f'{c:.2f}' for c in row['cka'])} | {probe} |"
            )
        if images.get("cka"):
            lines += ["", f"![CKA]({images['cka']})"]
    if result.notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in result.notes]
    return "\n".join(lines) + "\n"


def write_outputs(result: CompareResult, out: Path) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    images = {"curves": learning_curve_plot(result, out / "learning_curves.png").name}
    cka = cka_plot(result, out / "cka.png")
    if cka:
        images["cka"] = cka.name
    write_json(out / "results.json", to_json(result))
    write_report(out, markdown(result, images))
    return {"results": out / "results.json", "report": out / "report.md", "curves": out / "learning_curves.png"}
