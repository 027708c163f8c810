"""Every bad-input case (tests/cli/bad_inputs.py): exit 1, one line naming the problem, no traceback,
nothing half-written, and no heavy library loaded where the problem is visible from the arguments alone."""

from __future__ import annotations

import re

import pytest

from bertlens.cli.commands import COMMANDS
from bertlens.cli.main import build_parser, main
from bertlens.cli.reference import accepted_flags as command_flags
from tests.cli.bad_flag_values import generated_cases
from tests.cli.bad_inputs import CASES, expand, make_files
from tests.conftest import DATA


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, tiny_bert_dir):
    tmp = tmp_path_factory.mktemp("bad-inputs")
    make_files(tmp, tiny_bert_dir)
    return tmp


GENERATED = generated_cases()


@pytest.mark.parametrize(("name", "argv", "expected"), CASES + GENERATED, ids=[c[0] for c in CASES + GENERATED])
def test_bad_input_is_one_line_and_exit_1(inputs, tiny_bert_dir, capsys, name, argv, expected):
    before = {p for p in inputs.rglob("*")}
    code = main(expand(argv, inputs, tiny_bert_dir, DATA))
    err = capsys.readouterr().err.strip()
    lines = [line for line in err.splitlines() if line.strip() and "warning:" not in line]
    assert code == 1, err
    assert len(lines) == 1 and "Traceback" not in err, err
    assert expected in lines[0], lines[0]
    suggested = [flag for flag in unknown_flags(lines[0], argv[0]) if flag not in argv]  # not what the user typed
    assert not suggested, f"the hint names flags {argv[0]} does not accept ({suggested}): {lines[0]}"
    leftovers = {p for p in inputs.rglob("*") if p not in before and (".tmp" in p.name or p.name.endswith(".partial"))}
    assert not leftovers, leftovers


def accepted_flags(command: str) -> set[str]:
    """Every flag of `command`, and the global ones."""
    return command_flags(command) | {flag for action in build_parser()._actions for flag in action.option_strings}


def unknown_flags(message: str, command: str) -> list[str]:
    """Flags a message suggests that neither its command nor a command it names (`bertlens NAME ...`) accepts."""
    named = {command, *(name for name in re.findall(r"bertlens (\w[\w-]*)", message) if name in COMMANDS)}
    accepted = set().union(*(accepted_flags(name) for name in named))
    return [flag for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", message) if flag not in accepted]


def test_every_command_has_hand_written_and_generated_cases():
    assert len(CASES) >= 140
    for cases in (CASES, GENERATED):
        assert {argv[0] for _, argv, _ in cases} == set(COMMANDS)


def test_the_table_holds_at_least_300_cases():
    """The command line's cases, the server's routes and the Python API's calls together (docs/results-log.md)."""
    from tests.api.bad_calls import CASES as CALLS
    from tests.serving.bad_requests import REQUESTS

    assert len(CASES) + len(GENERATED) + len(REQUESTS) + len(CALLS) >= 300
