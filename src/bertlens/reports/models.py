"""The report of a sweep across several models: the leaderboard across models with the tie set of the best, each
model's own and best reading with its measured price, the choice and the runner-up it passed over, and the
quality-against-speed picture (one point per model's best reading and per model's own reading, 95% intervals as
bars, the Pareto front of the best readings, speed on a log axis). Each model's own report, heatmaps and recipe stand
under `models/<name>/`, written as its single-model sweep writes them."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from bertlens.experiments.sweep.across import CrossModelResult
from bertlens.io.atomic import write_json
from bertlens.probing.candidates import POSTPROCESS_FILE
from bertlens.reports.common import provenance, table
from bertlens.reports.html import write_report
from bertlens.reports.plots import pyplot, save_figure
from bertlens.reports.sweep import result_rows, write_outputs

PICTURE = "quality-speed.png"
TOP = 15  # leaderboard rows shown in the report (results.json holds every row)


def model_folder(model: str, taken: set[str]) -> str:
    """A folder name for a model: its last path part, made safe, numbered when two models share it."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(str(model)).name or str(model)).strip("-") or "model"
    name, k = base, 2
    while name in taken:
        name, k = f"{base}-{k}", k + 1
    taken.add(name)
    return name


def folders(result: CrossModelResult) -> list[str]:
    taken: set[str] = set()
    return [model_folder(r.model, taken) for r in result.results]


def _score(result: CrossModelResult, model: int, candidate: str) -> tuple[float, float, float]:
    row = result.names.index((result.results[model].model, candidate))
    board = result.board
    return float(board.value[row]), float(board.low[row]), float(board.high[row])


def model_rows(result: CrossModelResult) -> list[dict]:
    """Per model: its own reading and its best reading (its pick) with their scores, and its price."""
    rows = []
    for m, (pick, price) in enumerate(zip(result.picks, result.prices, strict=True)):
        own = pick.own_reading if (result.results[m].model, pick.own_reading) in result.names else None
        best = _score(result, m, pick.candidate)
        mine = _score(result, m, own) if own else (float("nan"),) * 3
        rows.append({
            "model": pick.model, "own_reading": own, "own_value": mine[0], "own_ci": [mine[1], mine[2]],
            "best_reading": pick.candidate, "best_value": best[0], "best_ci": [best[1], best[2]],
            "validation": pick.validation, "tied_with_best": result.choice.tied[m],
            "meets_budget": result.choice.eligible[m], "chosen": m == result.choice.chosen, **price.as_dict(),
        })  # fmt: skip
    return rows


def cross_rows(result: CrossModelResult) -> list[dict]:
    """Every model's results.json rows, each naming its model; the rows of the main protocol's metric (what the
    leaderboard across models ranks) also carry whether the row is tied with the best across models."""
    rows = []
    tied = {name: bool(t) for name, t in zip(result.names, result.board.tied_with_best, strict=True)}
    for sweep in result.results:
        main = sweep.main
        for row in result_rows(sweep):
            ranked = row["protocol"] == main.protocol and row["metric"] == main.metric
            across = tied.get((sweep.model, row["candidate"])) if ranked else None
            rows.append({"model": sweep.model, **row, "tied_with_best_across_models": across})
    return rows


def leaderboard_lines(result: CrossModelResult) -> list[str]:
    board = result.board
    order = sorted(range(len(result.names)), key=lambda i: -np.nan_to_num(board.value[i], nan=-np.inf))
    rows = [
        (str(k + 1), result.names[i][0], result.names[i][1],
         f"{board.value[i]:.4f} [{board.low[i]:.4f}, {board.high[i]:.4f}]", "tied with best" if board.tied_with_best[i]
         else "")
        for k, i in enumerate(order[:TOP])
    ]  # fmt: skip
    return table(("#", "model", "reading", f"{result.metric} [95% CI]", ""), rows)


def price_lines(result: CrossModelResult) -> list[str]:
    rows = []
    for row in model_rows(result):
        own = f"{row['own_reading']}: {row['own_value']:.4f}" if row["own_reading"] else "-"
        rows.append((
            row["model"], own, f"{row['best_reading']}: {row['best_value']:.4f} [{row['best_ci'][0]:.4f}, "
            f"{row['best_ci'][1]:.4f}]", f"{row['texts_per_s']:,.0f} ({row['precision']})",
            f"{row['ms_one_text']:.1f}", str(row["dim"]), f"{row['bytes_per_vector']:,}", f"{row['disk_mb']:,.0f}",
            ("chosen" if row["chosen"] else "tied" if row["tied_with_best"] else "") + (
                "" if row["meets_budget"] else " (over budget)"),
        ))  # fmt: skip
    header = ("model", "own reading", "best reading [95% CI]", "texts/s", "ms, one text", "dim", "bytes/vector",
              "MB on disk", "")  # fmt: skip
    return table(header, rows)


