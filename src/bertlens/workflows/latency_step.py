"""Step 5 of `recommend`: time the recipe (fp32, bf16 where native), its own gated ONNX int8 export and each
--alternatives on the user's texts -> what to serve, by a pure rule (`serving_choice`). An export directory is
timed on every installed runtime that runs it: ONNX Runtime, and OpenVINO with the `openvino` extra."""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from bertlens.embedding.backends import BackendSpec, make_encoder
from bertlens.embedding.embedder import Embedder
from bertlens.embedding.speed import timing
from bertlens.encoding.precision import native_bf16
from bertlens.errors import BertlensError
from bertlens.progress import Progress, silent
from bertlens.representation.recipe import Recipe
from bertlens.workflows.decision import Decision


@dataclass(frozen=True)
class Alternative:
    """Something faster to serve than the recipe itself: an export directory on one runtime, or a (distilled) recipe
    file."""

    label: str
    path: Path
    fidelity: str  # what its own record says about its agreement with the recipe it replaces
    backend: str = "torch"  # onnx, openvino: an `export` directory run by that runtime; torch: a recipe file
    on_openvino: tuple[str, str] | None = None  # (precision, fidelity) of an export's IR when it differs from ONNX's

    @property
    def onnx(self) -> bool:
        """An export directory (whichever runtime runs it)."""
        return self.backend != "torch"

    def embedder(self):
        if self.onnx:
            return make_encoder(BackendSpec(self.backend, model_dir=self.path))
        return make_encoder(BackendSpec("torch", Recipe.load(self.path)))

    def on_runtimes(self) -> tuple[Alternative, ...]:
        """This alternative on every installed runtime: an export also on OpenVINO (the same graph) when the
        `openvino` extra is installed."""
        from bertlens.extras import has_extra

        if self.backend != "onnx" or not has_extra("openvino"):
            return (self,)
        precision, fidelity = self.on_openvino or (None, f"{self.fidelity}; the same graph, run by OpenVINO")
        label = self.label.replace("onnx", "openvino", 1)
        if precision is not None:
            label = f"openvino {precision} ({self.path.name})"
        return self, replace(self, label=label, backend="openvino", fidelity=fidelity, on_openvino=None)


def load_alternative(path: Path) -> Alternative:
    """An export directory (export.json checked) or a recipe (a distill output directory or its recipe.json)."""
    path = Path(path)
    if (path / "export.json").is_file():
        from bertlens.embedding.onnx_backend import read_export

        record = read_export(path)
        int8 = record.get("int8")
        precision = "int8" if int8 else "fp32"
        fidelity = (
            f"mean cosine {int8['mean_cosine']:.4f}, min {int8['min_cosine']:.4f} to fp32"
            if int8
            else "parity with bertlens fp32 checked at export"
        )
        ir = record.get("openvino_int8") or (record if record.get("openvino_precision") == "bf16" else None)
        on_openvino = None
        if ir is not None:  # the IR computes otherwise than model.onnx: int8 by NNCF, or bf16
            measured = ir.get("openvino_parity", ir)
            on_openvino = ("int8" if "openvino_int8" in record else "bf16",
                           f"mean cosine {measured['mean_cosine']:.4f}, min {measured['min_cosine']:.4f} to fp32")  # fmt: skip
        return Alternative(f"onnx {precision} ({path.name})", path, fidelity, "onnx", on_openvino)
    recipe_file = path / "recipe.json" if path.is_dir() else path
    if not recipe_file.is_file():
        raise BertlensError(
            f"--alternatives: {path} is neither an ONNX export (export.json) nor a recipe; give an `export` output "
            "directory, a `distill` output directory or a recipe .json"
        )
    Recipe.load(recipe_file)  # validated now, not after the other steps
    fidelity = "no fidelity record"
    record_file = recipe_file.parent / "distill.json"
    if record_file.is_file():
        try:
            measured = json.loads(record_file.read_text())["fidelity"]
            fidelity = f"mean cosine {measured['mean_cosine']:.4f} to its teacher on held-out texts"
        except (ValueError, KeyError, TypeError):
            raise BertlensError(f"{record_file}: unreadable distill record; distil again") from None
    return Alternative(f"recipe {recipe_file.parent.name}/{recipe_file.name}", recipe_file, fidelity)


