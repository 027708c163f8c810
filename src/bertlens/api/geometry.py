"""`geometry` as one definition: its options, their checks, the run, and the result a notebook reads.

    import bertlens
    shape = bertlens.geometry(task="stsb", max_texts=500)   # or texts=[...] / texts="corpus.txt"
    shape.to_pandas(), shape.plot(), shape.save("out/geometry")

`bertlens geometry --task stsb --max-texts 500` parses its flags into the same `GeometryOptions` and calls the same
`run_geometry_command`: how anisotropic each layer's vectors are (Ethayarajh 2019; Wang & Isola 2020).
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bertlens.api.options import at_least, finite, one_of, python_call
from bertlens.api.recipe_options import EncoderOptions
from bertlens.api.results import RowsResult, save_options
from bertlens.api.sources import TextSourceOptions
from bertlens.errors import OptionError
from bertlens.io.run_context import check_seed
from bertlens.progress import Progress, silent


@dataclass(frozen=True, kw_only=True)
class GeometryOptions(EncoderOptions, TextSourceOptions):
    """Every option of `bertlens geometry`, by the name of its long flag; the texts: `TextSourceOptions`; the model:
    `EncoderOptions`."""

    model: str = "default"
    """'default' (all-MiniLM-L6-v2), a local model directory or a hub id"""
    max_texts: int | None = 2000
    """a seeded sample of at most N texts"""
    poolers: str | Sequence[str] = "cls,mean,max"
    """sentence poolers to diagnose (comma list)"""
    seed: int = 0
    """seed for sampling, splits, initialisation and data order"""
    out: Path | None = None
    """output directory (the command line's default: out/geometry; from Python, None writes nothing until save())"""
    quiet: bool = False
    """no progress output"""

    def check(self) -> GeometryOptions:
        """Every check that needs no model, in the options' own names; the options, normalised."""
        from bertlens.representation.choices import check_pooler

        finite(self)
        one_of(self)
        self.check_texts()
        at_least(self, "max_length", 2, "a model reads at least 2 tokens")
        check_seed(self.seed)
        names = self.poolers.split(",") if isinstance(self.poolers, str) else list(self.poolers)
        poolers = tuple(check_pooler(p.strip()) for p in names if p.strip())
        if not poolers:
            raise OptionError("{poolers} names no pooler", "poolers")
        paths = {n: Path(getattr(self, n)) for n in ("out",) if getattr(self, n) is not None}
        return dataclasses.replace(self, poolers=poolers, **paths)


@dataclass(frozen=True)
class GeometryRun(RowsResult):
    """Per layer x pooler: random-pair cosines, self-similarity, the top principal component's share of variance,
    uniformity; `plot()` draws them by layer, `save(dir)` writes what `bertlens geometry` writes."""

    diagnostics: tuple[dict, ...]
    model: str
    source: str
    texts: int
    options: GeometryOptions

    def rows(self) -> list[dict]:
        return [dict(row) for row in self.diagnostics]

    def plot(self):
        """Six panels by layer, one line per pooler, as a matplotlib Figure."""
        from bertlens.reports.geometry import figure, figure_title

        return figure(self.rows(), figure_title(self.model, self.source, self.texts))

    def save(self, out: str | Path) -> dict[str, Path]:
        """results.json, geometry.png, report.md/.html and options.json under `out`."""
        from bertlens.reports.geometry import write_outputs

        out = Path(out)
        paths = write_outputs(self.rows(), out, model=self.model, source=self.source, texts=self.texts,
                              seed=self.options.seed)  # fmt: skip
        return {**paths, "options": save_options(out, self.options)}

    def __repr__(self) -> str:
        return f"GeometryRun({self.model!r} on {self.source}: {len(self.diagnostics)} layer x pooler rows)"

    def _repr_html_(self) -> str:
        from bertlens.reports.geometry import markdown_table

        rows = [line.strip("|").split("|") for line in markdown_table(self.rows()) if not line.startswith("|---")]
        head = "".join(f"<th>{html.escape(c.strip())}</th>" for c in rows[0])
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c.strip())}</td>" for c in r) + "</tr>" for r in rows[1:])
        return f"<div><p>{html.escape(repr(self))}</p><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def run_geometry_command(options: GeometryOptions, *, progress: Progress = silent) -> GeometryRun:
    """Check the options (before any model loads), read the texts, and measure every layer x pooler."""
    from bertlens.api.sources import load_texts
    from bertlens.encoding.encoder import Encoder
    from bertlens.experiments.geometry import collect, layer_diagnostics, positive_pairs
    from bertlens.representation.choices import attentions_for

    checked = options.check()
    texts, source, task = load_texts(checked, checked.seed)
    encoder = Encoder(
        checked.model,
        max_length=checked.max_length,
        precision=checked.precision or "fp32",
        attentions=attentions_for(checked.poolers),
        trust_remote_code=checked.trust_remote_code,
        device=checked.device,
    )
    collected = collect(encoder, texts, checked.poolers, seed=checked.seed, progress=progress)
    rows = layer_diagnostics(collected, seed=checked.seed, positives=positive_pairs(task, texts))
    outcome = GeometryRun(tuple(rows), encoder.ref.name, source, len(texts), checked)
    if checked.out is not None:
        outcome.save(checked.out)
    return outcome


def geometry(**options: Any) -> GeometryRun:
    """Measure how anisotropic each layer's vectors are on your texts: the keywords are `bertlens geometry`'s long
    flags (see `GeometryOptions`); the texts may be given as a list."""
    return python_call(GeometryOptions, run_geometry_command, options)
