"""Every bad call of tests/api/bad_calls.py raises one BertlensError in Python's words (no command-line flag)."""

from __future__ import annotations

import re

import pytest

import bertlens
from tests.api.bad_calls import CASES, Inputs
from tests.cli.bad_inputs import make_files
from tests.conftest import DATA


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, tiny_bert_dir):
    tmp = tmp_path_factory.mktemp("bad-calls")
    make_files(tmp, tiny_bert_dir)
    return Inputs(tmp, tiny_bert_dir, DATA)


@pytest.mark.parametrize(("name", "call", "expected"), CASES, ids=[c[0] for c in CASES])
def test_a_bad_call_is_one_bertlens_error_in_pythons_words(inputs, name, call, expected):
    with pytest.raises(bertlens.BertlensError) as raised:
        call(inputs)
    message = str(raised.value)
    assert expected in message, message
    assert "\n" not in message.strip() and "Traceback" not in message
    assert not re.search(r"(?<![\w-])--[a-z]", message), f"a Python caller is told about a flag: {message}"
    # JSON is an internal format (data given in memory is read through a JSON-lines file), except for a recipe file
    internal = re.search(r"\bJSON\b", message) and not name.startswith("Recipe.load")
    assert not internal, f"a Python caller is told about JSON: {message}"


def test_at_least_forty_calls():
    assert len(CASES) >= 40
