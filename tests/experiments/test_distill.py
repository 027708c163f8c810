"""Distillation end to end on a tiny teacher: a concatenation (not servable as a plain model) becomes a 1-layer
mean-pooling student with a projection; the saved recipe reproduces the recorded fidelity; the run resumes
exactly; comparing a model with itself gives no difference."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from safetensors.numpy import load_file

from bertlens.embedding.embedder import Embedder
from bertlens.experiments.distill import HELDOUT_LIMIT, run_distill
from bertlens.io.run_context import RunContext
from bertlens.probing.task_comparison import compare_on_task
from bertlens.representation.recipe import Recipe
from bertlens.tasks.catalog import get_task
from bertlens.tasks.loaders import load_catalog_task
from bertlens.tasks.splits import carve_dev
from bertlens.training.config import DISTILL_DEFAULTS
from bertlens.training.students import StudentSpec
from tests.conftest import DATA

WORDS = ["cats", "dogs", "rain", "code", "music", "tea", "trains", "snow", "books", "films"]
TEXTS = [f"{a} and {b} number {i}" for i, (a, b) in enumerate((a, b) for a in WORDS for b in WORDS)]
CONFIG = replace(DISTILL_DEFAULTS, epochs=3, batch_size=16, lr=5e-4, checkpoint_every=4)


def test_a_concatenation_is_distilled_into_a_plain_student(tiny_bert_dir, tmp_path):
    teacher = Recipe(model=str(tiny_bert_dir), layers=(-2, -1), mixer="concat", normalize=True, precision="auto")
    out = tmp_path / "student"
    outcome = run_distill(teacher, StudentSpec(keep=(1,)), TEXTS, "test texts", RunContext(out, tmp_path), CONFIG)
    record = json.loads((out / "distill.json").read_text())
    saved = Recipe.load(out / "recipe.json")
    assert (saved.mixer, saved.pooler, saved.layers) == ("single", "mean", (-1,))
    assert saved.precision == teacher.precision  # timed and served as the teacher is: a speed-up, not a precision gap
    assert saved.postprocess and record["projection"] and record["student_layers"] == 1
    student = Embedder(saved)
    assert student.dim == 64  # the teacher's width (two layers of 32 concatenated)
    _, held = carve_dev(np.arange(len(TEXTS)), None, CONFIG.seed, False, 0.05, limit=HELDOUT_LIMIT, min_kept=2)
    held_texts = [TEXTS[i] for i in held]
    s, t = student.encode(held_texts), Embedder(teacher).encode(held_texts)
    np.testing.assert_allclose(np.linalg.norm(s, axis=1), 1, atol=1e-5)  # the teacher normalises: so does the student
    cosines = (s * t).sum(1)
    assert record["fidelity"]["mean"] == pytest.approx(float(cosines.mean()), abs=1e-5)
    assert record["fidelity"]["min"] == pytest.approx(float(cosines.min()), abs=1e-5)
    history = record["heldout_cosine_by_epoch"]
    assert outcome.fidelity.mean == pytest.approx(max(history), abs=1e-4)  # the best epoch's weights are kept
    assert record["last_loss"] < record["first_loss"]
    assert outcome.student_texts_per_s > 0 and outcome.teacher_texts_per_s > 0
    assert not (out / "checkpoint").exists() and not (out / ".student-init").exists()


def test_an_interrupted_distillation_resumes_to_the_same_weights(tiny_bert_dir, tmp_path):
    teacher = Recipe(model=str(tiny_bert_dir), pooler="cls")
    whole = tmp_path / "whole"
    run_distill(teacher, StudentSpec(keep=(0,)), TEXTS, "t", RunContext(whole, tmp_path), CONFIG)

    class Stop(Exception):
        pass

    def stop_at_seven(stage, done, total):
        if stage.startswith("training") and done == 7:
            raise Stop

    broken = tmp_path / "broken"
    with pytest.raises(Stop):
        run_distill(
            teacher, StudentSpec(keep=(0,)), TEXTS, "t", RunContext(broken, tmp_path, progress=stop_at_seven), CONFIG
        )
    assert (broken / "checkpoint" / "state.json").is_file()
    run_distill(teacher, StudentSpec(keep=(0,)), TEXTS, "t", RunContext(broken, tmp_path), CONFIG)
    a, b = load_file(str(whole / "model.safetensors")), load_file(str(broken / "model.safetensors"))
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_a_model_compared_with_itself_differs_by_nothing(tiny_bert_dir):
    task = load_catalog_task(get_task("stsb"), DATA, max_examples=200, seed=0)
    one = Embedder(model=str(tiny_bert_dir))
    result = compare_on_task(one, one, task)
    assert result.teacher == result.student and result.difference == (0.0, 0.0, 0.0)
    assert result.metric == "spearman" and -1 <= result.teacher[0] <= 1
