"""Outputs of `bertlens geometry`: results.json, a table per layer x pooler, and per-layer plots."""

from __future__ import annotations

from pathlib import Path

from bertlens.io.atomic import write_json
from bertlens.reports.common import provenance
from bertlens.reports.html import write_report
from bertlens.reports.plots import pyplot, save_figure

PLOTTED = (
    ("sentence_cosine", "random sentence-pair cosine"),
    ("token_cosine", "random token-pair cosine"),
    ("self_similarity_adjusted", "self-similarity - token cosine"),
    ("intra_sentence_adjusted", "intra-sentence sim. - token cosine"),
    ("variance_top1", "variance explained, top PC"),
    ("uniformity", "uniformity (lower = more uniform)"),
)


def plot(rows: list[dict], path: Path, title: str) -> Path:
    return save_figure(figure(rows, title), path)


def figure(rows: list[dict], title: str):
    """Six panels by layer, one line per pooler: cosines, self-similarity, the top PC's variance, uniformity."""
    plt = pyplot()
    fig, axes = plt.subplots(2, 3, figsize=(11, 6))
    poolers = list(dict.fromkeys(r["pooler"] for r in rows))
    for ax, (key, label) in zip(axes.flat, PLOTTED):
        for pooler in poolers:
            mine = [r for r in rows if r["pooler"] == pooler]
            ax.plot([r["layer"] for r in mine], [r[key] for r in mine], marker="o", label=pooler)
            if key.startswith(("token", "self", "intra")):
                break  # per layer, the same for every pooler
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("layer", fontsize=8)
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def figure_title(model: str, source: str, texts: int) -> str:
    return f"geometry of {Path(model).name} on {source} ({texts} texts)"


def markdown_table(rows: list[dict]) -> list[str]:
    has_alignment = "alignment" in rows[0]
    header = (
        "| layer | pooler | sentence cos | token cos | self-sim (adj.) | intra-sent. (adj.) | var. top1 | var. top10 | "
        "rogue dims (share) | uniformity |" + (" alignment |" if has_alignment else "")
    )
    lines = [header, "|" + "---|" * (10 + has_alignment)]
    for r in rows:
        rogue = ", ".join(f"{d} ({share:.0%})" for d, share in r["rogue_dimensions"])
        lines.append(
            f"| {r['layer']} | {r['pooler']} | {r['sentence_cosine']:.3f} | {r['token_cosine']:.3f} | "
            f"{r['self_similarity']:.3f} ({r['self_similarity_adjusted']:.3f}) | "
            f"{r['intra_sentence']:.3f} ({r['intra_sentence_adjusted']:.3f}) | {r['variance_top1']:.3f} | "
            f"{r['variance_top10']:.3f} | {rogue} | {r['uniformity']:.3f} |"
            + (f" {r['alignment']:.3f} |" if has_alignment else "")
        )
    return lines


def write_outputs(rows: list[dict], out: Path, *, model: str, source: str, texts: int, seed: int) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    title = figure_title(model, source, texts)
    image = plot(rows, out / "geometry.png", title)
    write_json(
        out / "results.json",
        {
            "command": "geometry",
            "model": model,
            "source": source,
            "texts": texts,
            "seed": seed,
            **provenance(),
            "rows": rows,
        },
    )
    lines = (
        [
            f"# bertlens geometry: {Path(model).name}",
            "",
            f"Model `{model}`, {texts} texts from {source}, seed {seed}. "
            "Cosines are means over 5,000 random pairs; token pairs come from different texts; adjusted = minus the "
            "random token cosine (Ethayarajh 2019).",
            "",
        ]
        + markdown_table(rows)
        + ["", f"![geometry]({image.name})", ""]
    )
    write_report(out, "\n".join(lines))
    return {"results": out / "results.json", "report": out / "report.md", "plot": image}
