"""recommend on a user CSV with a tiny model: five decisions with evidence, a recipe `Embedder` loads, a
long-text strategy for long texts, the domain step saying what it could not measure, the fine-tuning rule,
and a rerun that resumes from the finished steps."""

from __future__ import annotations

import csv
import json
from dataclasses import replace

import numpy as np
import pytest

import bertlens.workflows.fine_tune_step as fine_tune_step
import bertlens.workflows.latency_step as latency_step
import bertlens.workflows.length_step as length_step
import bertlens.workflows.representation_step as representation_step
from bertlens.embedding.embedder import Embedder
from bertlens.io.run_context import RunContext
from bertlens.reports.recommend import markdown as recommend_markdown
from bertlens.reports.recommend import write_outputs
from bertlens.representation.recipe import Recipe
from bertlens.tasks.loaders import UserTable, load_user_task
from bertlens.tasks.splits import with_test_split
from bertlens.workflows.decision import Budget
from bertlens.workflows.fine_tune_step import FROZEN, TUNE, fine_tune_choice
from bertlens.workflows.recommend import RecommendOptions, _int8_plan, run_recommend
from tests.conftest import DATA
from tests.reports.chromium import CHROMIUM, assert_report_renders


def _csv(path, texts, labels):
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        writer.writerows(zip(texts, labels, strict=True))
    return load_user_task(path, UserTable("classification", (0,), 1), folds=5, seed=0)


def test_fine_tune_choice_follows_the_measured_difference():
    assert fine_tune_choice(np.array([0.05, 0.06, 0.04]), 200) == (TUNE, "measured")
    assert fine_tune_choice(np.array([-0.02, 0.0]), 5000) == (FROZEN, "measured")
    choice, confidence = fine_tune_choice(np.array([0.03, -0.01]), 200)
    assert choice == FROZEN and confidence.startswith("rule of thumb")
    assert fine_tune_choice(np.array([0.03, -0.01]), 5000)[0] == TUNE


def test_the_sweep_sample_is_planned_from_the_time_left():
    plan = representation_step.planned_examples
    assert plan(0.001, 3600) == representation_step.SWEEP_EXAMPLES  # plenty of time: the full sample
    assert plan(0.1, 1000) == 1000  # 40% of 1000 s at 4x the trial's 0.1 s an example
    assert plan(0.1, 10) == plan(0.1, -50) == representation_step.MIN_SWEEP_EXAMPLES  # never below the floor


def test_recommend_on_200_labelled_rows(tiny_bert_dir, tmp_path, monkeypatch):
    lines = (DATA / "sst2" / "train.txt").read_text().splitlines()[:200]
    task = _csv(tmp_path / "d.csv", [ln.split(" ", 1)[1] for ln in lines], [ln[0] for ln in lines])
    result = run_recommend(task, str(tiny_bert_dir), RunContext(tmp_path / "out"), RecommendOptions(10))
    steps = [d.step for d in result.decisions]
    assert steps == ["text length", "domain", "representation", "frozen or fine-tuned", "latency"]
    assert all(d.evidence and d.rule and d.confidence for d in result.decisions)
    assert "planned from a trial" in result.decisions[2].evidence  # the sweep's sample is sized to the budget
    few = result.decisions[2].evidence  # 200 labels: is the choice settled? (draws of 25-100 from them)
    assert "labels: choices from fewer labels" in few and ("label more" in few or "settled" in few)
    domain = result.decisions[1]
    assert "could not" in domain.confidence or "cannot be measured" in domain.confidence  # no masked-LM head
    tuned = result.decisions[3]
    assert tuned.decision in (TUNE, FROZEN) and "paired difference" in tuned.evidence
    assert "own ONNX int8 exported and gated on your texts" in result.decisions[4].evidence  # and timed with the rest
    assert (tmp_path / "out" / "onnx-int8" / "export.json").is_file()
    import bertlens.workflows.recommend as recommend_module

    timed = []  # the latency step times and calibrates on the first texts it gets: a seeded draw, not the file's head
    step = recommend_module.step_latency
    monkeypatch.setattr(
        recommend_module, "step_latency", lambda r, texts, *a: timed.append(texts) or step(r, texts, *a)
    )
    rerun = run_recommend(task, str(tiny_bert_dir), RunContext(tmp_path / "out"), RecommendOptions(10, own_int8=False))
    assert sorted(timed[0]) == sorted(task.all_texts()) and timed[0][:20] != task.all_texts()[:20]
    assert [d.evidence for d in rerun.decisions[:4]] == [d.evidence for d in result.decisions[:4]]  # resumed
    assert "own ONNX int8" not in rerun.decisions[4].evidence  # the latency step's settings changed: measured again
    paths = write_outputs(result, tmp_path / "out")
    Embedder(Recipe.load(paths["recipe"])).encode(["a recipe users can embed with"])
    assert "<table>" in paths["html"].read_text() and "## Decisions" in paths["report"].read_text()
    if CHROMIUM:  # the front page: the decision table first
        page = assert_report_renders(paths["html"], "bertlens recommend", ("step", "decision"), tmp_path, "recommend")
        assert page["tables"][0] == ["step", "decision", "how sure", "seconds"]

    def no_more_sweeps(*args, **kwargs):
        raise AssertionError("a finished step ran again")

    monkeypatch.setattr(representation_step, "run_sweep", no_more_sweeps)
    monkeypatch.setattr(fine_tune_step, "run_compare", no_more_sweeps)
    again = run_recommend(task, str(tiny_bert_dir), RunContext(tmp_path / "out"), RecommendOptions(10))
    assert [d.decision for d in again.decisions[:4]] == [d.decision for d in result.decisions[:4]]
    assert [d.seconds for d in again.decisions[:4]] == [d.seconds for d in result.decisions[:4]]  # kept, not re-timed
    if sum(d.seconds for d in again.decisions) > again.seconds + 1:
        assert "it reused finished steps" in recommend_markdown(again)


