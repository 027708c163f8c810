"""Outputs of `bertlens domain`: results.json and report.md, from the same result."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from bertlens.experiments.domain import FERTILITY_RATIO, GAP_NATS, UNK_RATE, DomainResult
from bertlens.io.atomic import write_json
from bertlens.reports.common import provenance, table
from bertlens.reports.html import write_report


def fit_rows(result: DomainResult) -> tuple[list[str], list[list[str]]]:
    header = ["measure", "your text", "reference"]
    u, r = result.user, result.ref
    rows = [
        ["words", f"{u.words:,}", f"{r.words:,}"],
        ["word pieces per word", f"{u.fertility:.3f}", f"{r.fertility:.3f}"],
        ["words split into 2+ pieces", f"{100 * u.split_share:.1f}%", f"{100 * r.split_share:.1f}%"],
        ["unknown-token rate", f"{100 * u.unk_rate:.2f}%", f"{100 * r.unk_rate:.2f}%"],
    ]
    if result.user_loss is not None:
        rows.append(
            [
                "masked-LM loss per text, nats [95% CI]",
                f"{result.user_loss.mean:.3f} [{result.user_loss.low:.3f}, {result.user_loss.high:.3f}]",
                f"{result.ref_loss.mean:.3f} [{result.ref_loss.low:.3f}, {result.ref_loss.high:.3f}]",
            ]
        )
    return header, rows


def verdict(result: DomainResult, texts_hint: str) -> str:
    if not result.adapt:
        return (
            "no adaptation advised: your text is not measurably farther from the model than the reference "
            f"(thresholds: loss gap >= {GAP_NATS} nats with its interval above 0, pieces per word >= "
            f"{FERTILITY_RATIO}x, unknown tokens >= {100 * UNK_RATE:.0f}%)"
        )
    return (
        "adaptation advised: " + "; ".join(result.reasons) + ". Continue pre-training on your text (DAPT): "
        f"`bertlens pretrain --from {result.model} --texts {texts_hint} --out models/dapt`, then compare with "
        "`bertlens sweep --model models/dapt`"
    )


def write_outputs(result: DomainResult, out: Path, texts_hint: str) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    write_json(
        out / "results.json",
        {"command": "domain", **provenance(), **asdict(result), "verdict": verdict(result, texts_hint)},
    )
    header, rows = fit_rows(result)
    lines = [
        f"# bertlens domain: {result.model}",
        "",
        f"Reference corpus: {result.reference}.",
        "",
        f"**Verdict:** {verdict(result, texts_hint)}",
        "",
    ] + table(header, rows)
    if result.gap is not None:
        g = result.gap
        lines += ["", f"Loss gap (your text - reference): {g[0]:.3f} nats [{g[1]:.3f}, {g[2]:.3f}] (bootstrap, 95%)."]
    if result.user.fragmented:
        lines += ["", "## Frequent words the vocabulary lacks (3+ word pieces)", ""]
        lines += table(["word", "count", "pieces"], [[w, str(c), str(p)] for w, c, p in result.user.fragmented])
    lines += ["", "## Notes", ""] + [f"- {n}" for n in result.notes] if result.notes else []
    write_report(out, "\n".join(lines) + "\n")
    return {"report": out / "report.md", "results": out / "results.json"}
