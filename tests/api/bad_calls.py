"""Bad calls of the Python API: each must raise one BertlensError in the caller's own words (the keyword, never a
command-line flag), before any model loads where no model is needed.

Shared by tests/api/test_bad_calls.py (asserts) and bench/bad_input_table.py (the table in docs/results-log.md).
A case is (name, call, expected substring); `call(inputs)` gets an `Inputs` (tmp, model, data).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import bertlens


@dataclass(frozen=True)
class Inputs:
    tmp: Path  # the files of tests/cli/bad_inputs.py: make_files
    model: Path  # a tiny BERT
    data: Path  # the shared data ($BERTLENS_DATA)


TEXTS = [f"a {w} film, take {n}" for w in ("warm", "dull", "sharp", "flat") for n in range(6)]
LABELS = ["pos", "neg", "pos", "neg"] * 6


def _sweep(**options):
    return lambda i: bertlens.sweep(**{"data_dir": str(i.data), **options})


def _recommend(**options):
    return lambda i: bertlens.recommend(**{"data_dir": str(i.data), "out": i.tmp / "py-rec", **options})


def _catalog(name: str, **keywords):
    from bertlens.tasks.catalog import get_task
    from bertlens.tasks.loaders import load_catalog_task

    return lambda i: load_catalog_task(get_task(name), i.data, **keywords)


def _run_sweep(**config):
    """The library function with a SweepConfig, on a classification task (its errors too are in Python's words)."""

    def call(i: Inputs):
        from bertlens.experiments.sweep import SweepConfig, run_sweep
        from bertlens.tasks.loaders import UserTable, load_user_task

        task = load_user_task(i.tmp / "ok.csv", UserTable(None, ("text",), "label"))
        return run_sweep(task, str(i.model), bertlens.Recipe(model=str(i.model)), i.tmp / "c", SweepConfig(**config))

    return call


def _embed(recipe_changes: dict, texts=("a text",)):
    def call(i: Inputs):
        recipe = bertlens.Recipe(model=str(i.model)).replace(**recipe_changes)
        return bertlens.Embedder(recipe).encode(texts if isinstance(texts, str) else list(texts))

    return call


CASES: list[tuple[str, Callable[[Inputs], object], str]] = [
    # bertlens.sweep: the options' own checks, before any model loads
    ("sweep without data", _sweep(), "give exactly one of task, data or texts"),
    ("sweep with two sources", _sweep(task="stsb", texts=TEXTS), "give exactly one of task, data or texts"),
    ("sweep max_examples=-1", _sweep(task="stsb", max_examples=-1), "max_examples must be at least 1"),
    ("sweep max_examples=2.5", _sweep(task="stsb", max_examples=2.5), "max_examples"),
    ("sweep max_examples=True", _sweep(task="stsb", max_examples=True), "max_examples"),
    ("sweep folds=1", _sweep(task="stsb", folds=1), "folds must be at least 2"),
    ("sweep resamples=5", _sweep(task="stsb", resamples=5), "resamples must be at least 20"),
    ("sweep seed=-1", _sweep(task="stsb", seed=-1), "seed must be between 0"),
    ("sweep seed=2**40", _sweep(task="stsb", seed=2**40), "seed must be between 0"),
    ("sweep max_length=1", _sweep(task="stsb", max_length=1), "max_length must be at least 2"),
    ("sweep precision='fp8'", _sweep(task="stsb", precision="fp8"), "precision must be one of fp32, bf16, auto"),
    ("sweep bank_dtype='int8'", _sweep(task="stsb", bank_dtype="int8"), "bank_dtype must be one of float16, float32"),
    ("sweep task_type='ranking'", _sweep(task="stsb", task_type="ranking"), "task_type must be one of"),
    ("sweep poolers='cls,nope'", _sweep(task="stsb", poolers="cls,nope"), "nope"),
    ("sweep poolers=''", _sweep(task="stsb", poolers=""), "poolers names no pooler"),
    ("sweep a misspelt keyword", _sweep(task="stsb", max_example=3), "unknown option 'max_example'"),
    ("sweep resamples=nan", _sweep(task="stsb", resamples=math.nan), "resamples must be a finite number"),
    ("sweep an unknown task", _sweep(task="stsbb"), "unknown task 'stsbb'"),
    ("sweep texts alone with prompts", _sweep(texts=TEXTS, prompts=["e5=query: |passage: "]), "texts takes texts"),
    ("sweep labels without texts", _sweep(task="stsb", labels=LABELS), "labels"),
    ("sweep labels of another length", _sweep(texts=TEXTS, labels=LABELS[:5]), "labels"),
    ("sweep a missing data file", lambda i: bertlens.sweep(data=i.tmp / "nope.csv"), "does not exist"),
    (
        "sweep an in-memory table with a blank text",
        _sweep(
            data={"text": ["good", " ", "bad", "fine"] * 5, "label": [1, 0, 0, 1] * 5},
            text_col="text",
            label_col="label",
        ),
        "the in-memory data: blank text in text_col 'text' on row 2",
    ),  # fmt: skip
    (
        "sweep an in-memory table without the named column",
        _sweep(data={"text": ["good", "bad"] * 10, "label": [1, 0] * 10}, text_col="review", label_col="label"),
        "review",
    ),
    (
        "sweep an in-memory table with a missing (NaN) text",
        _sweep(data={"t": ["good", math.nan, "bad", "fine"] * 5, "y": [1, 0, 0, 1] * 5}, text_col="t", label_col="y"),
        "blank text in text_col 't' on row 2",
    ),
    (
        "sweep an in-memory table with a number as text",
        _sweep(data={"t": ["good", 4, "bad", "fine"] * 5, "y": [1, 0, 0, 1] * 5}, text_col="t", label_col="y"),
        "row 2: column 't' holds int",
    ),
    (
        "sweep an in-memory table with a missing label",
        _sweep(
            data={"t": ["good", "ok", "bad", "fine"] * 5, "y": [1, math.nan, 0, 1] * 5}, text_col="t", label_col="y"
        ),
        "drop_invalid=True",
    ),
    (
        "sweep a latin-1 file",
        lambda i: bertlens.sweep(data=i.tmp / "latin-1.csv", text_col="text", label_col="label"),
        "pass encoding='latin-1'",
    ),
    (
        "sweep delimiter='colon'",
        lambda i: bertlens.sweep(data=i.tmp / "ok.csv", text_col="text", label_col="label", delimiter="colon"),
        "delimiter 'colon'",
    ),  # fmt: skip
    (
        "sweep folds=10 on a class of 6 rows",
        lambda i: bertlens.sweep(data=i.tmp / "small-class.csv", text_col="text", label_col="label", folds=10),
        "lower folds or leave it out",
    ),
    ("run_sweep long_documents on classification", _run_sweep(long_documents=True), "long_documents applies"),
    ("sweep a bad prompt set", _sweep(task="cranfield", prompts=["e5"]), "e5"),
    ("sweep a bad long_text", _sweep(task="stsb", long_text="middle", model="{model}"), "middle"),
    # bertlens.recommend
    ("recommend budget_minutes=0", _recommend(task="sst2", budget_minutes=0), "budget_minutes must be positive"),
    (
        "recommend budget_minutes=nan",
        _recommend(task="sst2", budget_minutes=math.nan),
        "budget_minutes must be a finite",
    ),
    ("recommend latency_budget_ms=-5", _recommend(task="sst2", latency_budget_ms=-5), "latency_budget_ms must be"),
    ("recommend throughput_target='fast'", _recommend(task="sst2", throughput_target="fast"), "throughput_target"),
    ("recommend folds=1", _recommend(task="sst2", folds=1), "folds must be at least 2"),
    ("recommend seed=-3", _recommend(task="sst2", seed=-3), "seed must be between 0"),
    ("recommend a misspelt keyword", _recommend(task="sst2", budget=3), "unknown option 'budget'"),
    ("recommend labels without texts", _recommend(task="sst2", labels=LABELS), "labels goes with texts"),
    ("recommend no source", _recommend(), "give exactly one of task, data or texts"),
    # the loaders
    ("load_catalog_task max_examples=-1", _catalog("trec", max_examples=-1), "max_examples must be at least 1"),
    ("load_catalog_task folds=1", _catalog("trec", folds=1), "folds"),
    ("load_catalog_task seed=-1", _catalog("trec", seed=-1), "seed"),
    ("get_task of an unknown name", lambda i: bertlens.get_task("nope"), "unknown task 'nope'"),
    # Recipe and Embedder
    ("Recipe pooler='nope'", lambda i: bertlens.Recipe(pooler="nope"), "nope"),
    ("Recipe mixer='nope'", lambda i: bertlens.Recipe(mixer="nope"), "nope"),
    ("Recipe precision='fp8'", lambda i: bertlens.Recipe(precision="fp8"), "fp8"),
    ("Recipe max_length=1", lambda i: bertlens.Recipe(max_length=1), "max_length"),
    ("Recipe.load of a missing file", lambda i: bertlens.Recipe.load(i.tmp / "nope.json"), "nope.json"),
    ("Recipe.load of broken JSON", lambda i: bertlens.Recipe.load(i.tmp / "recipe-bad-json.json"), "recipe-bad-json"),
    ("Recipe.load with an unknown field", lambda i: bertlens.Recipe.load(i.tmp / "recipe-unknown-field.json"), "poolr"),
    ("Embedder of a missing model", _embed({"model": "/no/such/model"}), "/no/such/model"),
    ("Embedder layers beyond the model", _embed({"layers": (7,)}), "layer"),
    ("Embedder.encode of a non-string", _embed({}, texts=("fine", 3)), "texts[1] is a int, not a string"),
    ("Embedder.encode of one string (not a list)", _embed({}, texts="a text"), "texts is one string"),
    ("Embedder.encode of None inside", _embed({}, texts=("fine", None)), "texts[1] is a NoneType"),
    # bertlens.embed, index, search, export, probe
    ("embed no input", lambda i: bertlens.embed(), "input is required"),
    ("embed a list holding a number", lambda i: bertlens.embed(["fine", 3]), "input must be a file path or a list"),
    ("embed a missing file", lambda i: bertlens.embed(i.tmp / "nope.txt"), "nope.txt"),
    ("embed shard_size=0", lambda i: bertlens.embed(["a"], shard_size=0), "shard_size must be at least 1"),
    ("embed empty='drop'", lambda i: bertlens.embed(["a"], empty="drop"), "empty must be one of error, skip, keep"),
    ("embed out a directory", lambda i: bertlens.embed(["a"], out=i.tmp / "outdir.npy"), "is a directory"),
    ("embed out .csv", lambda i: bertlens.embed(["a"], out=i.tmp / "v.csv"), "unsupported extension"),
    ("embed an empty text", lambda i: bertlens.embed(["a", " "], model=str(i.model)), "set empty to skip"),
    ("embed a list with a column", lambda i: bertlens.embed(["a"], column="text"), "has no column"),
    (
        "embed backend onnx with a pooler",
        lambda i: bertlens.embed(["a"], backend="onnx", pooler="cls"),
        "leave out pooler",
    ),
    ("embed a recipe with prompts, no role", lambda i: bertlens.embed(["a"], query_prompt="q: "), "role query"),
    ("index no data", lambda i: bertlens.index(out=str(i.tmp / "s")), "data is required"),
    (
        "index both out and store",
        lambda i: bertlens.index(data=["a"], out="s", store="chroma://h:1/c"),
        "exactly one of",
    ),
    ("index batch=0", lambda i: bertlens.index(data=["a"], out=str(i.tmp / "s"), batch=0), "batch must be at least 1"),
    ("index a blank document", lambda i: bertlens.index(data=["a", " "], out=str(i.tmp / "s")), "drop_invalid"),
    (
        "index a .txt with a text_col",
        lambda i: bertlens.index(data=i.tmp / "ok.txt", text_col="t", out="s"),
        "text_col",
    ),
    ("search no index", lambda i: bertlens.search(query="a"), "index is required"),
    ("search top_k=0", lambda i: bertlens.search(index="s", query="a", top_k=0), "top_k must be at least 1"),
    ("search no query", lambda i: bertlens.search(index="s"), "no query to search: give query or queries"),
    ("search a query that is a number", lambda i: bertlens.search(index="s", query=[3]), "query must be a text"),
    ("search out .csv", lambda i: bertlens.search(index="s", query="a", out="hits.csv"), "use one of .json, .parquet"),
    (
        "search of a folder that is no index",
        lambda i: bertlens.search(index=str(i.tmp / "not-an-index"), query="a"),
        "holds no bertlens index",
    ),
    ("export no format", lambda i: bertlens.export(out="x"), "format is required"),
    (
        "export quantize for sentence-transformers",
        lambda i: bertlens.export(format="sentence-transformers", out="x", quantize="int8"),
        "format onnx or openvino only",
    ),
    ("export gate_min=2", lambda i: bertlens.export(format="onnx", out="x", gate_min=2.0), "gate_min is a cosine"),
    ("probe tasks=''", lambda i: bertlens.probe(tasks=""), "tasks is empty"),
    ("probe an unknown task", lambda i: bertlens.probe(tasks="upso"), "unknown probing task 'upso'"),
    ("probe subword='middle'", lambda i: bertlens.probe(subword="middle"), "subword must be one of"),
    ("probe resamples=5", lambda i: bertlens.probe(resamples=5), "resamples must be at least"),
]
