"""Where a sweep's time went (experiments/sweep/stage_times.py): the recorded timings read as ordered stages."""

import pytest

from bertlens.experiments.sweep.stage_times import after_encoding_seconds, encoding_seconds, stage_rows, stages

TIMINGS = {
    "bank_seconds": 100.0,
    "mixes_seconds": 4.0,
    "screen_seconds": 10.0,
    "logistic_seconds": 30.0,
    "probe_bootstrap_seconds": 2.0,
    "probe_seconds": 50.0,
    "cosine_bootstrap_seconds": 1.0,
    "cosine_seconds": 3.0,
}


def test_each_protocol_is_followed_by_its_parts_and_the_rest_of_it():
    table = stages(TIMINGS, ["probe", "cosine"])
    assert [(s.part_of, s.name, s.seconds) for s in table] == [
        ("", "bank", 100.0),
        ("", "probe", 50.0),
        ("probe", "ScalarMix fits", 4.0),
        ("probe", "ridge screen", 10.0),
        ("probe", "logistic probes", 30.0),
        ("probe", "bootstrap", 2.0),
        ("probe", "the rest", pytest.approx(4.0)),
        ("", "cosine", 3.0),
        ("cosine", "bootstrap", 1.0),
        ("cosine", "the rest", pytest.approx(2.0)),
    ]


def test_after_the_bank_counts_each_protocol_once_and_is_read_against_the_bank():
    table = stages(TIMINGS, ["probe", "cosine"])
    assert encoding_seconds(table) == 100.0
    assert after_encoding_seconds(table) == 53.0  # the protocols' wholes; their parts are inside them
    label, seconds, ratio = stage_rows(table)[-1]
    assert (label, seconds, ratio) == ("after the bank", 53.0, pytest.approx(0.53))


def test_unknown_stages_are_listed_and_a_run_without_a_bank_has_no_ratio():
    table = stages({"retrieval_seconds": 5.0, "label_free_seconds": 2.0, "stages_seconds": 9.0}, ["cosine"])
    assert [(s.name, s.seconds) for s in table] == [("retrieval", 5.0), ("label_free", 2.0)]
    assert stage_rows(table)[-1] == ("after the bank", 7.0, None)