def test_long_texts_get_a_long_text_strategy(tiny_bert_dir, tmp_path):
    rng = np.random.default_rng(0)
    words = ["film", "story", "actor", "plot", "scene", "music", "great", "dull"]
    texts = [" ".join(rng.choice(words, 400)) for _ in range(30)]
    task = _csv(tmp_path / "long.csv", texts, [i % 2 for i in range(30)])
    from bertlens.encoding.encoder import Encoder

    decision = length_step.step_lengths(task, Encoder(str(tiny_bert_dir)), 0, measure=False)
    assert "windows" in decision.decision and decision.recipe_changes == {"long_text": "windows:mean"}
    assert "100.0% over the model's limit" in decision.evidence
    assert decision.confidence.startswith("rule of thumb: only 30 labelled documents")
    json.dumps(decision.recipe_changes)


def test_long_documents_whose_label_sits_at_the_end_get_a_measured_strategy_that_reads_it(tiny_bert_dir, tmp_path):
    """The label is a run of one word at the end of 300 filler words: truncation cannot see it, so the measured
    comparison must choose head+tail or windows, and say it measured."""
    rng = np.random.default_rng(0)
    filler = ["film", "story", "actor", "plot", "scene", "music"]
    labels = [i % 2 for i in range(60)]
    texts = [" ".join([*rng.choice(filler, 300), *(["wonderful" if y else "terrible"] * 20)]) for y in labels]
    task = _csv(tmp_path / "tail.csv", texts, labels)
    from bertlens.encoding.encoder import Encoder

    decision = length_step.step_lengths(task, Encoder(str(tiny_bert_dir)), 0)
    assert decision.confidence == "measured", decision
    assert decision.recipe_changes.get("long_text") in ("head_tail:32", "windows:mean"), decision
    assert "head " in decision.evidence and "out-of-fold accuracy" in decision.evidence


def test_serving_choice_prefers_the_recipe_itself_then_the_fastest_alternative():
    fp32 = latency_step.Timing("fp32", 100.0, 12.0, own=True)
    bf16 = latency_step.Timing("bf16", 250.0, 6.0, own=True)
    int8 = latency_step.Timing("onnx int8", 400.0, 3.0, own=False)
    student = latency_step.Timing("recipe student", 300.0, 4.0, own=False)
    rows = [fp32, bf16, int8, student]
    assert latency_step.serving_choice(rows, None, None) == bf16  # the recipe meets "no budget": full fidelity first
    assert latency_step.serving_choice(rows, 10.0, None) == bf16
    assert latency_step.serving_choice(rows, 5.0, None) == int8  # the recipe misses 5 ms: fastest alternative
    assert latency_step.serving_choice(rows, None, 350.0) == int8
    assert latency_step.serving_choice(rows, 1.0, None) is None


