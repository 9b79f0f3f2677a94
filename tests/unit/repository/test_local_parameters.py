"""Values that travel together travel as one: no function of the local runtime (nor the Python API's start of it)
takes 9 or more parameters (self and cls not counted); `faasgd up`'s settings go down as one UpOptions."""

from __future__ import annotations

import ast

from support.paths import ROOT

MAX_PARAMETERS = 8


def parameter_counts() -> dict[str, int]:
    files = [*(ROOT / "src" / "faasgd" / "local").rglob("*.py"), ROOT / "src" / "faasgd" / "api" / "local_runtime.py"]
    counts = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
                names += ["*"] * bool(args.vararg) + ["**"] * bool(args.kwarg)
                counts[f"{path.relative_to(ROOT).as_posix()}::{node.name}"] = \
                    len([name for name in names if name not in ("self", "cls")])
    return counts


def test_no_function_of_the_local_runtime_takes_nine_parameters_or_more():
    counts = parameter_counts()
    assert len(counts) > 300  # every module was read
    assert {name: count for name, count in counts.items() if count > MAX_PARAMETERS} == {}
