"""The bad-input table of docs/results-log.md: every case of the command line (hand-written, tests/cli/bad_inputs.py, and
generated for every typed flag, tests/cli/bad_flag_values.py), of the server's routes (tests/serving/bad_requests.py)
and of the Python API (tests/api/bad_calls.py), each run for real.

Prints one Markdown table per surface and a summary counting tracebacks, answers that came back as success (exit 0,
a 2xx, a call that returned) and messages without their expected words.
Run: .venv/bin/python bench/bad_input_table.py
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
from tests.cli.bad_flag_values import generated_cases  # noqa: E402
from tests.cli.bad_inputs import CASES, expand, make_files  # noqa: E402
from tests.conftest import DATA, make_tiny_bert  # noqa: E402


def tiny_model(root: Path) -> Path:
    """The same 2-layer random BERT the tests use (default tokenizer)."""
    from bertlens.models import default_model_dir

    (root / "tiny-bert").mkdir()
    return make_tiny_bert(root / "tiny-bert", default_model_dir())


class Tally:
    def __init__(self) -> None:
        self.cases = self.tracebacks = self.successes = self.unexpected = 0

    def count(self, text: str, success: bool, expected: str) -> None:
        self.cases += 1
        self.tracebacks += "Traceback" in text
        self.successes += success
        self.unexpected += expected not in text


def _cell(text: str, tmp: Path) -> str:
    return text.replace(str(tmp), "T").replace(str(DATA), "$BERTLENS_DATA").replace("|", "\\|")


def command_line_table(tmp: Path, model: Path, tally: Tally) -> None:
    cases = CASES + generated_cases()
    print(f"#### The command line: {len(CASES)} hand-written cases, {len(cases) - len(CASES)} generated\n")
    print("| # | case | command | exit | first line of stderr |")
    print("|---|---|---|---|---|")
    for number, (name, argv, expected) in enumerate(cases, start=1):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(expand(argv, tmp, model, DATA))
        text = err.getvalue()
        tally.count(text, code == 0, expected)
        first = next((line for line in text.splitlines() if line.strip() and "warning:" not in line), "")
        shown = " ".join(
            a.replace("{tmp}", "T").replace("{model}", "TINY").replace("{data}", "$BERTLENS_DATA") for a in argv[:6]
        )
        print(
            f"| {number} | {_cell(name, tmp)} | `bertlens {shown}{' ...' if len(argv) > 6 else ''}` | {code} | "
            f"{_cell(first, tmp)} |"
        )


def server_table(model: Path, tally: Tally) -> None:
    import httpx

    from bertlens.embedding.embedder import Embedder
    from bertlens.representation.recipe import Recipe
    from bertlens.serving.app import create_app
    from bertlens.serving.config import ServeOptions
    from tests.serving.bad_requests import KEY, LIMITS, REQUESTS
    from tests.serving.test_app import Server

    print(f"\n#### The server: {len(REQUESTS)} bad requests over every route\n")
    print("| # | route | case | status | error message |")
    print("|---|---|---|---|---|")
    embedder = Embedder(Recipe(model=str(model), pooler="max", normalize=True))
    with Server(create_app(embedder, ServeOptions(LIMITS, api_key=KEY, name="tiny"))) as url:
        for number, (name, method, path, body, headers, status, words) in enumerate(REQUESTS, start=1):
            sent = {"Content-Type": "application/json", "Authorization": f"Bearer {KEY}", **headers}
            response = httpx.request(method, url + path, content=body, headers=sent, timeout=30)
            try:
                message = response.json()["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = f"(not the JSON error shape) {response.text[:80]}"
            tally.count(response.text if response.status_code == status else "", response.is_success, words)
            print(f"| {number} | {method} {path} | {name} | {response.status_code} | {message.replace('|', '/')} |")


def python_table(tmp: Path, model: Path, tally: Tally) -> None:
    import bertlens
    from tests.api.bad_calls import CASES as CALLS
    from tests.api.bad_calls import Inputs

    print(f"\n#### The Python API: {len(CALLS)} bad calls\n")
    print("| # | call | raised | message |")
    print("|---|---|---|---|")
    inputs = Inputs(tmp, model, DATA)
    for number, (name, call, expected) in enumerate(CALLS, start=1):
        try:
            with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
                call(inputs)
            raised, message = "nothing", ""
        except bertlens.BertlensError as error:
            raised, message = type(error).__name__, str(error)
        except Exception as error:  # noqa: BLE001 - a bare exception is what the table exists to catch
            raised, message = f"{type(error).__name__} (not a BertlensError)", str(error)
        tally.count(message + ("Traceback" if "not a BertlensError" in raised else ""), raised == "nothing", expected)
        print(f"| {number} | {name} | {raised} | {_cell(message, tmp)} |")


def main_table() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        model = tiny_model(tmp)
        make_files(tmp, model)
        tally = Tally()
        command_line_table(tmp, model, tally)
        server_table(model, tally)
        python_table(tmp, model, tally)
        print(
            f"\n{tally.cases} cases: {tally.tracebacks} tracebacks (or errors that are not BertlensErrors), "
            f"{tally.successes} answered as success, {tally.unexpected} without their expected words"
        )


if __name__ == "__main__":
    main_table()