def test_fine_tuning_is_sized_to_the_budget():
    train = fine_tune_step.TRAIN
    costs = fine_tune_step.Costs(forward=0.002, train_example=0.014, dev=500, test=1000)
    cost = {n: fine_tune_step.fine_tune_seconds(n, costs, train) for n in (64, 500, 2000)}
    assert cost[2000] > cost[500] > 0
    assert cost[64] > 0.5 * cost[500]  # tiny sets run more epochs (min_steps), each scoring dev: small is not cheap
    assert fine_tune_step.affordable_size(2000, costs, train, cost[2000]) == 2000
    assert fine_tune_step.affordable_size(2000, costs, train, cost[2000] - 1) < 2000
    assert fine_tune_step.affordable_size(2000, costs, train, 1.0) == 0


def test_the_cost_trial_times_real_training_steps(tiny_bert_dir, tmp_path):
    lines = (DATA / "sst2" / "train.txt").read_text().splitlines()[:300]
    task = _csv(tmp_path / "d.csv", [ln.split(" ", 1)[1] for ln in lines], [ln[0] for ln in lines])
    task = with_test_split(task, 0)
    costs = fine_tune_step.measure_costs(
        task, str(tiny_bert_dir), Recipe(model=str(tiny_bert_dir)), fine_tune_step.TRAIN, 0
    )
    assert 0 < costs.forward < 1 and 0 < costs.train_example < 1
    assert costs.train_example > costs.forward  # a training example is a forward pass and more
    assert costs.test == 60 and costs.dev > 0


def test_no_cost_trial_when_even_its_lower_bound_does_not_fit_the_budget(tiny_bert_dir, tmp_path, monkeypatch):
    """A nearly spent budget: the step says so from the forward cost alone, without spending more on the trial."""
    lines = (DATA / "sst2" / "train.txt").read_text().splitlines()[:300]
    task = _csv(tmp_path / "d.csv", [ln.split(" ", 1)[1] for ln in lines], [ln[0] for ln in lines])

    def no_trial(*args, **kwargs):
        raise AssertionError("the cost trial ran on a spent budget")

    monkeypatch.setattr(fine_tune_step, "measure_costs", no_trial)
    model = str(tiny_bert_dir)
    decision = fine_tune_step.fine_tune_or_rule(
        task, model, Recipe(model=model), tmp_path, 0, Budget(61.0), lambda *a: None
    )
    assert decision.confidence.startswith("rule of thumb: not measured") and "cost trial" in decision.confidence
    floor = fine_tune_step.least_seconds(0.002, 500, 1000, fine_tune_step.TRAIN)
    real = fine_tune_step.Costs(forward=0.002, train_example=0.014, dev=500, test=1000)
    assert 0 < floor < fine_tune_step.fine_tune_seconds(64, real, fine_tune_step.TRAIN)  # a lower bound


def test_alternatives_are_checked_before_measuring(tmp_path, tiny_bert_dir):

    from bertlens.errors import BertlensError

    with pytest.raises(BertlensError, match="neither an ONNX export"):
        latency_step.load_alternative(tmp_path)
    Recipe(model=str(tiny_bert_dir)).save(tmp_path / "student" / "recipe.json")
    (tmp_path / "student" / "distill.json").write_text(json.dumps({"fidelity": {"mean_cosine": 0.97}}))
    alt = latency_step.load_alternative(tmp_path / "student")
    assert "0.9700" in alt.fidelity and not alt.onnx and alt.embedder().encode(["a text"]).shape[0] == 1

    from bertlens.experiments.export import run_export_onnx

    run_export_onnx(Recipe(model=str(tiny_bert_dir)), tmp_path / "onnx", ["a text", "another text"], "t")
    exported = latency_step.load_alternative(tmp_path / "onnx")
    assert exported.onnx and exported.label.startswith("onnx fp32") and "parity" in exported.fidelity
    timing = latency_step.step_latency(
        Recipe(model=str(tiny_bert_dir)), ["a text", "another one"] * 20, 1e-6, None, (alt, exported)
    )
    assert "onnx fp32" in timing.evidence and timing.decision.startswith("too slow")  # nothing meets 1 ns
    from bertlens.extras import has_extra

    if has_extra("openvino"):  # the export is timed on every installed runtime, and the fastest is served with its own
        assert "openvino fp32" in timing.evidence and "run by OpenVINO" in timing.evidence
        roomy = latency_step.step_latency(Recipe(model=str(tiny_bert_dir)), ["a text"] * 4, None, None, (exported,))
        assert roomy.decision.startswith("serve at")  # the recipe itself comes first when it meets the budget
        assert [a.backend for a in exported.on_runtimes()] == ["onnx", "openvino"]


