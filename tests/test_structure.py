"""Structure the code keeps: no function in src/ over 100 lines or 9 parameters (ruff's C901/PLR0912/PLR0915 cap complexity,
branches and statements; lines it cannot count)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "bertlens"
MAX_LINES = 100


def test_no_function_is_over_100_lines():
    long = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_LINES:
                    long.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, "split these into named steps: " + "; ".join(long)


MAX_PARAMETERS = 9
ESTIMATORS = {"adapters/sklearn.py"}  # scikit-learn's convention: an estimator's constructor lists its parameters


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    args = node.args
    count = len(args.posonlyargs) + len(args.args) + len(args.kwonlyargs) + bool(args.vararg) + bool(args.kwarg)
    return count - bool(args.args and args.args[0].arg in ("self", "cls"))


def test_no_function_takes_more_than_nine_parameters():
    """Parameters that travel together become an options or context object (RunContext, a config dataclass)."""
    wide = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _parameters(node) > MAX_PARAMETERS:
                if not (node.name == "__init__" and str(path.relative_to(SRC)) in ESTIMATORS):
                    wide.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name} ({_parameters(node)})")
    assert not wide, "group parameters that travel together: " + "; ".join(wide)


def test_the_package_declares_lower_bounds_and_the_extras_it_names():
    """A library installs into its user's stack: no exact pins in what pip resolves for a user (constraints.txt
    holds those), and every extra the code names (extras.py, the missing-extra lines) exists in pyproject."""
    import tomllib

    from bertlens.extras import EXTRAS

    project = tomllib.loads((SRC.parents[1] / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    declared = [*project["dependencies"], *(r for group in extras.values() for r in group)]
    assert not [r for r in declared if "==" in r], declared
    assert set(EXTRAS) | {"all", "test"} <= set(extras)
    from bertlens.extras import NOT_IN_ALL

    assert set(NOT_IN_ALL) <= set(EXTRAS) and len(NOT_IN_ALL) == 1  # only NNCF's numpy cap: a new one needs a reason

    (everything,) = extras["all"]  # 'bertlens[serve,onnx,...]': every extra above but NOT_IN_ALL, and nothing else
    assert set(everything.removeprefix("bertlens[").removesuffix("]").split(",")) == set(EXTRAS) - set(NOT_IN_ALL)
