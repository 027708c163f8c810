"""`export` as one definition: its options, their checks, the run, and the result a notebook reads.

    import bertlens
    done = bertlens.export(format="onnx", recipe="out/sweep/recipe.json", out="export/onnx", quantize="int8")
    done.to_pandas()      # parity (and int8 fidelity) against bertlens fp32

`bertlens export --format onnx --recipe R --out DIR` parses its flags into the same `ExportOptions` and calls the
same `run_export_command`. The export is compared with bertlens fp32 first; a failed check writes nothing.
"""

from __future__ import annotations

import csv
import dataclasses
import html
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bertlens.api.options import at_least, finite, one_of, python_call
from bertlens.api.recipe_options import RecipeOptions, recipe_of
from bertlens.api.results import RowsResult
from bertlens.errors import OptionError, literal
from bertlens.progress import Progress, silent

FORMATS = ("onnx", "openvino", "sentence-transformers")
GRAPH_FORMATS = ("onnx", "openvino")  # one graph from token ids to the final vector (openvino: also as OpenVINO IR)


@dataclass(frozen=True, kw_only=True)
class ExportOptions(RecipeOptions):
    """Every option of `bertlens export`, by the name of its long flag; the recipe: `RecipeOptions`."""

    format: Literal["onnx", "openvino", "sentence-transformers"] | None = None
    """onnx (one graph from token ids to the final vector), openvino (the same graph, also as OpenVINO IR, checked
    run by OpenVINO) or sentence-transformers (a directory SentenceTransformer(path) loads)"""
    out: Path | None = None
    """directory to write"""
    texts: Path | None = None
    """texts to check parity on, drawn at random from the file (default: STS-B's training sentences from
    --data-dir): .txt (one a line), .csv/.tsv/.parquet or .jsonl (with --column)"""
    column: str | None = None
    """for --texts CSV/TSV/Parquet/JSONL/Excel: the text column (header name or 0-based index) or field"""
    sheet: str | None = None
    """for --texts and --calibration Excel workbooks (.xlsx, .xlsm): the sheet, by name or 0-based index (default:
    the first)"""
    samples: int | None = None
    """how many texts to check parity on, drawn at random (seed 0) (default: up to 512; onnx and openvino stop
    earlier at 16,384 tokens, so that documents are checked in seconds)"""
    quantize: Literal["int8", "int8-static", "bf16"] | None = None
    """onnx, openvino: int8 gated by fidelity to fp32; int8 is dynamic (activations scaled per batch), int8-static
    calibrates activation ranges on --calibration texts; openvino only: bf16, OpenVINO computing in bf16 where the
    CPU has bf16 instructions, behind the same gate"""
    calibration: Path | None = None
    """int8: texts to choose fp32 modules on and judge the gate on, 512 drawn at random from the file (default: the
    parity texts); a random sample of what you will embed: the gate vouches for texts like them"""
    gate_mean: float = 0.995
    """int8 gate: mean cosine to fp32"""
    gate_min: float = 0.98
    """int8 gate: minimum cosine to fp32"""
    gate_task_drop: float = 0.005
    """int8 gate with --eval-task: largest drop"""
    eval_task: str | None = None
    """int8: also compare the task score (stsb, sst2, trec) with fp32"""
    force: bool = False
    """int8: write it even below the gate (figures recorded)"""
    data_dir: str | None = None
    """where the shared data lives: catalog tasks, UD EWT (default $BERTLENS_DATA or ../shared/data)"""
    quiet: bool = False
    """no progress output"""

    def check(self) -> ExportOptions:
        """Every check that needs no model, in the options' own names."""
        from bertlens.embedding.gate import Gate

        finite(self)
        one_of(self)
        for name, why in (("format", "onnx, openvino or sentence-transformers"), ("out", "the directory to write")):
            if getattr(self, name) is None:
                raise OptionError(f"{{{name}}} is required: {why}", name)
        if self.format not in GRAPH_FORMATS:
            given = [name for name in ("quantize", "calibration", "eval_task") if getattr(self, name) is not None]
            if given:
                names = ", ".join("{" + name + "}" for name in given)
                raise OptionError(f"{names} apply to {{format}} onnx or openvino only", *given, "format")
        if self.quantize == "bf16" and self.format != "openvino":
            raise OptionError("{quantize} bf16 is OpenVINO's inference precision: use it with {format} openvino",
                              "quantize", "format")  # fmt: skip
        at_least(self, "samples", 2, "parity needs two texts or more")
        at_least(self, "max_length", 2, "a model reads at least 2 tokens")
        Gate(self.gate_mean, self.gate_min, self.gate_task_drop)  # the gate's own bounds
        paths = {n: Path(getattr(self, n)) for n in ("out", "texts", "calibration") if getattr(self, n) is not None}
        return dataclasses.replace(self, **paths)


