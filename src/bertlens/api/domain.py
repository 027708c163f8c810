"""`domain` as one definition: its options, their checks, the run, and the result a notebook reads.

    import bertlens
    gap = bertlens.domain(texts="clinical_notes.txt")     # or texts=[...]; reference: UD EWT web English
    gap.verdict, gap.to_pandas(), gap.save("out/domain")

`bertlens domain --texts FILE` parses its flags into the same `DomainOptions` and calls the same
`run_domain_command`: the tokenizer's fit and the model's own masked-LM surprise on your text against a reference
corpus, with intervals, and whether to continue pre-training (`bertlens pretrain`).
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bertlens.api.options import at_least, finite, one_of, python_call
from bertlens.api.recipe_options import EncoderOptions
from bertlens.api.results import RowsResult, save_options
from bertlens.errors import OptionError, literal
from bertlens.io.run_context import check_seed
from bertlens.progress import Progress, silent

if TYPE_CHECKING:
    from bertlens.experiments.domain import DomainResult


@dataclass(frozen=True, kw_only=True)
class DomainOptions(EncoderOptions):
    """Every option of `bertlens domain`, by the name of its long flag; the model: `EncoderOptions`."""

    model: str = "default"
    """'default' (all-MiniLM-L6-v2), a local model directory or a hub id"""
    texts: Any = None
    """your texts: .txt (one a line), .csv/.tsv/.parquet or .jsonl (with --column); from Python also a list of
    strings"""
    column: str | None = None
    """for --texts CSV/TSV/Parquet/JSONL: the text column (header name or 0-based index) or field"""
    reference: Path | None = None
    """a reference corpus file (default: UD EWT training sentences, general English web text, from $BERTLENS_DATA)"""
    data_dir: str | None = None
    """where the shared data lives: catalog tasks, UD EWT (default $BERTLENS_DATA or ../shared/data)"""
    samples: int = 500
    """texts per corpus for the masked-LM loss (seeded)"""
    seed: int = 0
    """seed for sampling, splits, initialisation and data order"""
    out: Path | None = None
    """output directory (the command line's default: out/domain; from Python, None writes nothing until save())"""
    quiet: bool = False
    """no progress output"""

    def check(self) -> DomainOptions:
        """Every check that needs no model, in the options' own names."""
        finite(self)
        one_of(self)
        if self.texts is None:
            raise OptionError("{texts} is required: your texts", "texts")
        if not isinstance(self.texts, str | Path) and (
            not isinstance(self.texts, Sequence) or not all(isinstance(t, str) for t in self.texts)
        ):
            raise OptionError("{texts} must be a file path or a list of strings", "texts")
        at_least(self, "samples", 10, "a loss interval needs ten texts or more")
        at_least(self, "max_length", 2, "a model reads at least 2 tokens")
        check_seed(self.seed)
        paths = {n: Path(getattr(self, n)) for n in ("reference", "out") if getattr(self, n) is not None}
        return dataclasses.replace(self, **paths)

    def texts_hint(self) -> str:
        """How a printed command names these texts (a list from Python: a placeholder to save them to)."""
        return str(self.texts) if isinstance(self.texts, str | Path) else "YOUR_TEXTS.txt"


@dataclass(frozen=True)
class DomainRun(RowsResult):
    """How far your text is from the model's: word pieces per word, unknown tokens, masked-LM loss with intervals,
    and the verdict (adapt or not, with the command that adapts)."""

    result: DomainResult
    options: DomainOptions

    @property
    def verdict(self) -> str:
        from bertlens.reports.domain import verdict

        return verdict(self.result, self.options.texts_hint())

    @property
    def adapt(self) -> bool:
        return self.result.adapt

    def rows(self) -> list[dict]:
        from bertlens.reports.domain import fit_rows

        header, rows = fit_rows(self.result)
        return [dict(zip(header, row, strict=True)) for row in rows]

    def save(self, out: str | Path) -> dict[str, Path]:
        """results.json, report.md/.html and options.json under `out`."""
        from bertlens.reports.domain import write_outputs

        out = Path(out)
        return {
            **write_outputs(self.result, out, self.options.texts_hint()),
            "options": save_options(out, self.options),
        }

    def __repr__(self) -> str:
        return f"DomainRun({self.result.model!r}: {'adapt' if self.adapt else 'no adaptation advised'})"

    def _repr_html_(self) -> str:
        rows = self.rows()
        head = "".join(f"<th>{html.escape(k)}</th>" for k in rows[0])
        body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in r.values()) + "</tr>" for r in rows)
        return (
            f"<div><p>{html.escape(self.verdict)}</p><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
            "</table></div>"
        )


def _texts(options: DomainOptions) -> list[str]:
    from bertlens.api.sources import file_texts
    from bertlens.io.tables import is_blank

    if isinstance(options.texts, str | Path):
        texts, where = file_texts(Path(options.texts), options.column), str(options.texts)
    else:
        texts, where = [t for t in options.texts if not is_blank(t)], "the in-memory texts"
    if len(texts) < 2:
        raise OptionError(f"{{texts}} {literal(where)}: need at least 2 non-empty texts, found {len(texts)}", "texts")
    return texts


def run_domain_command(options: DomainOptions, *, progress: Progress = silent) -> DomainRun:
    """Check the options (before any model loads), read both corpora, and measure the gap."""
    from bertlens.api.sources import file_texts
    from bertlens.encoding.encoder import Encoder
    from bertlens.experiments.domain import default_reference, measure_domain
    from bertlens.tasks.catalog import data_dir

    checked = options.check()
    texts = _texts(checked)
    if checked.reference is not None:
        reference, name = file_texts(checked.reference, None), str(checked.reference)
    else:
        reference, name = default_reference(data_dir(checked.data_dir))
    encoder = Encoder(checked.model, max_length=checked.max_length or 128,
                      trust_remote_code=checked.trust_remote_code, device=checked.device)  # fmt: skip
    result = measure_domain(encoder, texts, reference, name, samples=checked.samples, seed=checked.seed,
                            progress=progress)  # fmt: skip
    outcome = DomainRun(result, checked)
    if checked.out is not None:
        outcome.save(checked.out)
    return outcome


def domain(**options: Any) -> DomainRun:
    """Measure how far your text is from what the model was trained on: the keywords are `bertlens domain`'s long
    flags (see `DomainOptions`); the texts may be given as a list."""
    return python_call(DomainOptions, run_domain_command, options)
