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

import numpy as np

from bertlens.embedding.embedder import Embedder
from bertlens.embedding.gate import Gate
from bertlens.embedding.onnx_backend import MODEL_FILE, RECORD_FILE, OnnxEmbedder
from bertlens.embedding.onnx_graph import export_graph, onnx_opset
from bertlens.embedding.quantize import quantize, sensitivities
from bertlens.encoding.encoder import Encoder
from bertlens.errors import BertlensError
from bertlens.io.atomic import write_json
from bertlens.io.cache import file_sha256
from bertlens.metrics.geometry import row_cosine
from bertlens.probing.task_comparison import TaskComparison, compare_on_task
from bertlens.progress import Progress, silent
from bertlens.representation.postprocess import PostProcessor
from bertlens.representation.recipe import Recipe
from bertlens.tasks.loaders import TaskData

FP32_MIN_COSINE = 0.99999  # the fp32 graph computes the same function: anything below is a bug, not rounding


@dataclass(frozen=True)
class Fidelity:
    texts: int
    max_abs_diff: float
    mean_cosine: float
    min_cosine: float


@dataclass(frozen=True)
class ExportOutcome:
    out: Path
    parity: Fidelity  # fp32 graph vs bertlens fp32
    int8: Fidelity | None  # int8 graph vs bertlens fp32 on the held-out calibration half
    kept_fp32: tuple[str, ...]
    quantized_modules: int
    evaluation: TaskComparison | None
    passed: bool
    record: dict


def measure(got: np.ndarray, reference: np.ndarray) -> Fidelity:
    cos = row_cosine(got.astype(np.float64), reference.astype(np.float64))
    return Fidelity(len(got), float(np.abs(got - reference).max()), float(cos.mean()), float(cos.min()))


