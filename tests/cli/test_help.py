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
        main([sys.argv[1], "--help"])
    except SystemExit as exc:
        code = exc.code
print(json.dumps({{"code": code, "help": out.getvalue(), "heavy": [m for m in HEAVY if m in sys.modules]}}))
"""


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_imports_no_heavy_library(command):
    done = subprocess.run([sys.executable, "-c", PROBE, command], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["code"] == 0 and f"usage: bertlens {command}" in result["help"]
    assert result["heavy"] == [], f"`bertlens {command} --help` imported {result['heavy']}"
