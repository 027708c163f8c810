"""Outputs of `bertlens longdoc`: results.json, a table with intervals and speed, report.md."""

from __future__ import annotations

from pathlib import Path

from bertlens.experiments.longdoc import LongTextResult
from bertlens.io.atomic import write_json
from bertlens.reports.common import provenance
from bertlens.reports.html import write_report


def rows(result: LongTextResult) -> list[dict]:
    t = result.intervals
    baseline = result.encode_seconds.get("head")
    out = []
    for i, name in enumerate(result.strategies):
        seconds = result.encode_seconds[result.pass_of[name]]
        out.append(
            {
                "strategy": name,
                "accuracy": float(t.value[i]),
                "ci_low": float(t.low[i]),
                "ci_high": float(t.high[i]),
                "tied_with_best": bool(t.tied_with_best[i]),
                "encoding_pass": result.pass_of[name],
                "encode_seconds": round(seconds, 2),
                "docs_per_second": round(result.documents / seconds, 2),
                "speed_vs_head": round(baseline / seconds, 3) if baseline else None,
            }
        )
    return out


def markdown_table(result: LongTextResult) -> list[str]:
    lines = [
        "| strategy | accuracy [95% CI] | tied with best | encoding pass | docs/s | speed vs head |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows(result):
        speed = f"{r['speed_vs_head']:.2f}x" if r["speed_vs_head"] is not None else ""
        lines.append(
            f"| {r['strategy']} | {100 * r['accuracy']:.1f} [{100 * r['ci_low']:.1f}, {100 * r['ci_high']:.1f}] | "
            f"{'yes' if r['tied_with_best'] else 'no'} | {r['encoding_pass']} | {r['docs_per_second']:.1f} | {speed} |"
        )
    return lines


def write_outputs(result: LongTextResult, out: Path) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    write_json(
        out / "results.json",
        {
            "command": "longdoc",
            "task": result.task,
            "model": result.model,
            "documents": result.documents,
            "folds": result.folds,
            "max_length": result.max_length,
            "windows_per_document": round(result.pieces_per_document, 2),
            **provenance(),
            "rows": rows(result),
        },
    )
    lines = [
        f"# bertlens longdoc: {result.task}",
        "",
        f"Model `{result.model}`, {result.documents} documents, pieces of up to {result.max_length} tokens "
        f"(windows: {result.pieces_per_document:.1f} per document), {result.folds}-fold CV, out-of-fold accuracy "
        "with 95% paired-bootstrap intervals. Speed: documents per second of the strategy's encoding pass "
        "(windows aggregates and chunk classifiers share one pass).",
        "",
    ] + markdown_table(result)
    write_report(out, "\n".join(lines) + "\n")
    return {"results": out / "results.json", "report": out / "report.md"}