@pytest.mark.extended  # the labelled recommend run above makes and times the int8 by default
def test_the_latency_step_exports_gates_and_times_its_own_int8(tmp_path, tiny_bert_dir):
    texts = [f"sentence {i} about topic {i % 7}, said plainly" for i in range(80)]
    decision = latency_step.step_latency(Recipe(model=str(tiny_bert_dir)), texts, 1e-6, None, int8_out=tmp_path / "q")
    record = json.loads((tmp_path / "q" / "export.json").read_text())
    assert record["int8"]["passed"] and "held-out calibration texts" in record["int8"]["judged_on"]
    assert "onnx int8 (q):" in decision.evidence and "exported and gated on your texts" in decision.evidence
    assert decision.decision == "too slow for the budget, int8 included: distil a smaller student"  # 1 ns: nothing


def test_a_recipe_one_graph_cannot_express_gets_no_int8_and_the_reason(tmp_path, tiny_bert_dir):
    texts = [f"sentence {i} about topic {i % 7}, said plainly" for i in range(80)]
    windows = Recipe(model=str(tiny_bert_dir), long_text="windows:mean")
    refused = latency_step.step_latency(windows, texts, None, None, int8_out=tmp_path / "w")
    assert "own ONNX int8 not offered: long_text 'windows:mean' runs several passes" in refused.evidence
    assert not (tmp_path / "w").exists() and refused.decision.startswith("serve at")


def test_the_int8_export_is_planned_from_a_measured_trial(tiny_bert_dir, default_model_dir, tmp_path):
    texts = [f"sentence {i} about topic {i % 7}, said plainly" for i in range(80)]
    tiny = latency_step.plan_int8(Recipe(model=str(tiny_bert_dir)), texts)
    linear = 2 * 6 + 1  # two layers of (q, k, v, attention out, ffn in, ffn out) and the pooler
    assert tiny.passes == linear + 4 + latency_step.INT8_EXTRA_PASSES and tiny.trial_seconds > 0
    assert tiny.seconds == pytest.approx(2 * latency_step.EXPORT_SECONDS_PER_LAYER + tiny.passes * tiny.trial_seconds)
    default = latency_step.plan_int8(Recipe(model=str(default_model_dir)), texts)
    # planned per model: more linear modules to rank and more layers to export (the trial times themselves are not
    # compared: a busy machine can make the tiny model's trial the slower one)
    assert default.passes > tiny.passes and default.seconds > tiny.seconds and default.trial_seconds > 0
    served = Recipe(model=str(tiny_bert_dir))
    where, planned = _int8_plan(served, texts, tmp_path, Budget(600), own_int8=True)
    assert (
        where == tmp_path / "onnx-int8" and planned.startswith("own ONNX int8: about") and "measured trial" in planned
    )
    assert _int8_plan(served, texts, tmp_path, Budget(600), own_int8=False) == (None, "")
    where, why = _int8_plan(served, texts, tmp_path, Budget(0.001), own_int8=True)
    assert where is None and why.startswith("own ONNX int8 skipped: it needs about") and "0 s of the budget left" in why


