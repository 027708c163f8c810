"""Several models in one sweep (experiments/sweep/across.py, issue #74): the choice rule as a pure function, and the
leaderboard's intervals across models against a by-hand paired bootstrap over the same rows."""

import numpy as np
import pytest

import bertlens
from bertlens.errors import OptionError
from bertlens.experiments.sweep.across import Budget, Pick, choose_model
from bertlens.experiments.sweep.price import Price
from tests.conftest import DATA


def price(model: str, speed: float, ms: float = 10.0) -> Price:
    return Price(model, speed, ms, "fp32", 100.0, 100.0, 384, 256, "test CPU")


def picks_and_outputs(gap: float, n: int = 400, seed: int = 0):
    """Two picks on the same choosing rows: 'big' right on every row, 'small' wrong on a share `gap` of them."""
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, 2, n)
    big = gold.copy()
    small = gold.copy()
    wrong = rng.choice(n, int(gap * n), replace=False)
    small[wrong] = 1 - small[wrong]
    picks = [Pick("big", "mean/L12", 1.0, "mean/L12", price("big", 100.0)),
             Pick("small", "mean/L3", 1.0 - gap, "mean/L3", price("small", 600.0))]  # fmt: skip
    return picks, np.stack([big, small]), gold


def test_the_cheaper_model_is_chosen_when_tied_and_the_better_one_when_not():
    tied, outputs, gold = picks_and_outputs(0.005)  # 2 rows of 400: within the noise
    choice = choose_model(tied, outputs, gold, "accuracy", Budget(), seed=0)
    assert choice.tied == (True, True) and choice.chosen == 1 and choice.passed_over == 0
    apart, outputs, gold = picks_and_outputs(0.2)  # 80 rows of 400: far outside it
    choice = choose_model(apart, outputs, gold, "accuracy", Budget(), seed=0)
    assert choice.tied == (True, False) and choice.chosen == 0 and choice.passed_over is None
    quality = choose_model(tied, *picks_and_outputs(0.005)[1:], "accuracy", Budget(prefer="quality"), seed=0)
    assert quality.chosen == 0 and quality.passed_over == 1  # the best, with the cheaper tie named beside it


def test_a_budget_filters_before_the_rule_and_one_no_model_meets_is_one_line():
    picks, outputs, gold = picks_and_outputs(0.2)
    choice = choose_model(picks, outputs, gold, "accuracy", Budget(min_texts_per_second=300), seed=0)
    assert choice.chosen == 1 and choice.eligible == (False, True) and "meet the budget" in choice.rule
    with pytest.raises(OptionError) as error:
        choose_model(picks, outputs, gold, "accuracy", Budget(min_texts_per_second=1000), seed=0)
    message = error.value.as_flags()
    assert "no model meets the budget (at least 1000 texts/s)" in message and "--min-texts-per-second" in message
    assert len(message.splitlines()) == 1


SETTINGS = dict(task="trec", data_dir=str(DATA), max_examples=240, resamples=200, poolers="mean,cls", layers="-2:",
                bank_dtype="float32", quiet=True)  # fmt: skip


def by_hand(outputs: np.ndarray, gold: np.ndarray, resamples: int, seed: int):
    """Accuracy on materialised resamples drawn as the sweep draws them: (low, high, tied with the best) per row."""
    rng = np.random.default_rng(seed)
    n = outputs.shape[1]
    scores = []
    for _ in range(resamples):
        rows = rng.integers(0, n, n)
        scores.append((outputs[:, rows] == gold[rows][None]).mean(axis=1))
    scores = np.array(scores).T  # [C, B]
    value = (outputs == gold[None]).mean(axis=1)
    best = int(np.argmax(value))
    tied = np.percentile(scores[best][None] - scores, 2.5, axis=1) <= 0
    return np.percentile(scores, 2.5, axis=1), np.percentile(scores, 97.5, axis=1), tied


def test_each_models_rows_equal_its_single_sweep_and_intervals_across_models_are_paired(
    tiny_bert_dir, second_tiny_bert_dir, tmp_path
):
    models = [str(tiny_bert_dir), str(second_tiny_bert_dir)]
    run = bertlens.sweep(models=models, cache_dir=tmp_path / "cache", **SETTINGS)
    for model in models:
        alone = bertlens.sweep(model=model, cache_dir=tmp_path / "cache", **SETTINGS).rows()
        mine = [{k: v for k, v in row.items() if k not in ("model", "tied_with_best_across_models")}
                for row in run.rows() if row["model"] == model]  # fmt: skip
        assert len(mine) == len(alone)
        for ours, theirs in zip(mine, alone, strict=True):
            assert ours.keys() == theirs.keys()
            for key, value in ours.items():
                if isinstance(value, float):
                    assert value == pytest.approx(theirs[key], abs=1e-6), (ours["candidate"], key)
                else:
                    assert value == theirs[key], (ours["candidate"], key)
    result = run.result
    outputs = np.concatenate([r.main.outputs for r in result.results])
    low, high, tied = by_hand(outputs, result.results[0].main.gold, 200, 0)
    np.testing.assert_allclose(result.board.low, low, atol=1e-9)
    np.testing.assert_allclose(result.board.high, high, atol=1e-9)
    assert (result.board.tied_with_best == tied).all()
    assert run.recommended.split()[0] in models and run.recipe.model in models
    assert {row["model"] for row in run.models()} == set(models)
    assert all(row["texts_per_s"] > 0 and row["dim"] > 0 and row["disk_mb"] > 0 for row in run.models())


def test_pareto_front_keeps_the_points_nothing_beats_on_both():
    from bertlens.reports.models import pareto_front

    assert pareto_front([(100, 0.8), (600, 0.7), (300, 0.6), (50, 0.81)]) == [(50, 0.81), (100, 0.8), (600, 0.7)]
