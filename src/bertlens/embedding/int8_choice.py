"""Which linear modules the int8 export keeps in fp32: ranked and searched on the PyTorch graph, confirmed in ONNX.

The export used to quantize, write and re-encode the whole ONNX graph once per linear module (72 at base size:
over 10 minutes for all-mpnet-base-v2 on 2 cores), then once more per module it kept. Now:
0. smooth: SmoothQuant's alpha chosen on the choosing texts (embedding/smoothing.py; 0 is none);
1. rank: each module alone under the int8 emulation (embedding/fake_quant.py: the same rounding as ONNX
   Runtime, rank correlation 0.9997 with the real graphs' figures), on a few of the choosing texts (32, or fewer
   reaching RANKING_TOKENS: 2 reviews): one PyTorch pass per module, nothing written (32 texts kept the same
   modules as 64 on all-mpnet-base-v2, docs/results-log.md);
2. search: every module int8 first (ranking is skipped when that passes), else the fewest modules kept fp32,
   most sensitive first, by bisection over the ranked list on the choosing texts (the export passes those up to
   CALIBRATION_TOKENS: every sentence, 32 reviews), against the gate with a margin, so that the judging texts
   (which chose nothing) pass when the choosing ones do;
3. confirm: the ONNX graph quantized once with that choice and scored on the choosing texts; where ONNX Runtime
   and the emulation disagree (a CPU whose int8 kernels saturate), more modules are kept, one real graph at a time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from bertlens.embedding.fake_quant import Ranges, fake_quantized, input_ranges
from bertlens.embedding.gate import Gate
from bertlens.embedding.smoothing import ALPHAS, calibrate, smoothed, smoothed_name, smoothing_scales
from bertlens.encoding.tokens import map_batches, pad_ids, tokenize
from bertlens.errors import BertlensError
from bertlens.metrics.geometry import row_cosine
from bertlens.progress import Progress, counting, silent

SENSITIVITY_TEXTS = 32  # of the choosing texts rank the modules (each module costs one pass over them) ...
RANKING_TOKENS = 512  # ... or fewer, as many as reach these tokens: ~32 sentences, 2 reviews at 256 (3 ranked as 8 did)
CALIBRATION_TOKENS = 8192  # the choice's checks (and static ranges) run on the choosing texts up to these tokens: every
MIN_CALIBRATION_TEXTS = 16  # choosing sentence, 32 reviews at 256 tokens (not 150: at base size, minutes, not 25+)
MEAN_MARGIN_SE = 3.0  # the choosing texts' mean cosine must clear the gate by 3 standard errors of that mean ...
MIN_MARGIN = 0.25  # ... and their minimum by a quarter of the loss the gate allows (0.985 for a 0.98 gate)


@dataclass(frozen=True)
class Sensitivity:
    module: str  # e.g. model.encoder.layer.3.output.dense
    nodes: tuple[str, ...]  # its weight-bearing MatMul/Gemm nodes in the ONNX graph
    mean_cosine: float | None  # with only this module int8 (emulated), on the ranking texts; None: not ranked


@dataclass(frozen=True)
class Trial:
    kept: int  # the first `kept` modules of the ranking stay fp32
    mean_cosine: float
    min_cosine: float
    passed: bool  # against the gate with its margin
    where: str  # "pytorch" (the emulation) or "onnx" (the quantized graph itself)


@dataclass(frozen=True)
class Int8Choice:
    ranked: tuple[Sensitivity, ...]  # most sensitive first
    kept: int  # how many of `ranked` stay fp32
    trials: tuple[Trial, ...]  # every evaluation of the search, in order
    ranking_texts: int = 0  # the texts the modules were ranked on (0: not ranked, every module int8 passed)

    @property
    def kept_modules(self) -> tuple[Sensitivity, ...]:
        return self.ranked[: self.kept]

    @property
    def quantized(self) -> int:
        return len(self.ranked) - self.kept

    @property
    def excluded_nodes(self) -> tuple[str, ...]:
        return tuple(n for s in self.kept_modules for n in s.nodes)


def passes_with_margin(gate: Gate, cosines: np.ndarray) -> bool:
    """The gate, tightened for the texts that choose: their mean less MEAN_MARGIN_SE standard errors, and their
    minimum less MIN_MARGIN of the loss the gate allows, must still pass it."""
    n = len(cosines)
    se = float(cosines.std(ddof=1)) / math.sqrt(n) if n > 1 else 0.0
    minimum_margin = MIN_MARGIN * (1.0 - gate.min_cosine)
    return gate.passes(float(cosines.mean()) - MEAN_MARGIN_SE * se, float(cosines.min()) - minimum_margin)


def emulable_groups(graph: nn.Module, groups: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """`groups` when every one is a linear module of `graph` (what the emulation can quantize); else one line."""
    modules = dict(graph.named_modules())
    unknown = [m for m in groups if not isinstance(modules.get(m), nn.Linear)]
    if unknown:
        raise BertlensError(
            f"int8: the graph's products {unknown[:3]} are not linear modules bertlens can emulate; export fp32 "
            "(without --quantize) and please report this model"
        )
    return groups


def graph_runner(graph: nn.Module, tokenizer, max_length: int, texts: Sequence[str], batch: int, tokens: int):
    """() -> [N, D] float32: the recipe graph in PyTorch over `texts`, batched and padded as OnnxEmbedder batches
    them (dynamic int8 scales each batch's activations by that batch's range, so the batches must match)."""
    tokenized = tokenize(tokenizer, texts, max_length)
    pad = tokenizer.pad_token_id or 0

    def run(rows: np.ndarray) -> np.ndarray:
        ids, mask = pad_ids([tokenized.input_ids[r] for r in rows], pad)  # [B, T] each
        with torch.inference_mode():
            return graph(torch.from_numpy(ids), torch.from_numpy(mask)).float().numpy()  # [B, D]

    return lambda: map_batches(tokenized.lengths, run, batch, tokens)


def choose_kept(
    graph: nn.Module,
    groups: dict[str, tuple[str, ...]],
    runner: Callable[[Sequence[str]], Callable[[], np.ndarray]],
    texts: Sequence[str],
    gate: Gate,
    onnx_vectors: Callable[[tuple[str, ...]], np.ndarray],
    static: bool = False,
    progress: Progress = silent,
    ranking: int | None = None,
) -> Int8Choice:
    """The fewest modules to keep fp32 (most sensitive first) for the int8 graph to pass `gate` with its margin on
    `texts`. groups: ONNX module scope -> its nodes (quantize.linear_modules); runner(texts) -> a pass of the
    PyTorch graph; onnx_vectors(excluded nodes) -> the real int8 graph's vectors of `texts` (ONNX Runtime);
    ranking: how many of `texts` rank the modules (default SENSITIVITY_TEXTS)."""
    ranking = SENSITIVITY_TEXTS if ranking is None else ranking
    run_all = runner(texts)
    with input_ranges(graph, groups) as found:  # static int8's MinMax calibration ranges, from the fp32 pass
        reference = run_all()  # [N, D]
    ranges = dict(found) if static else None
    ranked = [Sensitivity(module, nodes, None) for module, nodes in groups.items()]
    trials: list[Trial] = []

    def emulated(count: int) -> bool:
        with fake_quantized(graph, [s.module for s in ranked[count:]], ranges):
            cosines = row_cosine(run_all(), reference)
        trials.append(_trial(count, cosines, gate, "pytorch"))
        progress(
            counting("searching modules kept fp32 (bisection)", "trials"),
            len(trials),
            math.ceil(math.log2(len(ranked) + 1)) + 1,
        )
        return trials[-1].passed

    low = 0
    if not emulated(0):  # every module int8 fails: rank them, then the fewest kept fp32 (all kept passes by definition)
        ranked = rank_modules(graph, groups, runner(texts[:ranking]), reference[:ranking], ranges, progress)
        low, high = 1, len(ranked)
        while low < high:
            middle = (low + high) // 2
            low, high = (low, middle) if emulated(middle) else (middle + 1, high)

    def real(count: int) -> bool:
        vectors = onnx_vectors(tuple(n for s in ranked[:count] for n in s.nodes))
        trials.append(_trial(count, row_cosine(vectors, reference), gate, "onnx"))
        return trials[-1].passed

    # the real graph decides: from the emulation's choice upwards in doubling steps until one passes (all fp32
    # passes by definition), then bisection between the last that failed and the first that passed
    failed, passing, count, step = low - 1, len(ranked), low, 1
    while count < passing:
        if real(count):
            passing = count
            break
        failed, count, step = count, min(passing, count + step), step * 2
    while passing - failed > 1:
        middle = (failed + passing) // 2
        failed, passing = (failed, middle) if real(middle) else (middle, passing)
    ranked_on = min(ranking, len(texts)) if ranked and ranked[0].mean_cosine is not None else 0
    return Int8Choice(tuple(ranked), passing, tuple(trials), ranked_on)


def _trial(count: int, cosines: np.ndarray, gate: Gate, where: str) -> Trial:
    return Trial(count, float(cosines.mean()), float(cosines.min()), passes_with_margin(gate, cosines), where)


def rank_modules(graph, groups, run_few, reference_few, ranges: Ranges | None, progress) -> list[Sensitivity]:
    """Each module group alone in int8 (emulated; static with `ranges`), most sensitive (lowest mean cosine to
    `reference_few`) first: one pass of `run_few` per group. The OpenVINO export ranks with it too."""
    found = []
    for i, (module, nodes) in enumerate(groups.items()):
        with fake_quantized(graph, [module], ranges):
            cosine = float(row_cosine(run_few(), reference_few).mean())
        found.append(Sensitivity(module, nodes, cosine))
        progress(counting("ranking modules (int8 emulated in PyTorch)", "module groups"), i + 1, len(groups))
    return sorted(found, key=lambda s: s.mean_cosine)


@dataclass(frozen=True)
class Smoothing:
    alpha: float  # 0: none
    scales: dict  # module -> its input channels' s (empty without smoothing)
    tried: dict[float, float]  # alpha -> the all-int8 graph's mean cosine to fp32 (emulated) on the choosing texts


def choose_smoothing(
    graph: nn.Module, names: list[str], fit: Callable[[], np.ndarray], check: Callable[[], np.ndarray], alphas=ALPHAS
) -> Smoothing:
    """The SmoothQuant alpha whose every-module-int8 graph is closest to fp32 (mean cosine, emulated) on `check`'s
    texts, with the scales measured on `fit`'s (other) texts: the choice sees how well the scales carry to texts
    they were not measured on. One calibration pass, then one emulated pass per alpha."""
    reference = check()
    calibration = calibrate(graph, names, fit)
    tried, scales_by = {}, {}
    for alpha in alphas:
        scales_by[alpha] = smoothing_scales(graph, calibration, alpha) if alpha else {}
        inner = [smoothed_name(n) for n in names] if alpha else names
        with smoothed(graph, scales_by[alpha]), fake_quantized(graph, inner):
            tried[alpha] = float(row_cosine(check(), reference).mean())
    best = max(tried, key=lambda a: (tried[a], -a))  # ties: the lighter smoothing
    return Smoothing(best, scales_by[best], tried)
