"""Values that travel together travel as one: no function of the package takes 9 or more parameters.

Counted: positional, keyword-only, *args and **kwargs, not `self` or `cls`. Nine values handed on together are a
concept without a name (a worker's call is a `Call`, its rows `WorkerRows`, ADMM's settings `AdmmSettings`); give
it one; nothing is let through anywhere, the local runtime included (its `faasgd up` travels as one UpOptions).
"""

from __future__ import annotations

import ast

from support.paths import ROOT

MAX_PARAMETERS = 8


def parameter_count(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    args = function.args
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return len(names) - (1 if names[:1] in (["self"], ["cls"]) else 0)


def long_signatures(tree: ast.AST, prefix: str = "") -> dict[str, int]:
    """Every function (methods as Class.name) of `tree` with more than MAX_PARAMETERS, and its count."""
    found = {}
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.ClassDef):
            found.update(long_signatures(node, f"{prefix}{node.name}."))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if parameter_count(node) > MAX_PARAMETERS:
                found[prefix + node.name] = parameter_count(node)
            found.update(long_signatures(node, f"{prefix}{node.name}."))
    return found


def test_the_counter_counts_what_a_caller_passes():
    tree = ast.parse("class A:\n    def m(self, a, *b, c, **d): pass\n"
                     "def f(a, b, c, d, e, f, g, h, i): pass\ndef g(a, b, c, d, e, f, g, h): pass\n")
    assert parameter_count(tree.body[0].body[0]) == 4
    assert long_signatures(tree) == {"f": 9}


def test_no_function_takes_nine_or_more_parameters():
    found = {}
    files = sorted((ROOT / "src" / "faasgd").rglob("*.py"))
    assert len(files) > 100  # the whole package was read
    for path in files:
        name = path.relative_to(ROOT).as_posix()
        for function, count in long_signatures(ast.parse(path.read_text())).items():
            found[f"{name}:{function}"] = count
    assert found == {}
