"""A module works through another's public face: no `other._name` read in the package's source, except on the
object's own class (`self`, `cls`, `super()`) and the few private names of the standard library and third-party
packages we must reach (listed below, each with why). memcached_push.py once used ten private methods of the
Memcached store; it now works through the `PushPort` the store hands it."""

from __future__ import annotations

import ast

from support.paths import ROOT

ALLOWED = {
    "os._exit",  # a forked child's exit without the parent's atexit handlers
    "os._Environ",  # the type of os.environ, for an isinstance check
    "self._pool._threads",  # ThreadPoolExecutor keeps its threads there (no public way to name them)
    "server._map",  # waitress keeps its socket map there: a renewed replica hands it the listening sockets
    "estimator._fit_X",  # scikit-learn's fitted KNN data: the stacking model's size
    "estimator._y",
    "base._connect",  # redis-py's Connection._connect, wrapped to count the socket's bytes
    "other._keep_by_job",  # a store of the same class (ParameterStore.reopened)
    "store._reopen",  # set by open_store on the store it built, read by ParameterStore itself
}


def private_reads(tree: ast.AST) -> list[str]:
    reads = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or node.attr.startswith("__"):
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
            continue
        if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
            continue
        reads.append(ast.unparse(node))
    return reads


def test_the_finder_sees_a_private_read_and_lets_the_own_class_through():
    tree = ast.parse("def f(store):\n    self._a; cls._b; super()._c; store._decode(1); os._exit(0)\n")
    assert private_reads(tree) == ["store._decode", "os._exit"]


def test_no_module_reads_another_objects_private_names():
    found = {}
    for path in sorted((ROOT / "src" / "faasgd").rglob("*.py")):
        reads = [r for r in private_reads(ast.parse(path.read_text())) if r not in ALLOWED]
        if reads:
            found[str(path.relative_to(ROOT))] = reads
    assert not found, found
