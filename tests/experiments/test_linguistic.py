"""Treebank discovery and the suite's task list."""

from __future__ import annotations

import pytest

from bertlens.errors import BertlensError
from bertlens.experiments.linguistic import check_tasks
from bertlens.tasks.conllu import load_treebank

SENTENCE = "# text = Hi there\n1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_\t_\n2\tthere\tthere\tADV\tRB\t_\t1\tadvmod\t_\t_\n\n"


def test_ud_style_file_names_are_found(tmp_path):
    for split in ("train", "dev", "test"):
        (tmp_path / f"en_toy-ud-{split}.conllu").write_text(SENTENCE * 3)
    splits = load_treebank(tmp_path, max_sentences=2)
    assert {k: len(v) for k, v in splits.items()} == {"train": 2, "dev": 2, "test": 2}


def test_missing_split_and_unknown_task_are_clear(tmp_path):
    (tmp_path / "train.conllu").write_text(SENTENCE)
    with pytest.raises(BertlensError, match="need one dev.conllu .*found train.conllu"):
        load_treebank(tmp_path)
    with pytest.raises(BertlensError, match="treebank directory not found"):
        load_treebank(tmp_path / "nope")
    with pytest.raises(BertlensError, match="did you mean 'tense'"):
        check_tasks(("upos", "tenses"))
