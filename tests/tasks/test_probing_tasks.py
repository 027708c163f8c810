"""Sentence-level probing datasets and control labels built from a treebank."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from bertlens.tasks.conllu import read_conllu
from bertlens.tasks.probing_tasks import (
    bigram_shift,
    control_labels,
    coordination,
    object_number,
    save_jsonl,
    sentence_tasks,
    subject_number,
    tense_label,
    top_sequence,
    tree_depth,
)

# "The dogs chased a cat and the cat fled ." : two coordinated clauses, plural subject, singular object
ROWS = [
    ("The", "DET", "_", 2, "det"),
    ("dogs", "NOUN", "Number=Plur", 3, "nsubj"),
    ("chased", "VERB", "Tense=Past|VerbForm=Fin", 0, "root"),
    ("a", "DET", "_", 5, "det"),
    ("cat", "NOUN", "Number=Sing", 3, "obj"),
    ("and", "CCONJ", "_", 9, "cc"),
    ("the", "DET", "_", 8, "det"),
    ("cat", "NOUN", "Number=Sing", 9, "nsubj"),
    ("fled", "VERB", "Tense=Past|VerbForm=Fin", 3, "conj"),
    (".", "PUNCT", "_", 3, "punct"),
]


@pytest.fixture
def sentence(tmp_path):
    lines = ["# text = The dogs chased a cat and the cat fled."]
    for i, (form, upos, feats, head, rel) in enumerate(ROWS, start=1):
        misc = "SpaceAfter=No" if i == 9 else "_"
        lines.append(f"{i}\t{form}\t{form.lower()}\t{upos}\t_\t{feats}\t{head}\t{rel}\t_\t{misc}")
    path = tmp_path / "one.conllu"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return next(read_conllu(path))


def test_tree_properties(sentence):
    assert tree_depth(sentence) == 4  # chased (1) -> fled (2) -> cat (3) -> the (4)
    assert top_sequence(sentence) == "nsubj ROOT obj conj"
    assert tense_label(sentence) == "Past"
    assert subject_number(sentence) == "Plur"
    assert object_number(sentence) == "Sing"


def test_bigram_shift_swaps_one_adjacent_pair_away_from_the_first_word(sentence):
    original = bigram_shift(sentence, np.random.default_rng(0), swap=False).split()
    for seed in range(20):
        shifted = bigram_shift(sentence, np.random.default_rng(seed), swap=True).split()
        diff = [i for i, (a, b) in enumerate(zip(original, shifted)) if a != b]
        assert len(diff) == 2 and diff[1] == diff[0] + 1 and diff[0] >= 1
        assert shifted[diff[0]] == original[diff[1]] and Counter(shifted) == Counter(original)


def test_coordination_inversion(sentence):
    assert coordination(sentence, invert=False) == "The dogs chased a cat and the cat fled ."
    assert coordination(sentence, invert=True) == "The cat fled and the dogs chased a cat ."


def test_ewt_tasks_are_balanced_deterministic_and_saved(tmp_path, ud_slice):
    tasks = sentence_tasks(ud_slice, seed=0)
    again = sentence_tasks(ud_slice, seed=0)
    assert {"sentence_length", "tense", "bigram_shift"} <= set(tasks)
    for name, task in tasks.items():
        assert task.splits == again[name].splits
        for split, (_texts, labels) in task.splits.items():
            counts = Counter(labels)
            assert set(counts) == set(task.classes), (name, split)
            assert len(set(counts.values())) == 1, (name, split, counts)  # balanced
    path = save_jsonl(tasks["tense"], tmp_path / "tense.jsonl")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == sum(tasks["tense"].sizes().values())
    assert {r["split"] for r in rows} == {"train", "dev", "test"} and rows[0]["label"] in ("Past", "Pres")


def test_control_labels_are_per_type_and_follow_the_label_distribution():
    types = [f"w{i}" for i in range(4000)]
    train = ["NOUN"] * 600 + ["VERB"] * 300 + ["ADJ"] * 100
    mapping = control_labels(types + types[:10], train, seed=1)
    assert len(mapping) == 4000 and set(mapping.values()) <= {"NOUN", "VERB", "ADJ"}
    share = Counter(mapping.values())["NOUN"] / len(mapping)
    assert 0.55 < share < 0.65
    assert mapping == control_labels(list(reversed(types)), train, seed=1)  # order-independent
    assert mapping != control_labels(types, train, seed=2)