def _staging(out: Path) -> Path:
    staging = out.with_name(f".{out.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    return staging


def _record(staging: Path, record: dict) -> dict:
    record = {**record, "sha256": {MODEL_FILE: file_sha256(staging / MODEL_FILE)}}
    write_json(staging / RECORD_FILE, record)
    return record


def _publish(staging: Path, out: Path) -> None:
    if out.exists():
        if not (out / RECORD_FILE).is_file():
            shutil.rmtree(staging, ignore_errors=True)
            raise BertlensError(f"{out} exists and is not an earlier export; choose another --out")
        shutil.rmtree(out)
    staging.rename(out)


def calibration_feeds(tokenizer, texts: Sequence[str], max_length: int, batch: int = 16) -> list[dict[str, np.ndarray]]:
    """The graph's inputs for `texts`, in padded batches: what static quantization measures ranges on."""
    feeds = []
    for start in range(0, len(texts), batch):
        encoded = tokenizer(
            list(texts[start : start + batch]),
            truncation=True,
            max_length=max_length,
            padding=True,
            return_tensors="np",
        )
        feeds.append({name: encoded[name].astype(np.int64) for name in ("input_ids", "attention_mask")})
    return feeds


def _choose_kept(
    fp32: Path,
    work: Path,
    texts: Sequence[str],
    reference: np.ndarray,
    gate: Gate,
    tokenizer_dir: Path,
    progress,
    feeds: list[dict[str, np.ndarray]] | None = None,
) -> tuple[tuple[str, ...], list, int]:
    """Modules to keep in fp32 (fewest, most sensitive first) so that int8 passes the gate on `texts`."""

    def encode(path: Path) -> np.ndarray:
        shutil.copy(path, work / MODEL_FILE)
        return OnnxEmbedder(work, verify=False).encode(texts)

    for name in (p.name for p in tokenizer_dir.iterdir() if p.name.startswith(("tokenizer", "vocab", "special"))):
        shutil.copy(tokenizer_dir / name, work / name)
    shutil.copy(tokenizer_dir / RECORD_FILE, work / RECORD_FILE)
    cache = work / "calibration.json" if feeds is not None else None  # static: ranges measured once
    ranked = sensitivities(fp32, encode, reference, progress, feeds, cache)
    total = len(ranked)
    for count in range(total + 1):
        kept = tuple(s.module for s in ranked[:count])
        exclude = tuple(n for s in ranked[:count] for n in s.nodes)
        candidate = quantize(fp32, work / "candidate.onnx", exclude, feeds, cache)
        cos = row_cosine(encode(candidate), reference)
        if gate.passes(float(cos.mean()), float(cos.min())):
            return kept, ranked, total - count
        progress("keeping sensitive modules in fp32", count + 1, total)
    return tuple(s.module for s in ranked), ranked, 0


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
    _record(staging, record)
    parity = measure(OnnxEmbedder(staging).encode(texts), reference_embedder.encode(texts))
    if parity.min_cosine < FP32_MIN_COSINE:
        raise BertlensError(
            f"the exported graph disagrees with bertlens (min cosine {parity.min_cosine:.6f} < {FP32_MIN_COSINE}, "
            f"max abs diff {parity.max_abs_diff:.2e}); nothing was written. Please report this recipe"
        )
    return parity, {**record, "parity": {**asdict(parity), "texts_source": source}}


@dataclass(frozen=True)
class _Int8:
    fidelity: Fidelity
    kept: tuple[str, ...]
    quantized: int
    evaluation: TaskComparison | None
    passed: bool
    record: dict


def _quantize_gated(
    staging: Path, encoder, reference_embedder, calibration, static, gate, force, eval_task, record, progress
):
    """Replace the staged fp32 model by int8, keeping the sensitive modules fp32, then judge it against the gate
    on the calibration texts that chose nothing (a refusal unless forced)."""
    if len(calibration) < 4:
        raise BertlensError("--quantize int8 needs at least 4 calibration texts (half choose, half judge)")
    order = np.random.default_rng(0).permutation(len(calibration))
    half = len(order) // 2
    choose = [calibration[i] for i in order[:half]]
    judge = [calibration[i] for i in order[half:]]
    fp32_path = staging / "model.fp32.onnx"
    (staging / MODEL_FILE).rename(fp32_path)
    work = staging / ".work"
    work.mkdir()
    feeds = calibration_feeds(encoder.tokenizer, choose, encoder.max_length) if static else None
    kept, ranked, quantized = _choose_kept(
        fp32_path, work, choose, reference_embedder.encode(choose), gate, staging, progress, feeds
    )
    exclude = tuple(n for s in ranked if s.module in kept for n in s.nodes)
    quantize(fp32_path, staging / MODEL_FILE, exclude, feeds, work / "calibration.json" if static else None)
    shutil.rmtree(work)
    fp32_path.unlink()
    kind = (
        "int8 (static QDQ; activation ranges calibrated by min/max on the choosing half, weights per channel)"
        if static
        else "int8 (dynamic; int8 weights per channel, activations per batch)"
    )
    record = _record(staging, {**record, "precision": kind})
    int8_embedder = OnnxEmbedder(staging)
    fid = measure(int8_embedder.encode(judge), reference_embedder.encode(judge))
    passed = quantized > 0 and gate.passes(fid.mean_cosine, fid.min_cosine)
    evaluation = compare_on_task(reference_embedder, int8_embedder, eval_task) if eval_task is not None else None
    if evaluation is not None:
        passed = passed and evaluation.difference[0] >= -gate.max_task_drop
    record = {
        **record,
        "int8": {
            **asdict(fid),
            "judged_on": f"{len(judge)} held-out calibration texts (the other {len(choose)} chose what stays fp32)",
            "gate": asdict(gate),
            "passed": passed,
            "forced": force and not passed,
            "modules_quantized": quantized,
            "modules_kept_fp32": list(kept),
            "sensitivity_mean_cosine_alone": {s.module: round(s.mean_cosine, 6) for s in ranked},
            "evaluation": asdict(evaluation) if evaluation is not None else None,
        },
    }
    if not passed and not force:
        raise BertlensError(_gate_message(fid, gate, quantized, evaluation))
    return _Int8(fid, kept, quantized, evaluation, passed, record)


def run_export_onnx(
    recipe: Recipe,
    out: Path,
    texts: Sequence[str],
    texts_source: str,
    *,
    quantize_int8: bool = False,
    static: bool = False,
    calibration: Sequence[str] | None = None,
    gate: Gate = Gate(),
    force: bool = False,
    eval_task: TaskData | None = None,
    trust_remote_code: bool = False,
    progress: Progress = silent,
) -> ExportOutcome:
    """Export, check parity (and the int8 gate), then publish OUT; on a failed check nothing is written."""
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
    staging = _staging(out)
    try:
        parity, record = _export_fp32(recipe, encoder, reference_embedder, staging, texts, texts_source, progress)
        int8 = None
        if quantize_int8:
            calibration = list(calibration or texts)
            int8 = _quantize_gated(
                staging, encoder, reference_embedder, calibration, static, gate, force, eval_task, record, progress
            )
            record = int8.record
        record = _record(staging, {**record, "seconds": round(time.perf_counter() - start, 1)})
        _publish(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if int8 is None:
        return ExportOutcome(out, parity, None, (), 0, None, True, record)
    return ExportOutcome(out, parity, int8.fidelity, int8.kept, int8.quantized, int8.evaluation, int8.passed, record)


def _gate_message(fid: Fidelity, gate: Gate, quantized: int, evaluation: TaskComparison | None) -> str:
    if quantized == 0:
        what = "no linear module can be quantized without failing the gate"
    else:
        what = f"mean cosine {fid.mean_cosine:.4f} (gate {gate.mean_cosine}), min {fid.min_cosine:.4f} (gate {gate.min_cosine})"
    if evaluation is not None:
        what += f", {evaluation.task} change {evaluation.difference[0]:+.4f} (gate -{gate.max_task_drop})"
    return f"int8 fails the fidelity gate: {what}; nothing was written (use --force to write it with these figures)"
