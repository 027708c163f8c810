"""The command line of a command defined once is derived from its options (cli/derived.py): every option a flag
with its docstring as help, the shell's own defaults, --config repeating a run, each complaint one line."""

from __future__ import annotations

import dataclasses
import re
import typing
from dataclasses import fields
from pathlib import Path

import pytest

import bertlens
from bertlens.api.options import choices_of
from bertlens.api.recommend import RecommendOptions
from bertlens.api.results import save_options
from bertlens.api.sources import DataOptions
from bertlens.api.sweep import SweepOptions
from bertlens.cli.derived import command_app, flags_of, parse_options
from bertlens.cli.main import main
from bertlens.cli.recommend import COMMAND as RECOMMEND
from bertlens.cli.sweep import COMMAND as SWEEP
from bertlens.representation.choices import PRECISIONS
from bertlens.tasks.catalog import CATALOG
from bertlens.tasks.kinds import user_kinds


def test_the_parser_is_derived_from_the_options():
    """The shell's parser is cyclopts' reading of SweepOptions: every option but the in-memory labels is a flag of
    its name, a bare command line is Python's defaults (but --out), and each flag lands in its option."""
    arguments = command_app(SWEEP).assemble_argument_collection(parse_docstring=True)
    shown = {a.names[0]: a.field_info.name for a in arguments if a.show}
    assert shown == flags_of(SWEEP) and set(shown.values()) == {f.name for f in fields(SweepOptions)} - set(
        SWEEP.hidden()
    )
    assert set(SWEEP.hidden()) == {"labels", "models"}  # Python only: labels beside texts in memory, models=[...]
    assert all(a.parameter.help for a in arguments if a.show), "a flag without help: give its field a docstring"
    assert parse_options(SWEEP, ["--task", "stsb"]) == SweepOptions(task="stsb", out=Path("out/sweep"))
    given = parse_options(SWEEP, ["--task", "stsb", "--max-examples", "30", "--layers", "-4:", "--exclude-special",
                                  "--prompts", "a=q: |d: ", "--prompts", "b=x|y", "--bank-dtype", "float32"])  # fmt: skip
    assert given == SweepOptions(
        task="stsb", max_examples=30, layers="-4:", exclude_special=True, prompts=["a=q: |d: ", "b=x|y"],
        bank_dtype="float32", out=Path("out/sweep"),
    )  # fmt: skip
    with pytest.raises(bertlens.BertlensError, match=r"^Unknown option: --labels"):
        parse_options(SWEEP, ["--task", "stsb", "--labels", "1"])


def test_config_repeats_a_run_with_the_flags_given_winning(tmp_path):
    """--config reads the options.json a run wrote; a flag on the command line wins over the file."""
    first = SweepOptions(task="stsb", max_examples=30, poolers=("cls", "mean"), layers="-2:", seed=3)
    save_options(tmp_path, first.check())
    again = parse_options(SWEEP, ["--config", str(tmp_path / "options.json"), "--seed", "4", "--out", "b"])
    assert again.check() == dataclasses.replace(first.check(), seed=4, out=Path("b"))


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ("[1, 2]", "holds no options object"),
        ("{not json", "is not JSON"),
        ('{"task": "stsb", "nope": 1}', 'Unknown option: "[nope]"'),
        ('{"task": "stsb", "max_examples": "many"}', "unable to convert"),
        ('{"texts": "<in memory: 40 items>"}', "texts was given in memory from Python"),
        ('{"texts": null, "labels": [0, 1]}', "labels was given in memory from Python"),
    ],
)
def test_a_config_the_command_line_cannot_repeat_is_one_line(tmp_path, record, message):
    (tmp_path / "options.json").write_text(record)
    with pytest.raises(bertlens.BertlensError, match=re.escape(message)):
        parse_options(SWEEP, ["--config", str(tmp_path / "options.json")])
    with pytest.raises(bertlens.BertlensError, match="does not exist"):
        parse_options(SWEEP, ["--config", str(tmp_path / "missing.json")])


def test_recommend_needs_out_on_the_command_line_only(capsys):
    assert parse_options(RECOMMEND, ["--task", "sst2", "--out", "o", "--alternatives", "a", "b"]).alternatives == [
        Path("a"),
        Path("b"),
    ]
    assert main(["recommend", "--task", "sst2"]) == 1
    assert "bertlens recommend: error: --out is required: the directory" in capsys.readouterr().err
    assert {f.name for f in fields(RecommendOptions)} - {"labels", "models"} == set(flags_of(RECOMMEND).values())


def test_the_choices_and_the_task_list_are_the_librarys_own():
    """Help and choices written in the options' annotations and docstrings say what the library accepts."""
    hints = typing.get_type_hints(SweepOptions)
    assert choices_of(hints["precision"]) == PRECISIONS
    assert choices_of(hints["task_type"]) == user_kinds()
    task_help = re.sub(
        r"\s+", " ", command_app(SWEEP).assemble_argument_collection(parse_docstring=True)["--task"].parameter.help
    )
    assert f"({', '.join(CATALOG)})" in task_help, task_help
    with pytest.raises(bertlens.BertlensError, match=r"^task_type must be one of classification, "):
        DataOptions(task="stsb", task_type="nope") and SweepOptions(task="stsb", task_type="nope").check()


def test_a_stray_word_is_refused_not_taken_for_an_option():
    """Every option is keyword-only: `bertlens sweep stsb` does not quietly read 'stsb' as --task."""
    with pytest.raises(bertlens.BertlensError, match=r"^unexpected 'stsb': every option of bertlens sweep is a flag"):
        parse_options(SWEEP, ["stsb", "--task", "sst2"])
