"""bertlens: measure which representation of a BERT-family encoder fits a task, then serve it fast.

The public API for a notebook: embed with a recipe, run a sweep and read its result, build a
feature bank, fit post-processing. Names load on first use, so `import bertlens` (and
`bertlens --help`) stays quick; heavy libraries load only when something runs.

    import bertlens
    run = bertlens.sweep(task="stsb", max_examples=300)   # the keywords are `bertlens sweep`'s long flags
    run.recipe, run.to_pandas(), run.plot(), run.save("out/stsb")
    vectors = bertlens.embed(["a text", "another"], recipe="out/stsb/recipe.json").vectors
    bertlens.index(data="corpus.jsonl", text_col="text", id_col="id", recipe="out/stsb/recipe.json", out="store")
    bertlens.search(index="store", query="a question", top_k=5).to_pandas()

    from bertlens import Embedder, Recipe, run_sweep, load_catalog_task
"""

from __future__ import annotations

import importlib

from bertlens.errors import BertlensError
from bertlens.version import __version__

_EXPORTS = {
    "sweep": "bertlens.api.sweep",
    "SweepOptions": "bertlens.api.sweep",
    "SweepRun": "bertlens.api.sweep",
    "recommend": "bertlens.api.recommend",
    "embed": "bertlens.api.embed",
    "EmbedOptions": "bertlens.api.embed",
    "EmbedRun": "bertlens.api.embed",
    "index": "bertlens.api.index",
    "IndexOptions": "bertlens.api.index",
    "IndexRun": "bertlens.api.index",
    "export": "bertlens.api.export",
    "ExportOptions": "bertlens.api.export",
    "ExportRun": "bertlens.api.export",
    "compare": "bertlens.api.compare",
    "CompareOptions": "bertlens.api.compare",
    "CompareRun": "bertlens.api.compare",
    "finetune": "bertlens.api.finetune",
    "FinetuneOptions": "bertlens.api.finetune",
    "FinetuneRun": "bertlens.api.finetune",
    "contrastive": "bertlens.api.contrastive",
    "ContrastiveOptions": "bertlens.api.contrastive",
    "ContrastiveRun": "bertlens.api.contrastive",
    "distill": "bertlens.api.distill",
    "DistillOptions": "bertlens.api.distill",
    "DistillRun": "bertlens.api.distill",
    "domain": "bertlens.api.domain",
    "DomainOptions": "bertlens.api.domain",
    "DomainRun": "bertlens.api.domain",
    "longdoc": "bertlens.api.longdoc",
    "LongdocOptions": "bertlens.api.longdoc",
    "LongdocRun": "bertlens.api.longdoc",
    "geometry": "bertlens.api.geometry",
    "GeometryOptions": "bertlens.api.geometry",
    "GeometryRun": "bertlens.api.geometry",
    "postprocess": "bertlens.api.postprocess",
    "PostprocessOptions": "bertlens.api.postprocess",
    "PostprocessRun": "bertlens.api.postprocess",
    "pretrain": "bertlens.api.pretrain",
    "PretrainOptions": "bertlens.api.pretrain",
    "PretrainRun": "bertlens.api.pretrain",
    "probe": "bertlens.api.probe",
    "ProbeOptions": "bertlens.api.probe",
    "ProbeRun": "bertlens.api.probe",
    "serve": "bertlens.api.serve",
    "ServeCommandOptions": "bertlens.api.serve",
    "Server": "bertlens.api.serve",
    "search": "bertlens.api.search",
    "data": "bertlens.api.data",
    "DataCommandOptions": "bertlens.api.data",
    "SearchOptions": "bertlens.api.search",
    "SearchRun": "bertlens.api.search",
    "RecommendOptions": "bertlens.api.recommend",
    "RecommendRun": "bertlens.api.recommend",
    "Embedder": "bertlens.embedding.embedder",
    "Encoder": "bertlens.encoding.encoder",
    "LayerStates": "bertlens.encoding.encoder",
    "ModelRef": "bertlens.models",
    "resolve_model": "bertlens.models",
    "Recipe": "bertlens.representation.recipe",
    "Representation": "bertlens.representation.apply",
    "ScalarMix": "bertlens.representation.mixers",
    "PostProcessor": "bertlens.representation.postprocess",
    "Bank": "bertlens.features.bank",
    "build_bank": "bertlens.features.bank",
    "run_sweep": "bertlens.experiments.sweep",
    "SweepConfig": "bertlens.experiments.sweep",
    "SweepResult": "bertlens.experiments.sweep",
    "TaskData": "bertlens.tasks.loaders",
    "load_catalog_task": "bertlens.tasks.loaders",
    "load_user_task": "bertlens.tasks.loaders",
    "UserTable": "bertlens.tasks.loaders",
    "TaskKind": "bertlens.tasks.kinds",
    "task_kind": "bertlens.tasks.kinds",
    "RunContext": "bertlens.io.run_context",
    "BackendSpec": "bertlens.embedding.backends",
    "make_encoder": "bertlens.embedding.backends",
    "data_dir": "bertlens.tasks.catalog",
    "get_task": "bertlens.tasks.catalog",
    "fine_tune": "bertlens.training.loop",
    "TrainConfig": "bertlens.training.config",
}

__all__ = ["BertlensError", "__version__", *_EXPORTS]


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'bertlens' has no attribute '{name}'")
