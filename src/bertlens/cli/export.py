"""`bertlens export`: the recipe as an ONNX graph (pooling inside; int8 behind a fidelity gate) or as a
sentence-transformers directory, each checked against bertlens fp32 before anything is written. Its flags are
derived from `ExportOptions` (api/export.py; cli/derived.py)."""

from __future__ import annotations

from bertlens.cli.console import progress_bar, say
from bertlens.cli.derived import CommandLine
from bertlens.representation.choices import TOKENS

COMMAND = CommandLine(
    "export",
    "bertlens.api.export:ExportOptions",
    "Export a recipe: --format onnx (one graph from token ids to the final vector; --quantize int8 behind a fidelity "
    "gate) or --format sentence-transformers (a directory SentenceTransformer(path) loads). The export is compared "
    "with bertlens fp32 first; a failed check writes nothing.",
    required={"format": "onnx or sentence-transformers", "out": "the directory to write"},
)


def run(options) -> None:
    from bertlens.api.export import run_export_command

    with progress_bar("export", unit="steps", enabled=not options.quiet) as update:
        done = run_export_command(options, progress=update)
    if done.outcome is None:
        record = done.record
        say(
            f"sentence-transformers: {' -> '.join(record['modules'])}; max abs diff to bertlens "
            f"{record['parity']['max_abs_diff']:.1e} on {done.texts} texts"
        )
        if "first_stage" in record:
            say(record["first_stage"])
        loader = "MultiVectorEncoder" if record["recipe"]["pooler"] == TOKENS else "SentenceTransformer"
        say(f"saved {done.out} ({loader}('{done.out}') loads it without bertlens)")
        return
    outcome, p = done.outcome, done.outcome.parity
    say(f"onnx fp32 parity on {p.texts} texts: max abs diff {p.max_abs_diff:.1e}, min cosine {p.min_cosine:.7f}")
    if outcome.int8 is not None:
        q = outcome.int8
        kept = ", ".join(outcome.kept_fp32) or "none"
        say(
            f"int8 on {q.texts} held-out calibration texts: mean cosine {q.mean_cosine:.4f}, min {q.min_cosine:.4f} "
            f"(gate {options.gate_mean} / {options.gate_min}); {outcome.quantized_modules} linear modules int8, "
            f"kept in floating point: {kept}"
            + ("" if outcome.passed else "; BELOW THE GATE, written because of --force")
        )
        if outcome.evaluation is not None:
            ev = outcome.evaluation
            say(
                f"{ev.task} test {ev.metric}: fp32 {ev.teacher[0]:.4f}, int8 {ev.student[0]:.4f}, change "
                f"{ev.difference[0]:+.4f} [{ev.difference[1]:+.4f}, {ev.difference[2]:+.4f}]"
            )
    backend = "onnx"
    if outcome.openvino is not None:
        backend, o = "openvino", outcome.openvino
        say(f"openvino parity on {o.texts} texts (as it runs): min cosine {o.min_cosine:.7f}")
    say(f"saved {done.out} (bertlens embed --backend {backend} --model {done.out} ...; figures in export.json)")
