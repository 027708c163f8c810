"""Progress lines say what a stage counts: texts by default, candidates or folds where a stage counts those."""

from bertlens.cli import console
from bertlens.progress import counting, split_stage, split_unit


def lines_of(monkeypatch, updates):
    said = []
    monkeypatch.setattr(console, "say", said.append)
    update = console._plain_progress("sweep", "texts")
    for stage, done, total in updates:
        update(stage, done, total)
    return said


def test_a_stage_that_counts_candidates_says_candidates_not_texts(monkeypatch):
    said = lines_of(monkeypatch, [("encoding", 0, 10), (counting("screening (ridge)", "candidates"), 48, 48)])
    assert said[0] == "sweep: encoding 0/10 texts"
    assert said[1] == "sweep: screening (ridge) 48/48 candidates"


def test_the_unit_and_a_live_detail_travel_together():
    name, detail = split_stage(counting("logistic probes (4 contenders)", "folds") + " | C 0.5")
    assert split_unit(name, "texts") == ("logistic probes (4 contenders)", "folds") and detail == "C 0.5"
    assert split_unit("encoding", "texts") == ("encoding", "texts")
