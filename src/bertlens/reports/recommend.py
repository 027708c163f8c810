"""Outputs of `bertlens recommend`: the decisions first (report.md + report.html), the evidence behind each,
results.json, and recipe.json ready for `embed` and `serve`."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from bertlens.io.atomic import write_json
from bertlens.reports.common import provenance, table
from bertlens.reports.html import write_report
from bertlens.workflows.recommend import Recommendation


def markdown(result: Recommendation) -> str:
    rows = [[d.step, d.decision, d.confidence, f"{d.seconds:.0f}"] for d in result.decisions]
    measured = sum(d.seconds for d in result.decisions)
    resumed = (
        "" if measured <= result.seconds + 1 else f" (this run took {result.seconds:.0f} s: it reused finished steps)"
    )
    lines = [
        f"# bertlens recommend: {result.task}",
        "",
        f"Model: `{result.model}`. Measured in {measured:.0f} s{resumed}. The recipe to use is `recipe.json` next to "
        "this report.",
        "",
        "## Decisions",
        "",
        *table(["step", "decision", "how sure", "seconds"], rows),
        "",
        "## Evidence",
    ]
    for d in result.decisions:
        lines += ["", f"### {d.step}: {d.decision}", "", f"- Evidence: {d.evidence}", f"- Rule: {d.rule}"]
        lines += [f"- How sure: {d.confidence}"] + [f"- Command: `{c}`" for c in d.commands]
    lines += [""] + [f"- {n}" for n in result.notes]
    return "\n".join(lines) + "\n"


def write_outputs(result: Recommendation, out: Path) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    result.recipe.save(out / "recipe.json")
    write_json(
        out / "results.json",
        {
            "command": "recommend",
            **provenance(),
            "task": result.task,
            "model": result.model,
            "seconds": round(result.seconds, 1),
            "decisions": [asdict(d) for d in result.decisions],
            "recipe": result.recipe.to_dict(),
        },
    )
    return {"results": out / "results.json", "recipe": out / "recipe.json", **write_report(out, markdown(result))}
