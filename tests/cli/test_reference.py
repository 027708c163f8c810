"""docs/cli.md is the commands' own parsers, rendered: a flag added, removed or reworded without regenerating it
fails here (regenerate: python -m bertlens.cli.reference > docs/cli.md)."""

from bertlens.cli.commands import COMMANDS
from bertlens.cli.reference import accepted_flags, render
from tests.conftest import REPO


def test_the_reference_is_not_stale():
    assert (REPO / "docs" / "cli.md").read_text(encoding="utf-8") == render(), (
        "docs/cli.md is stale: python -m bertlens.cli.reference > docs/cli.md"
    )


def test_every_flag_of_every_command_is_in_the_reference():
    text = render()
    for name in COMMANDS:
        for flag in accepted_flags(name) - {"-h", "--help"}:
            assert f"`{flag}`" in text, (name, flag)
