"""The bad-input table of docs/results.md: every case of tests/cli/bad_inputs.py run through the CLI.

Prints one Markdown row per case (case, command, exit code, first line of stderr) and a summary
line counting tracebacks and cases that exited 0. Run: .venv/bin/python bench/bad_input_table.py
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bertlens.cli.main import main  # noqa: E402
from tests.cli.bad_inputs import CASES, expand, make_files  # noqa: E402
from tests.conftest import DATA, make_tiny_bert  # noqa: E402


def tiny_model(root: Path) -> Path:
    """The same 2-layer random BERT the tests use (default tokenizer)."""
    from bertlens.models import default_model_dir

    (root / "tiny-bert").mkdir()
    return make_tiny_bert(root / "tiny-bert", default_model_dir())


def main_table() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        model = tiny_model(tmp)
        make_files(tmp, model)
        print("| # | case | command | exit | first line of stderr |")
        print("|---|---|---|---|---|")
        tracebacks = zero_exits = 0
        for number, (name, argv, _) in enumerate(CASES, start=1):
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                code = main(expand(argv, tmp, model, DATA))
            text = err.getvalue()
            tracebacks += "Traceback" in text
            zero_exits += code == 0
            first = next((line for line in text.splitlines() if line.strip()), "").replace(str(tmp), "T")
            first = first.replace(str(DATA), "$BERTLENS_DATA").replace("|", "\\|")
            shown = " ".join(
                a.replace("{tmp}", "T").replace("{model}", "TINY").replace("{data}", "$BERTLENS_DATA") for a in argv[:6]
            )
            print(f"| {number} | {name} | `bertlens {shown}{' ...' if len(argv) > 6 else ''}` | {code} | {first} |")
        print(f"\n{len(CASES)} cases: {tracebacks} tracebacks, {zero_exits} exited 0")


if __name__ == "__main__":
    main_table()