@dataclass(frozen=True)
class ExportRun(RowsResult):
    """An export written and checked: its directory, and how close it came to bertlens fp32 (and int8 to fp32)."""

    out: Path
    record: dict  # export.json (or the sentence-transformers record): what was exported and its figures
    outcome: Any  # experiments/export.py:ExportOutcome for onnx; None for sentence-transformers
    texts: int
    options: ExportOptions

    def rows(self) -> list[dict]:
        """One row per check: the parity of the fp32 export and, for int8, its fidelity on held-out texts."""
        if self.outcome is None:
            parity = self.record["parity"]
            return [{"check": "sentence-transformers vs bertlens fp32", **parity}]
        rows = [{"check": "onnx fp32 vs bertlens fp32", **dataclasses.asdict(self.outcome.parity)}]
        if self.outcome.int8 is not None:
            runtime = "openvino" if self.outcome.openvino is not None else "onnx"
            rows.append({"check": f"{runtime} int8 vs bertlens fp32 (held-out texts)", **dataclasses.asdict(self.outcome.int8),
                         "passed": self.outcome.passed})  # fmt: skip
        if self.outcome.openvino is not None:
            graph = "int8" if self.outcome.int8 is not None else self.record.get("openvino_precision", "fp32")
            rows.append({"check": f"openvino {graph} vs bertlens fp32", **dataclasses.asdict(self.outcome.openvino)})
        return rows

    def __repr__(self) -> str:
        return f"ExportRun({self.options.format} -> {self.out}, checked on {self.texts} texts)"

    def _repr_html_(self) -> str:
        rows = self.rows()
        head = "".join(f"<th>{html.escape(str(k))}</th>" for k in rows[0])
        body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in r.values()) + "</tr>" for r in rows)
        return f"<div><p>{html.escape(repr(self))}</p><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


DEFAULT_SAMPLES = 512  # parity texts unless --samples says
PARITY_TOKENS = 16_384  # ... and, for the graph formats, tokens: 512 sentences, 64 documents at 256 tokens
CALIBRATION_TEXTS = 512  # --calibration: at most this many of the file's texts, drawn at random (each pass of the
# int8 choice runs over half of them: a whole 100k-line file would take hours)


def parity_texts(options: ExportOptions) -> tuple[list[str], str]:
    """The texts an export is checked on: `texts` (distinct, in order), else STS-B's training sentences."""
    from bertlens.api.sources import file_texts
    from bertlens.tasks.catalog import data_dir

    if options.texts is not None:
        texts = list(dict.fromkeys(file_texts(options.texts, options.column, options.sheet)))
        source = str(options.texts)
    else:
        try:
            path = data_dir(options.data_dir) / "stsb" / "train.csv"
        except OptionError as missing:  # a pip install has no data directory: the user's own texts are the answer
            raise OptionError(f"no parity texts: {missing.template}, or give {{texts}} (texts like the ones you embed)",
                              *missing.options, "texts", values=missing.values) from None  # fmt: skip
        if not path.is_file():
            raise OptionError(
                f"no parity texts: {literal(path)} is missing; give {{texts}} (texts like the ones you embed)", "texts"
            )
        with open(path, newline="", encoding="utf-8") as handle:
            texts = list(dict.fromkeys(text for row in csv.reader(handle) for text in row[:2]))
        source = f"STS-B training sentences ({path})"
    if len(texts) < 2:
        raise OptionError(f"{literal(source)}: need at least 2 distinct non-empty texts to check the export", "texts")
    chosen = drawn(texts, options.samples or DEFAULT_SAMPLES)
    if len(chosen) == len(texts):
        return chosen, f"{source}: all {len(texts)} distinct texts, in a seeded random order"
    return chosen, f"{source}: {len(chosen)} of {len(texts)} distinct texts, drawn at random (seed 0)"


