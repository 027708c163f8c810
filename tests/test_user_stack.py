"""bertlens inside a user's own stack: the core commands end to end on the default model, the one-line message for
a missing extra, and a core run that never touches the server or ONNX stack.

These run in `make test` (bertlens' pinned venv) and again, marked `userstack`, in CI's user-stack leg
(`.ci/user_stack`): the wheel installed without the constraints file into a venv that holds a typical user's
packages (sentence-transformers 5.7 + transformers 4.57 + huggingface_hub 0.x; then sentence-transformers 6 +
transformers 5 with every extra). They import `bertlens` from wherever it is installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bertlens.cli.main import main
from bertlens.extras import EXTRAS, has_extra
from tests.conftest import DATA
from tests.integration.commands import TEXTS, command_call

pytestmark = pytest.mark.userstack

HEAVY_STACKS = ("fastapi", "uvicorn", "onnxruntime", "onnx", "onnxscript", "lancedb", "chromadb", "ray")


def _python(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter (the one running the tests: the same install), offline."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "BERTLENS_DATA": str(DATA)}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600
    )


def test_embed_fp32_equals_sentence_transformers(tmp_path, default_model_dir, capsys):
    from sentence_transformers import SentenceTransformer

    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n")
    out = tmp_path / "v.npy"
    assert main(["embed", str(texts), "--precision", "fp32", "--normalize", "--out", str(out), "--quiet"]) == 0, (
        capsys.readouterr()
    )
    reference = SentenceTransformer(str(default_model_dir), device="cpu").encode(TEXTS, convert_to_numpy=True)
    np.testing.assert_allclose(np.load(out), reference, atol=1e-5, rtol=0)


def test_sweep_stsb_runs_and_recommends(tmp_path, capsys):
    out = tmp_path / "sweep"
    argv = ["sweep", "--task", "stsb", "--max-examples", "300", "--seed", "1", "--resamples", "200", "--out", str(out)]
    assert main([*argv, "--quiet"]) == 0, capsys.readouterr().err
    rows = json.loads((out / "results.json").read_text())["rows"]
    assert any(row["protocol"] == "cosine" for row in rows)
    assert json.loads((out / "recipe.json").read_text())["pooler"] in ("cls", "mean", "max", "attention")


@pytest.mark.parametrize("command", ["probe", "finetune", "recommend", "export st"])
def test_core_command_runs(command, tmp_path, default_model_dir, mini_data_dir, capsys):
    """Each core command on the default model and a miniature data directory (export st checks its own parity
    against bertlens' vectors, within 1e-5, through the installed sentence-transformers)."""
    argv = command_call(command, str(default_model_dir), tmp_path, mini_data_dir)
    if command == "recommend":
        argv += ["--no-int8"]
    assert main([*argv, "--quiet"]) == 0, capsys.readouterr().err
    if command == "export st":  # loaded back by the installed sentence-transformers, as a user would
        from sentence_transformers import SentenceTransformer

        from bertlens.embedding.embedder import Embedder
        from bertlens.representation.recipe import Recipe

        got = SentenceTransformer(str(tmp_path / "export-st"), device="cpu").encode(TEXTS, convert_to_numpy=True)
        want = Embedder(Recipe(model=str(default_model_dir), precision="fp32")).encode(TEXTS)
        np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)


def test_a_missing_extra_is_one_line_before_any_work(tmp_path):
    """`bertlens serve` without the serve extra: one line naming it, exit 1, no model loaded. Where the extra is
    installed, its modules are blocked in the child (sys.modules[name] = None is how Python marks one missing)."""
    blocked = "" if not has_extra("serve") else "".join(f"sys.modules[{m!r}] = None; " for m in EXTRAS["serve"].modules)
    code = (
        f"import sys; {blocked}from bertlens.cli.main import main; code = main(['serve', '--model', 'default']); "
        "print('torch loaded' if 'torch' in sys.modules else 'torch not loaded'); sys.exit(code)"
    )
    done = _python(code, tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1, done.stderr
    assert len(lines) == 1 and "pip install 'bertlens[serve]'" in lines[0], done.stderr
    assert lines[0].startswith("bertlens serve: error: bertlens serve needs the 'serve' extra"), lines[0]
    assert "torch not loaded" in done.stdout


def test_python_api_names_the_missing_extra(tmp_path):
    """From Python, importing the server without its extra raises BertlensError naming the extra."""
    blocked = "".join(f"sys.modules[{m!r}] = None; " for m in EXTRAS["serve"].modules)
    code = (
        f"import sys; {blocked}\nfrom bertlens import BertlensError\ntry:\n    import bertlens.serving.app\n"
        "except BertlensError as e:\n    print(e)\n"
    )
    done = _python(code, tmp_path)
    assert "pip install 'bertlens[serve]'" in done.stdout, done.stdout + done.stderr


def test_core_commands_never_import_the_server_or_onnx_stack(tmp_path):
    """embed and sweep in a fresh interpreter: none of the optional stacks is imported (a core install lacks them;
    an install with them must not pay their import time either)."""
    texts = tmp_path / "t.txt"
    texts.write_text("\n".join(TEXTS) + "\n")
    code = (
        "import sys; from bertlens.cli.main import main\n"
        f"assert main(['embed', {str(texts)!r}, '--out', 'v.npy', '--quiet']) == 0\n"
        "assert main(['sweep', '--task', 'stsb', '--max-examples', '60', '--resamples', '50', '--out', 's', "
        "'--quiet']) == 0\n"
        f"print(sorted(m for m in {HEAVY_STACKS!r} if m in sys.modules))\n"
    )
    done = _python(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout


def test_version_names_the_stack(capsys):
    import torch
    import transformers

    assert main(["--version"]) == 0
    printed = capsys.readouterr().out
    assert f"torch {torch.__version__}" in printed and f"transformers {transformers.__version__}" in printed


@pytest.mark.skipif(not os.environ.get("BERTLENS_EXPECT_INSTALLED"), reason="only in CI's user-stack leg")
def test_bertlens_is_the_installed_wheel():
    """The leg tests the wheel as a user installs it, not the checkout's src/."""
    import bertlens

    assert "site-packages" in bertlens.__file__, bertlens.__file__


def test_every_commands_help_works_with_whatever_is_installed(capsys):
    """`bertlens --help` and every command's `--help` load nothing optional: they work with the core install alone."""
    from bertlens.cli.commands import COMMANDS

    for command in ("", *COMMANDS):
        assert main([command, "--help"] if command else ["--help"]) == 0, command
        assert "usage: bertlens" in capsys.readouterr().out.lower(), command
