"""int8 of the recipe's OpenVINO IR in minutes: NNCF calibrates once, bertlens chooses what stays in floating point.

NNCF's own accuracy control (`quantize_with_accuracy_control`) ranks each group of int8 operations by a run of the
real graph per group, and ranks again after each group it gives back: on all-mpnet-base-v2 and 256-token reviews it
had not ended after 14 minutes on 2 cores (issue #62). Here, on the choosing half of the calibration texts:
1. calibrate: NNCF's post-training int8 (transformer type: SmoothQuant, mixed preset) on the first
   CALIBRATION_TOKENS tokens; its fast bias correction is off (on mpnet's reviews it changed the mean cosine by
   6e-6 and took a third of the time);
2. check: the all-int8 graph on those texts against the gate with the ONNX path's margin
   (int8_choice.passes_with_margin); done when it passes;
3. rank: each linear module alone in int8, emulated in PyTorch with static ranges (int8_choice.rank_modules), on the
   first RANKING_TOKENS tokens: the tokens of some 24 sentences, 2 reviews, not 32 documents (as the ONNX path);
4. search: bisection over the ranking for the fewest modules kept in floating point. Each candidate is the calibrated
   graph with the kept products given back their fp32 input and weights (`keep_float`: nothing recalibrated), run
   by OpenVINO on the checking texts.
The graph the search passed is the one published; the judging half of the calibration texts then decides the gate.
What is not int8 computes in bf16 where the CPU has bf16 instructions (`rest_precision`; OpenVINO's own default
there), and the checks run it so: on all-mpnet-base-v2's 256-token reviews 11.2 docs/s against 7.7 with the rest in
f32, at the same fidelity (min cosine 0.9954 and 0.9956).
"""

from __future__ import annotations

import contextlib
import io
import logging
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from bertlens.embedding.export_record import calibration_feeds
from bertlens.embedding.fake_quant import input_ranges
from bertlens.embedding.gate import Gate
from bertlens.embedding.int8_choice import (
    CALIBRATION_TOKENS,
    MIN_CALIBRATION_TEXTS,
    RANKING_TOKENS,
    Sensitivity,
    Trial,
    graph_runner,
    passes_with_margin,
    rank_modules,
)
from bertlens.embedding.onnx_backend import MAX_BATCH, MAX_TOKENS
from bertlens.embedding.openvino_backend import PRECISIONS
from bertlens.encoding.tokens import token_prefix, tokenize
from bertlens.metrics.geometry import row_cosine
from bertlens.progress import DETAIL, Progress, counting

CALIBRATION_BATCH = 8  # texts a batch of the checks (NNCF collects its statistics per batch)
SMOOTHING_MARK = "nncf_smooth_quant"  # NNCF names the Multiply it inserts for SmoothQuant with this
# the choice's cost in passes of the reference over the checking texts, measured on all-mpnet-base-v2 (for the ETA):
# NNCF's two statistics passes and SmoothQuant ~3.5; each search step ~0.6 (an int8 pass and a compile)
CALIBRATION_PASSES, SEARCH_STEP_PASSES = 3.5, 0.6


@dataclass(frozen=True)
class OvInt8Choice:
    ranked: tuple[Sensitivity, ...]  # most sensitive first; unranked (mean_cosine None) when all int8 passed
    kept: int  # the first `kept` of `ranked` stay in floating point
    trials: tuple[Trial, ...]  # every candidate run by OpenVINO, in order
    calibration_texts: int  # the choosing texts NNCF calibrated on (and the checks ran on)
    ranking_texts: int  # 0: not ranked
    estimated_seconds: float  # said up front, from the reference pass
    seconds: dict[str, float]  # by stage

    @property
    def kept_modules(self) -> tuple[str, ...]:
        return tuple(s.module for s in self.ranked[: self.kept])

    @property
    def quantized(self) -> int:
        return len(self.ranked) - self.kept

    @property
    def passed(self) -> bool:
        return any(t.passed and t.kept == self.kept for t in self.trials)


