"""Bad values for every typed flag of every command, generated from the parsers themselves: each integer flag given
a negative number and a word, each float flag nan and a negative number, each choice flag a name it does not offer,
and each command an unknown flag. Every one must be refused in one line that names the flag, before any work.

The base command lines are valid (a run would start); one bad value is appended to each. Shared by
tests/cli/test_bad_input.py and bench/bad_input_table.py, beside the hand-written cases of bad_inputs.py.
"""

from __future__ import annotations

import importlib
import typing

from bertlens.api.options import choices_of
from bertlens.cli.commands import COMMANDS

TEXTS = ["--texts", "{tmp}/ok.txt"]
TABLE = ["--data", "{tmp}/ok.csv", "--text-col", "text", "--label-col", "label"]
MODEL = ["--model", "{model}"]
CATALOG = ["--task", "sst2", "--data-dir", "{data}"]  # a task with its own train/dev/test
BASES: dict[str, list[str]] = {  # a valid command line of each command (the bad flag goes after it)
    "embed": ["embed", "{tmp}/ok.txt", *MODEL, "--out", "{tmp}/gen.npy", "--quiet"],
    "sweep": ["sweep", *TABLE, *MODEL, "--out", "{tmp}/gen-sweep", "--quiet"],
    "probe": ["probe", "--suite", "linguistic", "--data-dir", "{data}", *MODEL, "--out", "{tmp}/gen-probe", "--quiet"],
    "finetune": ["finetune", *CATALOG, "--size", "40", "--max-dev", "20", *MODEL, "--out", "{tmp}/gen-ft", "--quiet"],
    "compare": [
        "compare",
        *CATALOG,
        "--strategies",
        "frozen,full",
        "--sizes",
        "40",
        "--max-dev",
        "20",
        *MODEL,
        "--out",
        "{tmp}/gen-cmp",
        "--quiet",
    ],
    "geometry": ["geometry", *TEXTS, *MODEL, "--out", "{tmp}/gen-geo", "--quiet"],
    "postprocess": ["postprocess", *TEXTS, *MODEL, "--out", "{tmp}/gen-pp", "--quiet"],
    "contrastive": ["contrastive", *TEXTS, *MODEL, "--out", "{tmp}/gen-con", "--quiet"],
    "longdoc": ["longdoc", *TABLE, *MODEL, "--out", "{tmp}/gen-ld", "--quiet"],
    "pretrain": [
        "pretrain",
        "--from",
        "{model}",
        "--texts",
        "{tmp}/ok.csv",
        "--column",
        "text",
        "--max-length",
        "16",
        "--batch-size",
        "2",
        "--out",
        "{tmp}/gen-pt",
        "--quiet",
    ],  # fmt: skip
    "distill": [
        "distill",
        "--teacher",
        "{model}",
        "--student",
        "layers:1",
        "--texts",
        "{tmp}/ok.csv",
        "--column",
        "text",
        "--out",
        "{tmp}/gen-ds",
        "--quiet",
    ],  # fmt: skip
    "export": ["export", "--format", "onnx", *MODEL, "--out", "{tmp}/gen-ex", "--quiet"],
    "serve": ["serve", *MODEL],
    "recommend": ["recommend", *TABLE, *MODEL, "--budget-minutes", "1", "--out", "{tmp}/gen-rec", "--quiet"],
    "domain": ["domain", *TEXTS, *MODEL, "--out", "{tmp}/gen-dom", "--quiet"],
    "index": ["index", "--data", "{tmp}/ok.txt", *MODEL, "--out", "{tmp}/gen-store", "--quiet"],
    "search": ["search", "--index", "{tmp}/not-an-index", "--query", "a question"],
    "data": ["data", "list"],
}


# where -1 is a fair value, the value that is not: a similarity threshold below zero keeps every pair (a real
# choice); the int8 gate's cosines run from -1 (a gate that always passes, like --force) to 1
OUT_OF_RANGE = {"--min-score": None, "--gate-mean": "1.5", "--gate-min": "1.5"}


def typed_flags(command: str) -> dict[str, list[str]]:
    """The command's flags by type: 'int', 'float', 'choice' (flag -> its first name)."""
    found: dict[str, list[str]] = {"int": [], "float": [], "choice": []}
    from bertlens.cli.derived import flags_of

    derived = importlib.import_module(f"bertlens.cli.{command}").COMMAND
    hints = typing.get_type_hints(derived.options_class())
    for flag, name in flags_of(derived).items():
        hint = hints[name]
        plain = [t for t in typing.get_args(hint) if t is not type(None)] or [hint]
        if choices_of(hint) is not None:
            found["choice"].append(flag)
        elif plain[0] is int:
            found["int"].append(flag)
        elif plain[0] is float:
            found["float"].append(flag)
    return found


def generated_cases() -> list[tuple[str, list[str], str]]:
    """(name, argv, what the one line must hold) for every typed flag of every command."""
    cases = []
    for command in COMMANDS:
        base = BASES[command]
        cases.append((f"{command} --no-such-flag", [*base, "--no-such-flag", "1"], "--no-such-flag"))
        flags = typed_flags(command)
        for flag in flags["int"]:
            cases.append((f"{command} {flag} -1", [*base, flag, "-1"], flag))
        for flag in flags["int"][:1]:
            cases.append((f"{command} {flag} a word", [*base, flag, "ten"], flag))
        for flag in flags["float"]:
            cases.append((f"{command} {flag} nan", [*base, flag, "nan"], flag))
            bad = OUT_OF_RANGE.get(flag, "-1")
            if bad is not None:
                cases.append((f"{command} {flag} {bad}", [*base, flag, bad], flag))
        for flag in flags["choice"]:
            cases.append((f"{command} {flag} not a choice", [*base, flag, "no-such-choice"], flag))
    return cases
