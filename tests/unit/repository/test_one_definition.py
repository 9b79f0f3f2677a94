"""One name, one meaning: a constant shared by several modules is defined in one and imported by the others, and the
check of a whole number is written once, in faasgd.checks."""

import ast
import re

from support.paths import ROOT

PACKAGE = ROOT / "src" / "faasgd"
SHARED = {"SECRETS_DIR": "store/__init__.py", "ACTIVATIONS": "model/activations.py"}  # name -> its one home
HAND_WRITTEN = re.compile(r"isinstance\([\w.]*, bool\) or not isinstance")  # self.x too


def top_level_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def test_each_shared_constant_is_defined_in_one_module():
    homes = {name: [] for name in SHARED}
    for path in PACKAGE.rglob("*.py"):
        for name in top_level_names(ast.parse(path.read_text())) & set(SHARED):
            homes[name].append(path.relative_to(PACKAGE).as_posix())
    assert homes == {name: [home] for name, home in SHARED.items()}


def test_the_check_of_a_whole_number_is_written_only_in_faasgd_checks():
    found = {path.relative_to(PACKAGE).as_posix(): len(HAND_WRITTEN.findall(path.read_text()))
             for path in PACKAGE.rglob("*.py")}
    assert {name: count for name, count in found.items() if count} == {"checks.py": 2}