def keep_float(quantized, fp32, products: Iterable[str]):
    """A copy of NNCF's `quantized` model in which each named product (a MatMul, by its name in both models) reads
    its input from before its quantizer (and before SmoothQuant's scaling) and its weight from `fp32`: that product
    computes in floating point exactly as in `fp32`, the rest of the graph stays as calibrated."""
    from openvino import opset13

    model = quantized.clone()
    ops = {op.get_friendly_name(): op for op in model.get_ops()}
    originals = {op.get_friendly_name(): op for op in fp32.get_ops()}
    for name in products:
        product, weight = ops[name], originals[name].input(1).get_source_output().get_node()
        product.input(0).replace_source_output(_before_quantization(product.input(0).get_source_output()))
        product.input(1).replace_source_output(opset13.constant(weight.get_data()).output(0))
    model.validate_nodes_and_infer_types()
    return model


def restorable(fp32, groups: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """The module groups whose every product is a MatMul with a constant weight in `fp32` (what keep_float can give
    back); the converter may fuse others (a Gemm with its bias) under other names."""
    ops = {op.get_friendly_name(): op for op in fp32.get_ops()}

    def constant_matmul(name: str) -> bool:
        op = ops.get(name)
        return (
            op is not None
            and op.get_type_name() == "MatMul"
            and op.input(1).get_source_output().get_node().get_type_name() == "Constant"
        )

    return {module: nodes for module, nodes in groups.items() if all(constant_matmul(n) for n in nodes)}


def _before_quantization(output):
    node = output.get_node()
    if node.get_type_name() != "FakeQuantize":
        return output
    output = node.input(0).get_source_output()
    node = output.get_node()
    if node.get_type_name() == "Multiply" and SMOOTHING_MARK in node.get_friendly_name():
        return node.input(0).get_source_output()
    return output


def rest_precision() -> str:
    """bf16 where OpenVINO's CPU plugin has bf16 (AVX512-BF16, AMX), else fp32."""
    import openvino as ov

    return "bf16" if "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES") else "fp32"


def _estimate(reference_seconds: float, ranking_share: float, groups: int) -> float:
    """Seconds the choice takes, from the reference pass: calibration, ranking (one PyTorch pass over the ranking
    texts per group, ~1.2x OpenVINO's f32) and the search's steps (at most)."""
    steps = math.ceil(math.log2(groups + 1)) + 2
    passes = 1 + CALIBRATION_PASSES + groups * ranking_share * 1.2 + steps * SEARCH_STEP_PASSES
    return reference_seconds * passes


def _calibrated(fp32, feeds):
    """NNCF's post-training int8 of `fp32` (a copy) with activation ranges from `feeds`."""
    import nncf
    from nncf.quantization.advanced_parameters import AdvancedQuantizationParameters

    nncf.set_log_level(logging.ERROR)  # its INFO lines and bars are not the user's; bertlens reports its own progress
    with contextlib.redirect_stdout(io.StringIO()):  # its bars are drawn on stdout, which is the user's output
        return nncf.quantize(
            fp32.clone(),
            nncf.Dataset(feeds),
            model_type=nncf.ModelType.TRANSFORMER,
            subset_size=len(feeds),
            advanced_parameters=AdvancedQuantizationParameters(disable_bias_correction=True),
        )


def _ranked(graph, groups, tokenizer, max_length: int, texts: Sequence[str], progress) -> list[Sensitivity]:
    """Each group alone in static int8, emulated on `graph` (int8_choice.rank_modules), most sensitive first."""
    run_few = graph_runner(graph, tokenizer, max_length, texts, MAX_BATCH, MAX_TOKENS)
    with input_ranges(graph, groups) as found:  # static ranges, as NNCF's are
        reference_few = run_few()  # [r, D]
    return rank_modules(graph, groups, run_few, reference_few, dict(found), progress)