def markdown(result: CrossModelResult, picture: str, folder_names: list[str]) -> str:
    chosen = result.picks[result.choice.chosen]
    first = result.results[0]
    lines = [
        f"# Sweep across {len(result.results)} models: {first.task}",
        "",
        f"**Use {chosen.model} {chosen.candidate}** ({chosen.price.texts_per_s:,.0f} texts/s, "
        f"{chosen.price.ms_one_text:.1f} ms for one text, {chosen.price.dim} dimensions).",
        "",
        f"Rule: {result.choice.rule}.",
    ]
    if result.runner_up:
        lines += ["", f"Passed over: {result.runner_up}."]
    lines += ["", "## Models: each one's own and best reading, and its price", "",
              f"Prices measured on {result.prices[0].texts} of your texts on {result.prices[0].machine}.", "",
              *price_lines(result), "", f"![quality against speed]({picture})", "",
              f"## Leaderboard across models ({first.main.protocol}, {first.main.split}, paired 95% intervals)", "",
              *leaderboard_lines(result), "", "## Each model's sweep", ""]  # fmt: skip
    lines += [f"- {r.model}: [report](models/{f}/report.md), recommended {r.recommended.name}"
              for r, f in zip(result.results, folder_names, strict=True)]  # fmt: skip
    notes = [*result.notes, *(n for r in result.results for n in r.notes if n not in result.notes)]
    if notes:
        lines += ["", "## Notes", "", *(f"- {n}" for n in dict.fromkeys(notes))]
    return "\n".join(lines) + "\n"


def picture_figure(result: CrossModelResult):
    """Score against texts/s (log axis): each model's best reading (filled) and own reading (hollow), 95% bars, the
    Pareto front of the best readings."""
    plt = pyplot()
    figure, ax = plt.subplots(figsize=(7, 4.5))
    points = []
    for row in model_rows(result):
        speed = row["texts_per_s"]
        low, high = row["best_ci"]
        drawn = ax.errorbar(speed, row["best_value"], yerr=[[row["best_value"] - low], [high - row["best_value"]]],
                            fmt="o", capsize=3, label=f"{row['model']} {row['best_reading']}")  # fmt: skip
        colour = drawn.lines[0].get_color()
        points.append((speed, row["best_value"]))
        if row["own_reading"] and row["own_reading"] != row["best_reading"]:
            low, high = row["own_ci"]
            ax.errorbar(speed, row["own_value"], yerr=[[row["own_value"] - low], [high - row["own_value"]]], fmt="o",
                        mfc="none", color=colour, capsize=3, label=f"{row['model']} {row['own_reading']} (own)")  # fmt: skip
    front = pareto_front(points)
    if len(front) > 1:
        ax.plot(*zip(*front, strict=True), "k--", linewidth=1, label="Pareto front")
    ax.set_xscale("log")
    ax.set_xlabel(f"texts/s ({result.prices[0].machine})")
    ax.set_ylabel(result.metric)
    ax.set_title(f"{result.results[0].task}: quality against speed")
    ax.legend(fontsize=7, loc="best")
    figure.tight_layout()
    return figure


def pareto_front(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points no other point beats on both speed and score, by speed."""
    front = [p for p in points if not any(q[0] >= p[0] and q[1] >= p[1] and q != p for q in points)]
    return sorted(set(front))


def to_json(result: CrossModelResult) -> dict:
    chosen = result.picks[result.choice.chosen]
    return {
        **provenance(),
        "task": result.results[0].task,
        "metric": result.metric,
        "models": [{k: _num(v) if isinstance(v, float) else v for k, v in row.items()} for row in model_rows(result)],
        "choice": {
            "model": chosen.model,
            "reading": chosen.candidate,
            "rule": result.choice.rule,
            "passed_over": result.runner_up,
        },  # fmt: skip
        "leaderboard": [
            {
                "model": m,
                "candidate": c,
                "value": _num(v),
                "ci_low": _num(lo),
                "ci_high": _num(hi),
                "tied_with_best": bool(t),
            }
            for (m, c), v, lo, hi, t in zip(
                result.names,
                result.board.value,
                result.board.low,
                result.board.high,
                result.board.tied_with_best,
                strict=True,
            )
        ],  # fmt: skip
        "rows": cross_rows(result),
        "notes": list(result.notes),
    }


def _num(value) -> float | None:
    """A JSON number, or null for an undefined score (NaN is not JSON)."""
    value = float(value)
    return value if np.isfinite(value) else None


def write_models_outputs(result: CrossModelResult, out: Path) -> dict[str, Path]:
    """Each model's sweep under models/<name>/, then the report across models, results.json and the chosen recipe
    (with its post-processor beside it, as the recipe names it) under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    names = folders(result)
    for sweep, name in zip(result.results, names, strict=True):
        write_outputs(sweep, out / "models" / name)
    chosen = result.chosen
    if chosen.postprocessor is not None:
        chosen.postprocessor.save(out / POSTPROCESS_FILE)
    chosen.recipe.save(out / "recipe.json")
    write_json(out / "results.json", to_json(result))
    save_figure(picture_figure(result), out / PICTURE)
    return {"results": out / "results.json", "recipe": out / "recipe.json", **write_report(
        out, markdown(result, PICTURE, names))}  # fmt: skip