INT8_TEXTS = 64  # of the user's texts calibrate the int8 export: half choose what stays fp32, half judge the gate
INT8_EXTRA_PASSES = 6  # beyond ranking and search: the reference, one or two real int8 graphs, parity and the judging
EXPORT_SECONDS_PER_LAYER = 4.0  # writing the ONNX graph twice (fp32, then smoothed): 1.7 s a layer each, 2 EPYC cores


@dataclass(frozen=True)
class Int8Plan:
    seconds: float  # the own int8 export's planned time
    trial_seconds: float  # one fp32 pass of the recipe over the texts that choose, as measured
    passes: int  # passes of that size the export makes

    def describe(self) -> str:
        return (
            f"about {self.seconds:.0f} s planned from a measured trial ({self.passes} passes of "
            f"{self.trial_seconds:.2f} s each, and the graph's export)"
        )


def plan_int8(recipe: Recipe, texts: list[str]) -> Int8Plan:
    """The own int8 export's time from a trial on the user's texts: one fp32 pass of the recipe over the texts that
    will choose, times the passes the export makes over them (one per linear module to rank them, about log2 of
    that to search, a few more: embedding/int8_choice.py; an upper bound, as ranking is skipped when every module
    passes in int8), plus the graph's two exports, which grow with depth."""
    from torch import nn

    embedder = Embedder(recipe.replace(precision="fp32"))
    choose = list(dict.fromkeys(texts))[: INT8_TEXTS // 2]
    embedder.encode(choose[:2])  # warm-up: the first pass pays one-time costs
    start = time.perf_counter()
    embedder.encode(choose)
    trial = time.perf_counter() - start
    modules = sum(isinstance(m, nn.Linear) for m in embedder.encoder.model.modules())
    passes = modules + math.ceil(math.log2(modules + 1)) + INT8_EXTRA_PASSES
    return Int8Plan(EXPORT_SECONDS_PER_LAYER * embedder.encoder.num_layers + passes * trial, trial, passes)


def own_int8(
    recipe: Recipe, texts: list[str], out: Path, progress: Progress = silent
) -> tuple[Alternative | None, str]:
    """The recipe exported to ONNX int8 behind the fidelity gate, judged on the user's own texts (written to `out`),
    or None and why not (a recipe ONNX cannot express, a gate refusal)."""
    from bertlens.experiments.export import Int8Options, run_export_onnx

    sample = list(dict.fromkeys(texts))[:INT8_TEXTS]
    try:
        run_export_onnx(recipe, out, sample[:16], "your texts", int8=Int8Options(calibration=sample), progress=progress)
    except BertlensError as error:
        return None, f"own ONNX int8 not offered: {error}"
    return load_alternative(out), ""


@dataclass(frozen=True)
class Timing:
    label: str  # "fp32", "bf16" (the recipe itself) or an alternative's label
    texts_per_s: float
    ms_one_text: float
    own: bool  # the recipe itself (full fidelity) rather than an alternative
    fidelity: str = ""


def serving_choice(timings: list[Timing], budget_ms: float | None, target: float | None) -> Timing | None:
    """The recipe itself at its fastest precision meeting the budget; else the fastest alternative meeting it;
    None when nothing does. Full fidelity comes first: an alternative only when the recipe cannot serve."""
    meets = [
        t
        for t in timings
        if (budget_ms is None or t.ms_one_text <= budget_ms) and (target is None or t.texts_per_s >= target)
    ]
    pool = [t for t in meets if t.own] or meets
    return max(pool, key=lambda t: t.texts_per_s) if pool else None


def step_latency(
    recipe: Recipe,
    texts: list[str],
    budget_ms: float | None,
    target: float | None,
    alternatives: tuple[Alternative, ...] = (),
    int8_out: Path | None = None,
    progress: Progress = silent,
    int8_plan: str = "",
) -> Decision:
    """Time the recipe at fp32 and (where native) bf16, then (with `int8_out`) its own gated ONNX int8 export, then
    each alternative, on the user's texts."""
    sample = texts[: 32 if recipe.long_text else 256]  # a long-text recipe reads every window: fewer documents
    int8_note = int8_plan  # what was planned for the own int8 export (or why it was skipped), for the evidence
    if int8_out is not None:
        start = time.perf_counter()
        int8, refused = own_int8(recipe, texts, int8_out, progress)
        alternatives = ((int8,) if int8 else ()) + tuple(alternatives)
        took = f"own ONNX int8 exported and gated on your texts in {time.perf_counter() - start:.0f} s"
        int8_note = refused or took + (f" ({int8_plan.removeprefix('own ONNX int8: ')})" if int8_plan else "")
    alternatives = tuple(twin for alternative in alternatives for twin in alternative.on_runtimes())
    precisions = ["fp32"] + (["bf16"] if native_bf16()[0] else [])
    own = [make_encoder(BackendSpec("torch", recipe.replace(precision=p))) for p in precisions]
    timings = [Timing(p, *timing(embedder, sample), own=True) for p, embedder in zip(precisions, own)]
    timings += [Timing(a.label, *timing(a.embedder(), sample), own=False, fidelity=a.fidelity) for a in alternatives]
    evidence = "; ".join(
        f"{t.label}: {t.texts_per_s:,.0f} texts/s, {t.ms_one_text:.1f} ms for one text"
        + (f" ({t.fidelity})" if t.fidelity else "")
        for t in timings
    )
    evidence += f" ({len(sample)} of your texts, {torch.get_num_threads()} threads)"
    if len(precisions) == 1:
        evidence += "; bf16 skipped: " + native_bf16()[1]
    if int8_note:
        evidence += "; " + int8_note
    if budget_ms is not None or target is not None:
        evidence += f"; budget: {budget_ms or 'any'} ms per text, {target or 'any'} texts/s"
    rule = (
        "serve the recipe itself at the precision with the most texts/s among those meeting the budget (bf16 "
        "vectors match fp32 to min cosine >= 0.9999, docs/results-log.md); only when none does, the fastest "
        "alternative (an ONNX or int8 export on ONNX Runtime or OpenVINO, a distilled student) that meets it"
    )
    best = serving_choice(timings, budget_ms, target)
    if best is not None and best.own:
        return Decision(
            "latency",
            f"serve at {best.label}",
            evidence,
            rule,
            "measured",
            ("bertlens serve --recipe OUT/recipe.json",),
            {"precision": best.label},
        )
    if best is not None:
        alt = next(a for a in alternatives if a.label == best.label)
        serve = (
            f"bertlens serve --backend {alt.backend} --model {alt.path}"
            if alt.onnx
            else f"bertlens serve --recipe {alt.path}"
        )
        return Decision(
            "latency", f"serve {best.label}: the recipe itself misses the budget", evidence, rule, "measured", (serve,)
        )
    distil = "bertlens distill --teacher OUT/recipe.json --student layers:3 --texts TEXTS --out OUT/student"
    if int8_out is not None:  # int8 was tried here: timed above, or refused with the reason in the evidence
        return Decision(
            "latency",
            "too slow for the budget, int8 included: distil a smaller student",
            evidence,
            rule,
            "measured",
            (distil,),
        )
    return Decision(
        "latency",
        "too slow for the budget: distil a smaller student, or export to ONNX int8 behind the fidelity gate",
        evidence,
        rule,
        "measured",
        (distil, "bertlens export --format onnx --quantize int8 --recipe OUT/recipe.json --out export/int8"),
    )