def choose_int8(
    fp32,
    groups: dict[str, tuple[str, ...]],
    graph,
    tokenizer,
    max_length: int,
    choose: Sequence[str],
    gate: Gate,
    progress: Progress,
    precision: str = "fp32",
):
    """(the int8 model to publish, its OvInt8Choice). fp32: the recipe's IR (an openvino.Model); groups: module ->
    its products' names (quantize.linear_modules, restorable ones); graph: the recipe graph in PyTorch, for ranking;
    precision: what the rest of the graph (and the kept modules) computes in, as the backend will run it."""
    import openvino as ov

    core, stage = ov.Core(), "int8 by NNCF"
    lengths = tokenize(tokenizer, choose, max_length).lengths
    checking = list(choose[: token_prefix(lengths, CALIBRATION_TOKENS, MIN_CALIBRATION_TEXTS)])
    feeds = calibration_feeds(tokenizer, checking, max_length, CALIBRATION_BATCH)

    def run(model, hint: str = PRECISIONS[precision]) -> np.ndarray:
        request = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": hint}).create_infer_request()
        return np.concatenate([np.array(request.infer(feed)[0], copy=True) for feed in feeds])  # [n, D]

    seconds, started = {}, time.perf_counter()
    progress(f"{stage}: the fp32 reference", 0, 1)
    reference = run(fp32, "f32")  # [n, D]: the IR in f32, which equals bertlens (checked before this step)
    seconds["reference"] = time.perf_counter() - started
    ranking = token_prefix(lengths, RANKING_TOKENS)
    steps = math.ceil(math.log2(len(groups) + 1)) + 2
    estimate = _estimate(seconds["reference"], sum(lengths[:ranking]) / sum(lengths[: len(checking)]), len(groups))
    progress(f"{stage}: the fp32 reference", 1, 1)
    said = f"{estimate:.0f} s" if estimate < 120 else f"{estimate / 60:.0f} min"
    progress(f"{stage}: calibrating{DETAIL}the int8 choice takes about {said} here", 0, 1)
    mark = time.perf_counter()
    quantized = _calibrated(fp32, feeds)
    seconds["calibration"] = time.perf_counter() - mark
    progress(f"{stage}: calibrating", 1, 1)

    ranked = [Sensitivity(module, nodes, None) for module, nodes in groups.items()]
    trials: list[Trial] = []
    best = None

    def passes(kept: int) -> bool:
        nonlocal best
        candidate = keep_float(quantized, fp32, [n for s in ranked[:kept] for n in s.nodes]) if kept else quantized
        cosines = row_cosine(run(candidate), reference)
        passed = passes_with_margin(gate, cosines)
        trials.append(Trial(kept, float(cosines.mean()), float(cosines.min()), passed, "openvino"))
        progress(counting(f"{stage}: searching modules kept in floating point", "trials"), len(trials), steps)
        if trials[-1].passed and (best is None or kept < best[0]):
            best = (kept, candidate)
        return trials[-1].passed

    mark = time.perf_counter()
    if not passes(0) and groups:  # (without groups nothing can be kept: the all-int8 graph is all there is)
        rank_started = time.perf_counter()
        ranked = _ranked(graph, groups, tokenizer, max_length, choose[:ranking], progress)
        seconds["ranking"] = time.perf_counter() - rank_started
        low, high = 1, len(ranked)
        while low < high:
            middle = (low + high) // 2
            low, high = (low, middle) if passes(middle) else (middle + 1, high)
        if best is None or best[0] != low:
            passes(low)  # every module kept: never run by the bisection
    seconds["search"] = time.perf_counter() - mark - seconds.get("ranking", 0.0)
    if best is None:  # even every module kept fails: the judging half will say so
        best = (len(ranked), keep_float(quantized, fp32, [n for s in ranked for n in s.nodes]))
    kept, model = best
    choice = OvInt8Choice(
        ranked=tuple(ranked),
        kept=kept,
        trials=tuple(trials),
        calibration_texts=len(checking),
        ranking_texts=ranking if "ranking" in seconds else 0,
        estimated_seconds=round(estimate, 1),
        seconds={k: round(v, 1) for k, v in seconds.items()},
    )
    return model, choice
