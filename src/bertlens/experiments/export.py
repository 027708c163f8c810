"""`bertlens export --format onnx` as a library call: one graph from token ids to the recipe's vector,
checked against bertlens fp32 before anything is written, optionally int8 behind a fidelity gate.

Directory written (atomically: built beside OUT, renamed into place only when every check passed):
model.onnx, tokenizer files, recipe.json, export.json (what, parity, gate figures, sha256 of model.onnx).
int8: calibration texts are split in two; the per-module sensitivities and the choice of modules kept
in fp32 are made on the first half, and the gate is scored on the second half, which chose nothing.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from bertlens.embedding.embedder import Embedder
from bertlens.embedding.export_record import (
    FP32_MIN_COSINE,
    Fidelity,
    calibration_feeds,
    measure,
    split_calibration,
    write_record,
)
from bertlens.embedding.gate import Gate, vouches_for
from bertlens.embedding.int8_choice import (
    CALIBRATION_TOKENS,
    MEAN_MARGIN_SE,
    MIN_CALIBRATION_TEXTS,
    MIN_MARGIN,
    RANKING_TOKENS,
    SENSITIVITY_TEXTS,
    Int8Choice,
    Smoothing,
    choose_kept,
    choose_smoothing,
    emulable_groups,
    graph_runner,
)
from bertlens.embedding.onnx_backend import MAX_BATCH, MAX_TOKENS, MODEL_FILE, RECORD_FILE, OnnxEmbedder
from bertlens.embedding.onnx_graph import RecipeGraph, export_graph, onnx_opset, recipe_graph, write_graph
from bertlens.embedding.quantize import linear_modules, merge_shared_scalings, quantize
from bertlens.embedding.smoothing import smoothed
from bertlens.encoding.encoder import Encoder
from bertlens.encoding.tokens import token_prefix, tokenize
from bertlens.errors import BertlensError
from bertlens.probing.task_comparison import TaskComparison, compare_on_task
from bertlens.progress import Progress, silent
from bertlens.representation.postprocess import PostProcessor
from bertlens.representation.recipe import Recipe
from bertlens.tasks.loaders import TaskData

if TYPE_CHECKING:
    from bertlens.embedding.openvino_export import OpenVinoOptions


@dataclass(frozen=True)
class ExportOutcome:
    out: Path
    parity: Fidelity  # fp32 graph vs bertlens fp32
    int8: Fidelity | None  # int8 graph vs bertlens fp32 on the held-out calibration half
    openvino: Fidelity | None  # with `openvino`: the exported graph run by OpenVINO vs bertlens fp32, parity texts
    kept_fp32: tuple[str, ...]
    quantized_modules: int
    evaluation: TaskComparison | None
    passed: bool
    record: dict


def _staging(out: Path) -> Path:
    staging = out.with_name(f".{out.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    return staging


def _publish(staging: Path, out: Path) -> None:
    if out.exists():
        if not (out / RECORD_FILE).is_file():
            shutil.rmtree(staging, ignore_errors=True)
            raise BertlensError(f"{out} exists and is not an earlier export; choose another --out")
        shutil.rmtree(out)
    staging.rename(out)


def _choose_kept(source: Path, work: Path, graph: RecipeGraph, encoder, texts, gate, feeds, progress) -> Int8Choice:
    """Modules to keep in fp32 (fewest, most sensitive first) so that int8 of `source` passes the gate on `texts` with
    its margin: searched in PyTorch on `graph` (embedding/int8_choice.py), confirmed on the quantized graph, which
    is left at work/model.onnx."""
    cache = work / "calibration.json" if feeds is not None else None  # static: ranges measured once

    def onnx_vectors(exclude: tuple[str, ...]) -> np.ndarray:
        quantize(source, work / MODEL_FILE, exclude, feeds, cache)
        return OnnxEmbedder(work, verify=False).encode(texts)

    def runner(subset):
        return graph_runner(graph, encoder.tokenizer, encoder.max_length, subset, MAX_BATCH, MAX_TOKENS)

    groups = emulable_groups(graph, linear_modules(source))
    lengths = tokenize(encoder.tokenizer, texts, encoder.max_length).lengths
    ranking = min(SENSITIVITY_TEXTS, token_prefix(lengths, RANKING_TOKENS, 2))  # 32 sentences, 2 reviews
    return choose_kept(graph, groups, runner, texts, gate, onnx_vectors, feeds is not None, progress, ranking)


def _smoothed_choice(staging: Path, fp32: Path, work: Path, encoder, recipe: Recipe, choose, gate, feeds, progress):
    """SmoothQuant's alpha (scales measured on half the choosing texts, alpha chosen on the other half), the graph
    written smoothed (when alpha > 0), then the modules kept fp32 chosen on it with every choosing text; the int8
    candidate is left at work/model.onnx."""
    graph = recipe_graph(encoder, recipe)
    fit, check = (
        graph_runner(graph, encoder.tokenizer, encoder.max_length, half, MAX_BATCH, MAX_TOKENS)
        for half in (choose[::2], choose[1::2])
    )
    progress("choosing the smoothing (SmoothQuant alpha)", 0, 1)
    smoothing = choose_smoothing(graph, list(linear_modules(fp32)), fit, check)
    progress("choosing the smoothing (SmoothQuant alpha)", 1, 1)
    with smoothed(graph, smoothing.scales):
        source = fp32
        if smoothing.alpha:
            source = write_graph(graph, encoder, staging / "model.smoothed.onnx")
            merge_shared_scalings(source)
        choice = _choose_kept(source, work, graph, encoder, choose, gate, feeds, progress)
        last = choice.trials[-1]
        if last.where != "onnx" or last.kept != choice.kept:  # the last real graph is not the chosen one
            quantize(
                source, work / MODEL_FILE, choice.excluded_nodes, feeds, work / "calibration.json" if feeds else None
            )
    if source != fp32:
        source.unlink()
    return smoothing, choice


def _export_fp32(
    recipe: Recipe, encoder: Encoder, reference_embedder: Embedder, staging: Path, texts, source, progress
):
    """The fp32 graph, its tokenizer, recipe and record in `staging`, checked against bertlens on `texts`."""
    postprocessor = PostProcessor.load(recipe.postprocess) if recipe.postprocess else None
    progress("exporting", 0, 1)
    export_graph(encoder, recipe, postprocessor, staging / MODEL_FILE)
    progress("exporting", 1, 1)
    encoder.tokenizer.save_pretrained(staging)
    if postprocessor is not None:
        shutil.copy(recipe.postprocess, staging / Path(recipe.postprocess).name)
    saved_recipe = recipe.replace(
        max_length=encoder.max_length,
        postprocess=Path(recipe.postprocess).name if recipe.postprocess else None,
    )
    saved_recipe.save(staging / "recipe.json")
    record = {
        "format": "onnx",
        "opset": onnx_opset(encoder),
        "inputs": ["input_ids", "attention_mask"],
        "output": "[batch, dim] float32, the recipe's final vector",
        "recipe": saved_recipe.to_dict(),
        "model_fingerprint": encoder.ref.fingerprint,
        "max_length": encoder.max_length,
        "dim": reference_embedder.dim,
        "precision": "fp32",
    }
    write_record(staging, record)
    reference = reference_embedder.encode(texts)  # [n, D]: the OpenVINO IR is checked against these too
    parity = measure(OnnxEmbedder(staging).encode(texts), reference)
    if parity.min_cosine < FP32_MIN_COSINE:
        raise BertlensError(
            f"the exported graph disagrees with bertlens (min cosine {parity.min_cosine:.6f} < {FP32_MIN_COSINE}, "
            f"max abs diff {parity.max_abs_diff:.2e}); nothing was written. Please report this recipe"
        )
    return parity, {**record, "parity": {**asdict(parity), "texts_source": source}}, reference


def _quantize_gated(staging: Path, encoder, reference_embedder, calibration, options: Int8Options, record, progress):
    """Replace the staged fp32 model by int8, keeping the sensitive modules fp32, then judge it against the gate
    on the calibration texts that chose nothing (a refusal unless forced)."""
    static, gate, force, eval_task = options.static, options.gate, options.force, options.eval_task
    if len(calibration) < 4:
        raise BertlensError("--quantize int8 needs at least 4 calibration texts (half choose, half judge)")
    started = time.perf_counter()
    choose, judge = split_calibration(calibration)
    # the choice runs on the choosing texts up to CALIBRATION_TOKENS (every sentence; 32 reviews of 256 tokens):
    # each emulated pass over 150 reviews took a minute at base size; the judging half is judged whole
    lengths = tokenize(encoder.tokenizer, choose, encoder.max_length).lengths
    choose = choose[: token_prefix(lengths, CALIBRATION_TOKENS, MIN_CALIBRATION_TEXTS)]
    fp32_path = staging / "model.fp32.onnx"
    (staging / MODEL_FILE).rename(fp32_path)
    work = _work_dir(staging)
    feeds = calibration_feeds(encoder.tokenizer, choose, encoder.max_length) if static else None
    recipe = reference_embedder.recipe
    smoothing, choice = _smoothed_choice(staging, fp32_path, work, encoder, recipe, choose, gate, feeds, progress)
    (work / MODEL_FILE).rename(staging / MODEL_FILE)
    shutil.rmtree(work)
    fp32_path.unlink()
    kind = (
        "int8 (static QDQ; activation ranges calibrated by min/max on the choosing half, weights per channel"
        if static
        else "int8 (dynamic; int8 weights per channel, activations per batch"
    ) + (f"; SmoothQuant alpha {smoothing.alpha:g})" if smoothing.alpha else ")")
    record = write_record(staging, {**record, "precision": kind})
    int8_embedder = OnnxEmbedder(staging)
    fid = measure(int8_embedder.encode(judge), reference_embedder.encode(judge), gate.min_cosine)
    passed = choice.quantized > 0 and gate.passes(fid.mean_cosine, fid.min_cosine)
    evaluation = compare_on_task(reference_embedder, int8_embedder, eval_task) if eval_task is not None else None
    if evaluation is not None:
        passed = passed and evaluation.difference[0] >= -gate.max_task_drop
    kept = tuple(_shown(s.module, smoothing) for s in choice.kept_modules)
    details = _int8_record(choice, smoothing, gate, len(choose), len(judge), passed, force)
    record = {
        **record,
        "int8": {**asdict(fid), **details, "vouches_for": vouches_for(gate, fid.texts, fid.below_floor)},
    }
    record["int8"]["evaluation"] = asdict(evaluation) if evaluation is not None else None
    record["int8"]["choice_seconds"] = round(time.perf_counter() - started, 1)
    if not passed and not force:
        raise BertlensError(_gate_message(fid, gate, choice.quantized, evaluation))
    return _Int8(fid, kept, choice.quantized, evaluation, passed, record)


def _work_dir(staging: Path) -> Path:
    """A directory OnnxEmbedder can load candidate graphs from: the staged tokenizer and record beside them."""
    work = staging / ".work"
    work.mkdir()
    for name in (p.name for p in staging.iterdir() if p.name.startswith(("tokenizer", "vocab", "special"))):
        shutil.copy(staging / name, work / name)
    shutil.copy(staging / RECORD_FILE, work / RECORD_FILE)
    return work


def _shown(module: str, smoothing: Smoothing) -> str:
    """A module by its name in the model (a smoothed module's product sits in its `.linear`)."""
    return module.removesuffix(".linear") if smoothing.alpha else module


def _int8_record(
    choice: Int8Choice, smoothing: Smoothing, gate: Gate, choosing: int, judging: int, passed: bool, force: bool
) -> dict:
    ranked = [s for s in choice.ranked if s.mean_cosine is not None]
    return {
        "judged_on": f"{judging} held-out calibration texts (the other {choosing} chose what stays fp32)",
        "gate": asdict(gate),
        "choice_margin": (
            f"the choosing texts had to pass with their mean less {MEAN_MARGIN_SE:g} standard errors and their "
            f"minimum less {MIN_MARGIN:g} of the allowed loss"
        ),
        "passed": passed,
        "forced": force and not passed,
        "smoothing": {
            "alpha": smoothing.alpha,
            "method": "SmoothQuant (Xiao et al. 2023): input channel j divided by max|x_j|^a / max|w_j|^(1-a) (max|x_j| "
            "at least the median channel's), the weight's column multiplied by it; maxima measured on half the "
            "choosing texts, a (0: none) chosen on the other half",
            "all_int8_mean_cosine_by_alpha": {str(a): round(c, 6) for a, c in smoothing.tried.items()},
        },
        "modules_quantized": choice.quantized,
        "modules_kept_fp32": [_shown(s.module, smoothing) for s in choice.kept_modules],
        "sensitivity_mean_cosine_alone": {_shown(s.module, smoothing): round(s.mean_cosine, 6) for s in ranked},
        "sensitivity_texts": (
            f"{choice.ranking_texts} choosing texts, int8 emulated in PyTorch"
            if ranked
            else "not ranked: every module in int8 passed"
        ),
        "search": [asdict(t) for t in choice.trials],
    }


@dataclass(frozen=True)
class _Int8:
    fidelity: Fidelity
    kept: tuple[str, ...]
    quantized: int
    evaluation: TaskComparison | None
    passed: bool
    record: dict


@dataclass(frozen=True)
class Int8Options:
    """The int8 step of an ONNX export: how it quantizes, on which texts, and the gate it must pass."""

    static: bool = False  # static QDQ (calibrated activation ranges) instead of dynamic int8
    calibration: Sequence[str] | None = None  # texts that choose (half) and judge (half); default the parity texts
    gate: Gate = Gate()
    force: bool = False  # write it even below the gate, with the figures recorded
    eval_task: TaskData | None = None  # also gate the task metric's drop


def run_export_onnx(
    recipe: Recipe,
    out: Path,
    texts: Sequence[str],
    texts_source: str,
    *,
    int8: Int8Options | None = None,
    openvino: OpenVinoOptions | None = None,  # embedding/openvino_export.py: also as OpenVINO IR
    trust_remote_code: bool = False,
    parity_tokens: int | None = None,
    progress: Progress = silent,
) -> ExportOutcome:
    """Export, check parity (with `int8`: then quantize behind its gate; with `openvino`: then convert the graph to
    OpenVINO IR and check it again, run by OpenVINO), then publish OUT; on a failed check nothing is written.
    parity_tokens: check parity on the first texts that reach this many tokens (at least 2 texts), not all."""
    start = time.perf_counter()
    if len(texts) < 2:
        raise BertlensError(f"{texts_source}: need at least 2 texts to check the export against bertlens")
    if recipe.precision != "fp32":
        recipe = recipe.replace(precision="fp32")  # the graph is fp32; int8 is a separate, gated step
    encoder = Encoder(
        recipe.model,
        max_length=recipe.max_length,
        attentions="all" if recipe.needs_attentions else "none",
        trust_remote_code=trust_remote_code,
    )
    reference_embedder = Embedder(recipe, encoder=encoder)
    if parity_tokens is not None:
        texts = texts[: token_prefix(tokenize(encoder.tokenizer, texts, encoder.max_length).lengths, parity_tokens, 2)]
    staging = _staging(out)
    try:
        parity, record, reference = _export_fp32(
            recipe, encoder, reference_embedder, staging, texts, texts_source, progress
        )
        quantized = on_openvino = None
        if int8 is not None and openvino is None:
            calibration = list(int8.calibration or texts)
            quantized = _quantize_gated(staging, encoder, reference_embedder, calibration, int8, record, progress)
            record = quantized.record
        if openvino is not None:  # int8 there by NNCF on the IR, judged run by OpenVINO
            from bertlens.embedding.openvino_export import openvino_ir

            parity_texts = (texts, reference)
            on_openvino = openvino_ir(
                staging, encoder, reference_embedder, parity_texts, record, int8, openvino, progress
            )
            record = on_openvino.record
        record = write_record(staging, {**record, "seconds": round(time.perf_counter() - start, 1)})
        _publish(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if on_openvino is not None:
        ov = on_openvino
        return ExportOutcome(out, parity, ov.int8, ov.parity, ov.kept, ov.quantized, None, ov.passed, record)
    if quantized is None:
        return ExportOutcome(out, parity, None, None, (), 0, None, True, record)
    q = quantized
    return ExportOutcome(out, parity, q.fidelity, None, q.kept, q.quantized, q.evaluation, q.passed, record)


def _gate_message(fid: Fidelity, gate: Gate, quantized: int, evaluation: TaskComparison | None) -> str:
    if quantized == 0:
        what = "no linear module can be quantized without failing the gate"
    else:
        what = f"mean cosine {fid.mean_cosine:.4f} (gate {gate.mean_cosine}), min {fid.min_cosine:.4f} (gate {gate.min_cosine})"
    if evaluation is not None:
        what += f", {evaluation.task} change {evaluation.difference[0]:+.4f} (gate -{gate.max_task_drop})"
    return f"int8 fails the fidelity gate: {what}; nothing was written (use --force to write it with these figures)"