def drawn(texts: list[str], count: int) -> list[str]:
    """`count` of `texts` in a seeded random order (seed 0). Not the file's first ones: a file sorted by genre, label
    or date (STS-B's training file runs from captions to news headlines) would check, calibrate and judge an export
    on one corner of the texts it is meant for. The order is random too, so a token budget that keeps the first
    texts keeps a random sample."""
    import numpy as np

    return [texts[i] for i in np.random.default_rng(0).permutation(len(texts))[:count]]


def _calibration(options: ExportOptions) -> list[str] | None:
    from bertlens.api.sources import file_texts

    if options.calibration is None:
        return None
    calibration = list(dict.fromkeys(file_texts(options.calibration, options.column, options.sheet)))
    if len(calibration) < 4:
        raise OptionError(
            f"{{calibration}} {literal(options.calibration)}: {len(calibration)} distinct texts; int8 calibration "
            "needs at least 4 (half choose what stays fp32, half judge the gate)",
            "calibration",
        )
    return drawn(calibration, CALIBRATION_TEXTS)


def run_export_command(options: ExportOptions, *, progress: Progress = silent) -> ExportRun:
    """Check the options, export the recipe, check the export against bertlens fp32 (int8 behind its gate), and
    publish the directory only when the checks pass (or `force`)."""
    from bertlens.embedding.gate import Gate

    checked = options.check()
    gate = Gate(checked.gate_mean, checked.gate_min, checked.gate_task_drop)
    calibration = _calibration(checked)
    recipe = recipe_of(checked)
    if recipe.multi_vector and checked.format != "sentence-transformers":
        raise OptionError(
            "the ONNX export ({format} onnx) pools a recipe into one vector per text; a multi-vector recipe (pooler "
            "'tokens') exports with {format} sentence-transformers, as a MultiVectorEncoder",
            "format",
        )
    texts, source = parity_texts(checked)
    if checked.format == "sentence-transformers":
        from bertlens.experiments.export_st import run_export_sentence_transformers

        record = run_export_sentence_transformers(recipe, checked.out, texts, source)
        return ExportRun(checked.out, record, None, len(texts), checked)
    from bertlens.embedding.openvino_export import OpenVinoOptions
    from bertlens.experiments.export import Int8Options, run_export_onnx  # the onnx extra: checked before any work
    from bertlens.tasks.catalog_fetch import load_catalog

    eval_task = load_catalog(checked.eval_task, checked.data_dir) if checked.eval_task else None
    if eval_task is not None and eval_task.uses_cv:
        raise OptionError(f"{{eval_task}} '{literal(checked.eval_task)}' has no test split; use stsb, sst2 or trec",
                          "eval_task")  # fmt: skip
    int8 = None
    if checked.quantize in ("int8", "int8-static"):
        int8 = Int8Options(checked.quantize == "int8-static", calibration, gate, checked.force, eval_task)
    openvino = None
    if checked.format == "openvino":
        from bertlens.extras import require

        require("openvino", "the OpenVINO export")
        if int8 is not None:  # before any work, not after the fp32 export
            require("openvino-int8", f"int8 of the OpenVINO export (quantize '{checked.quantize}')")
        openvino = OpenVinoOptions("bf16" if checked.quantize == "bf16" else "fp32", gate, checked.force)
    parity_tokens = None if checked.samples else PARITY_TOKENS
    outcome = run_export_onnx(recipe, checked.out, texts, source, int8=int8, openvino=openvino,
                              trust_remote_code=checked.trust_remote_code, parity_tokens=parity_tokens,
                              progress=progress)  # fmt: skip
    return ExportRun(checked.out, outcome.record, outcome, outcome.parity.texts, checked)


def export(**options: Any) -> ExportRun:
    """Export a recipe as ONNX (int8 behind a fidelity gate) or a sentence-transformers directory: the keywords are
    `bertlens export`'s long flags (see `ExportOptions`)."""
    return python_call(ExportOptions, run_export_command, options)
