"""The benchmark scripts still import against the current library (they run by hand, not in CI)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from tests.conftest import REPO

SCRIPTS = sorted((REPO / "bench").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_bench_script_imports(script, monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "bench"))
    spec = importlib.util.spec_from_file_location(f"bench_{script.stem}", script)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)  # module level only: every script guards its work with __main__
