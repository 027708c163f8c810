"""`rows='auto'`: the sweep looks at growing stages, stops when its choice is settled, and says so everywhere."""

import json

import numpy as np
import pytest

from bertlens.encoding.encoder import Encoder
from bertlens.experiments.sweep import SweepConfig, run_sweep
from bertlens.features import bank as bank_module
from bertlens.metrics.sequential import look_confidence
from bertlens.reports.sweep import markdown, to_json
from bertlens.representation.recipe import Recipe
from bertlens.tasks.catalog import get_task
from bertlens.tasks.loaders import load_catalog_task
from tests.conftest import DATA

STAGED = SweepConfig(
    resamples=100, poolers=("mean", "cls"), first_stage=500, rows="auto"
)  # 3,000 rows: 500, 1000, 2000, all


@pytest.fixture(scope="module")
def encoder(tiny_bert_dir):
    return Encoder(str(tiny_bert_dir))


@pytest.fixture(scope="module")
def subj():
    return load_catalog_task(get_task("subj"), DATA, max_examples=3000)


def _sweep(task, encoder, cache, config):
    return run_sweep(task, encoder, Recipe(model=encoder.ref.name), cache, config)


@pytest.fixture(scope="module")
def staged(subj, encoder, tmp_path_factory):
    return _sweep(subj, encoder, tmp_path_factory.mktemp("staged"), STAGED)


def test_a_staged_sweep_reports_its_looks_and_widens_its_intervals_for_them(staged):
    staging = staged.staging
    assert staging.planned == (500, 1000, 2000, 3000)
    assert [look.rows for look in staging.looks] == list(staging.planned[: len(staging.looks)])
    assert staged.rows == staging.rows and staged.main.n_test == staging.rows  # out-of-fold over the rows it read
    assert staged.main.test.confidence == pytest.approx(look_confidence(4))
    assert staged.main.selection.confidence == pytest.approx(look_confidence(4))
    for look in staging.looks[:-1]:
        assert not look.settled and look.largest_gap > STAGED.settle_tolerance
    assert staging.looks[-1].settled or staging.rows == 3000
    assert staging.looks[-1].pick == staged.recommended.name
    saved = to_json(staged)
    assert saved["staging"]["planned"] == [500, 1000, 2000, 3000] and len(saved["staging"]["looks"]) == len(
        staging.looks
    )
    assert {row["rows_used"] for row in saved["rows"]} == {staging.rows}
    assert "## Rows: stages and where the sweep stopped" in markdown(staged, {"probe": "p.png"})
    assert "98.75% each" in markdown(staged, {"probe": "p.png"})


def test_the_same_seed_gives_the_same_looks(staged, subj, encoder, tmp_path):
    again = _sweep(subj, encoder, tmp_path, STAGED)
    decided = lambda looks: [(k.rows, k.pick, k.settled, k.largest_gap, k.ahead) for k in looks]  # noqa: E731
    assert decided(again.staging.looks) == decided(staged.staging.looks)  # everything but the seconds
    assert np.array_equal(again.main.test.value, staged.main.test.value)


def test_a_settled_stop_leaves_rows_unread_and_rows_all_carries_on_from_its_bank(subj, encoder, tmp_path, monkeypatch):
    """A lax tolerance settles at the second look (the first has no trend to carry to every row); `rows='all'` then
    encodes only the rest."""
    lax = SweepConfig(resamples=100, poolers=("mean", "cls"), first_stage=500, settle_tolerance=0.9, rows="auto")
    stopped = _sweep(subj, encoder, tmp_path, lax)
    looks = stopped.staging.looks
    assert stopped.staging.settled and len(looks) == 2 and looks[1].settled and not looks[0].settled
    assert np.isinf(looks[0].projected_gap) and np.isfinite(looks[1].projected_gap)
    assert to_json(stopped)["staging"]["looks"][0]["projected_gap"] is None
    assert stopped.staging.rows < 3000 and stopped.main.n_test == stopped.staging.rows
    assert "--rows all scores every row" in stopped.notes[-1]
    encoded: list[int] = []
    forward = encoder.forward
    monkeypatch.setattr(encoder, "forward", lambda tokenized, rows, **kw: encoded.append(len(rows)) or forward(
        tokenized, rows, **kw))  # fmt: skip
    every = _sweep(subj, encoder, tmp_path, SweepConfig(resamples=100, poolers=("mean", "cls"), rows="all"))
    assert every.staging is None and every.main.n_test == 3000 and every.main.test.confidence == 0.95
    assert sum(encoded) == len(subj.all_texts()) - len(set(subj.all_texts()) & _stage_texts(stopped, subj))
    assert not list((tmp_path / "banks").glob(".*.partial"))  # the whole bank is published now


def _stage_texts(result, task):
    from bertlens.tasks.staging import first_rows, stage_orders

    return set(first_rows(task, stage_orders(task, 0), result.staging.rows).all_texts())


def test_small_tasks_retrieval_and_rows_all_score_every_row(encoder, tmp_path):
    small = load_catalog_task(get_task("subj"), DATA, max_examples=1000)  # 500 then 1,000: too few looks to stage
    result = _sweep(small, encoder, tmp_path, STAGED)
    assert result.staging is None and result.main.n_test == 1000 and result.rows == 1000
    assert to_json(result)["staging"] == {"rows": "all", "rows_used": 1000}


def test_a_stage_encodes_only_its_rows(subj, encoder, tmp_path, monkeypatch):
    """Each stage's bank holds vectors for its own texts only: the rest of the task is not encoded."""
    seen: list[int] = []
    build = bank_module.build_bank

    def recording(*args, **kwargs):
        rows = bank_module._STAGE_ROWS.get()
        seen.append(len(args[1]) if rows is None else len(rows))
        return build(*args, **kwargs)

    monkeypatch.setattr("bertlens.experiments.sweep.run.build_bank", recording)
    two_looks = SweepConfig(resamples=100, poolers=("mean",), first_stage=500, settle_tolerance=0.9, rows="auto")
    _sweep(subj, encoder, tmp_path, two_looks)
    assert seen == [500, 1000]  # each stage asks for its own rows (subj: one text per row), settled at the second


def test_results_json_of_a_staged_run_is_valid_json(staged):
    json.dumps(to_json(staged))