def test_recommend_on_a_retrieval_collection_with_training_judgements(tiny_bert_dir, tmp_path):
    from tests.tasks.test_retrieval import write_beir

    docs = [(f"d{i}", "", f"document {i} about topic {i % 5} " + "filler words " * (60 if i % 3 == 0 else 2))
            for i in range(40)]  # fmt: skip
    queries = [(f"q{i}", f"topic {i % 5} question {i}") for i in range(30)]
    test = [(f"q{i}", f"d{i}", 1) for i in range(12)]
    train = [(f"q{i}", f"d{i}", 1) for i in range(12, 30)]
    root = write_beir(tmp_path / "c", docs, queries, test)
    (root / "qrels" / "train.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in train)
    )
    task = load_user_task(root, UserTable("retrieval"))
    from bertlens.probing.candidates import PromptSet

    prompts = (PromptSet("e5", "query: ", "passage: "),)
    options = RecommendOptions(
        10, prompt_sets=prompts, own_int8=False
    )  # the int8 export is checked on the labelled run
    shown = []
    run = RunContext(tmp_path / "out", progress=lambda stage, done, total: shown.append((stage, done, total)))
    result = run_recommend(task, str(tiny_bert_dir), run, options)
    steps = [d.step for d in result.decisions]
    assert steps == ["representation", "long documents", "frozen or fine-tuned", "latency"]
    # progress counts the three steps a retrieval walk runs (it said "1 of 5" and "3 of 5" before)
    walk = [(stage, done, total) for stage, done, total in shown if total == 3]
    assert [w[0] for w in walk] == ["representation", "fine-tuning", "latency", "done"] and walk[-1][1] == 3
    # a rerun takes every step from OUT/steps/, the chosen recipe with them (no recipe file beside the steps)
    again = run_recommend(task, str(tiny_bert_dir), RunContext(tmp_path / "out"), options)
    assert again.recipe == result.recipe and not (tmp_path / "out" / "steps" / "recipe.json").exists()
    assert [d.evidence for d in again.decisions] == [d.evidence for d in result.decisions]
    assert "prompt sets @e5" in result.decisions[0].evidence
    assert "nDCG@10" in result.decisions[0].evidence
    assert "over the model's limit" in result.decisions[1].evidence
    tuned = result.decisions[2]
    assert tuned.confidence == "measured" and "fine-tuned on 18 train pairs" in tuned.evidence
    paths = write_outputs(result, tmp_path / "out")
    Embedder(Recipe.load(paths["recipe"])).encode(["a recipe users can embed with"])


@pytest.mark.extended  # five steps end to end: `make test-extended`
def test_recommend_on_texts_without_labels(tiny_bert_dir, tmp_path):
    from bertlens.tasks.loaders import texts_task

    lines = (DATA / "sst2" / "train.txt").read_text().splitlines()[:120]
    task = texts_task("reviews", [ln.split(" ", 1)[1] for ln in lines])
    result = run_recommend(task, str(tiny_bert_dir), RunContext(tmp_path / "out"), RecommendOptions(5, own_int8=False))
    steps = {d.step: d for d in result.decisions}
    assert list(steps) == ["text length", "domain", "representation", "frozen or fine-tuned", "latency"]
    chosen = steps["representation"]
    assert "chosen without labels" in chosen.decision and "label-free" in chosen.confidence
    assert "effective_rank" in chosen.evidence and "not applicable" in steps["frozen or fine-tuned"].decision
    name = chosen.decision.split()[1]
    assert name == f"{result.recipe.pooler}/" + name.split("/")[1]  # the recipe carries the chosen pooler
    Embedder(Recipe.load(write_outputs(result, tmp_path / "out")["recipe"])).encode(["embeds"])


def test_the_cost_trial_runs_4_and_12_steps_on_the_same_rows_at_any_training_size(tmp_path, monkeypatch):
    """16 training examples (one batch): the trial still runs 4 and 12 optimiser steps, cycling over them as the real
    run does, and the cost of an example is the slope between the two runs (here 0.5 s a step at 16 examples a
    step), not a one-step run's whole time divided by 16 (3-6x too high on SST-2: docs/results-log.md)."""
    from types import SimpleNamespace

    from bertlens.experiments.compare import RunResult

    lines = (DATA / "sst2" / "train.txt").read_text().splitlines()[:800]
    task = _csv(tmp_path / "d.csv", [ln.split(" ", 1)[1] for ln in lines], [ln[0] for ln in lines])
    task = with_test_split(task, 0)
    rows = task.splits["train"]
    splits = {"train": rows.subset(np.arange(16)), "dev": rows.subset(np.arange(16, 516)), "test": task.splits["test"]}
    task = replace(task, splits=splits)
    seen = []

    def fake_compare(task, model, recipe, config, runs_dir, **kwargs):
        (size,) = config.sizes
        steps = config.train.min_steps  # one-batch epochs: the schedule runs min_steps steps
        seen.append((size, steps))
        run = RunResult("full", size, 0, 0.5, 0.5, 3.0 + 0.5 * steps, epochs=steps, steps=steps)
        return SimpleNamespace(runs=(run,))  # what measure_costs reads of a CompareResult

    monkeypatch.setattr(fine_tune_step, "run_compare", fake_compare)
    costs = fine_tune_step.measure_costs(task, "m", Recipe(), fine_tune_step.TRAIN, 0, forward=1e-4)
    assert seen == [(16, 4), (16, 12)]
    assert costs.train_example == pytest.approx(0.5 / 16) and costs.start_up == pytest.approx(3.0)
    assert fine_tune_step.compared_sizes(16) == (16,) and fine_tune_step.compared_sizes(256) == (64, 256)
