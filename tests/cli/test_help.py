"""Every `bertlens CMD --help` answers without importing torch, transformers or numpy (each in a fresh process)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bertlens.cli.commands import COMMANDS

HEAVY = ("torch", "transformers", "numpy", "scipy", "sklearn", "fastapi", "onnxruntime")
PROBE = f"""
HEAVY = {HEAVY!r}
import contextlib, io, json, sys
from bertlens.cli.main import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        code = main([sys.argv[1], "--help"])  # argparse's exit comes back as main's return code
    except SystemExit as exc:
        code = -1
print(json.dumps({{"code": code, "help": out.getvalue(), "heavy": [m for m in HEAVY if m in sys.modules]}}))
"""


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_imports_no_heavy_library(command):
    done = subprocess.run([sys.executable, "-c", PROBE, command], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["code"] == 0 and f"usage: bertlens {command}" in result["help"].lower()
    assert result["heavy"] == [], f"`bertlens {command} --help` imported {result['heavy']}"


def test_every_encoding_command_takes_a_device_and_an_unseen_gpu_is_one_line(capsys, monkeypatch, tmp_path):
    import torch

    from bertlens.cli.main import main

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    texts = tmp_path / "t.txt"
    texts.write_text("a text\n")
    code = main(["embed", str(texts), "--device", "cuda", "--out", str(tmp_path / "v.npy"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 1 and "--device cuda: torch sees no CUDA device here" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "v.npy").exists()
