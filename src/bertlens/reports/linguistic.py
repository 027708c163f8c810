"""Outputs of the linguistic suite: results.json, a layer x task heatmap, per-task curves, report.md."""

from __future__ import annotations

import math
from dataclasses import asdict
from pathlib import Path

import numpy as np

from bertlens.experiments.linguistic import SuiteResult, TaskOutcome
from bertlens.io.atomic import write_json
from bertlens.reports.common import provenance
from bertlens.reports.html import write_report
from bertlens.reports.plots import annotated_grid, pyplot, save_figure
from bertlens.version import __version__


def summary_row(outcome: TaskOutcome) -> dict:
    """The per-task figures the report leads with."""
    r = outcome.result
    best = r.best_layer
    row = {
        "task": outcome.name,
        "level": outcome.level,
        "classes": outcome.classes,
        "n_test": r.n_test,
        "layer0": r.accuracy[0],
        "best_layer": best,
        "best": r.accuracy[best],
        "best_low": r.low[best],
        "best_high": r.high[best],
        "mix": r.mix_accuracy,
        "mix_low": r.mix_low,
        "mix_high": r.mix_high,
        "centre_of_gravity": r.centre_of_gravity,
    }
    if r.selectivity is not None:
        row |= {
            "control_at_best": r.control_accuracy[best],
            "selectivity_at_best": r.selectivity[best],
            "most_selective_layer": int(np.argmax(r.selectivity)),
            "max_selectivity": max(r.selectivity),
        }
    return row


def to_json(result: SuiteResult) -> dict:
    return {
        "suite": "linguistic",
        "model": result.model,
        "model_fingerprint": result.fingerprint,
        "num_layers": result.num_layers,
        **provenance(),
        "config": asdict(result.config),
        "timings": {k: round(v, 3) for k, v in result.timings.items()},
        "notes": list(result.notes),
        "summary": [summary_row(o) for o in result.outcomes.values()],
        "tasks": {name: o.to_dict() for name, o in result.outcomes.items()},
    }


def heatmap(result: SuiteResult, path: Path) -> Path:
    return save_figure(heatmap_figure(result), path)


def heatmap_figure(result: SuiteResult):
    """Rows: layers; columns: tasks; cells: test accuracy."""
    plt = pyplot()
    names = list(result.outcomes)
    grid = np.array([result.outcomes[n].result.accuracy for n in names]).T  # [L+1, tasks]
    fig, ax = plt.subplots(figsize=(2.0 + 0.95 * len(names), 1.4 + 0.42 * grid.shape[0]))
    image = annotated_grid(ax, grid, "{:.2f}")
    ax.set_xticks(range(len(names)), names, rotation=35, ha="right", fontsize=8)
    ax.set_yticks(range(grid.shape[0]), [f"layer {k}" for k in range(grid.shape[0])])
    ax.set_title(f"linguistic probes, test accuracy: {result.model}", fontsize=9)
    fig.colorbar(image, ax=ax, label="accuracy")
    fig.tight_layout()
    return fig


def curves(result: SuiteResult, path: Path) -> Path:
    """One panel per task: accuracy by layer with its 95% interval, the control task (token tasks)
    and the ScalarMix's centre of gravity."""
    plt = pyplot()
    names = list(result.outcomes)
    cols = min(4, len(names))
    rows = math.ceil(len(names) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.3 * cols, 2.6 * rows), squeeze=False)
    for ax, name in zip(axes.flat, names):
        r = result.outcomes[name].result
        layers = np.arange(len(r.accuracy))
        ax.plot(layers, r.accuracy, marker="o", label="probe")
        ax.fill_between(layers, r.low, r.high, alpha=0.25)
        if r.control_accuracy is not None:
            ax.plot(layers, r.control_accuracy, linestyle="--", marker=".", label="control task")
        ax.axvline(r.centre_of_gravity, color="grey", linestyle=":", label="ScalarMix centre")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("layer", fontsize=8)
        ax.set_xticks(layers)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(names) :]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(f"accuracy by layer (95% bootstrap CI): {result.model}", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, path)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def markdown_table(result: SuiteResult) -> list[str]:
    lines = [
        "| task | level | classes | n test | layer 0 | best layer (dev) | its test acc [95% CI] | ScalarMix acc | "
        "centre of gravity | control acc | selectivity |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for o in result.outcomes.values():
        s = summary_row(o)
        control = _pct(s["control_at_best"]) if "control_at_best" in s else "n/a"
        selectivity = _pct(s["selectivity_at_best"]) if "selectivity_at_best" in s else "n/a"
        lines.append(
            f"| {o.name} | {o.level} | {o.classes} | {s['n_test']} | {_pct(s['layer0'])} | {s['best_layer']} | "
            f"{_pct(s['best'])} [{_pct(s['best_low'])}, {_pct(s['best_high'])}] | {_pct(s['mix'])} | "
            f"{s['centre_of_gravity']:.2f} | {control} | {selectivity} |"
        )
    return lines


def markdown(result: SuiteResult, images: dict[str, str]) -> str:
    c = result.config
    lines = [
        f"# bertlens probe --suite linguistic: {result.model}",
        "",
        f"Model `{result.model}` (fingerprint `{result.fingerprint}`, {result.num_layers} layers), seed {c.seed}, "
        f"bertlens {__version__}. Word vectors: {c.subword} of subwords; sentence vectors: {c.sentence_pooler} pooling. "
        f"Accuracies in %, test split; intervals from {c.resamples} bootstrap resamples (token tasks resample "
        "sentences). The best layer is chosen on dev; control accuracy and selectivity (Hewitt & Liang 2019) are "
        "at that layer.",
        "",
    ]
    lines += markdown_table(result)
    lines += [
        "",
        f"![layer x task heatmap]({images['heatmap']})",
        "",
        f"![curves]({images['curves']})",
        "",
        "## Per layer",
        "",
        "| task | " + " | ".join(f"L{k}" for k in range(result.num_layers + 1)) + " |",
        "|---|" + "---|" * (result.num_layers + 1),
    ]
    for o in result.outcomes.values():
        lines.append(f"| {o.name} | " + " | ".join(_pct(a) for a in o.result.accuracy) + " |")
        if o.result.selectivity is not None:
            lines.append(f"| {o.name} selectivity | " + " | ".join(_pct(a) for a in o.result.selectivity) + " |")
    lines += ["", "## Timings", ""] + [f"- {k}: {v:.1f}" for k, v in result.timings.items()]
    if result.notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in result.notes]
    return "\n".join(lines) + "\n"


def write_outputs(result: SuiteResult, out: Path) -> dict[str, Path]:
    """results.json, heatmap.png, curves.png and report.md under `out`, each written atomically."""
    out.mkdir(parents=True, exist_ok=True)
    images = {"heatmap": heatmap(result, out / "heatmap.png").name, "curves": curves(result, out / "curves.png").name}
    write_json(out / "results.json", to_json(result))
    write_report(out, markdown(result, images))
    return {
        "results": out / "results.json",
        "report": out / "report.md",
        "heatmap": out / "heatmap.png",
        "curves": out / "curves.png",
    }
