"""lint-imports passes on the tree, and fails when a module imports across a wing's wall."""

import pathlib
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

ROOT = pathlib.Path(__file__).resolve().parents[2]
LINT = pathlib.Path(sys.executable).with_name("lint-imports")


def lint(tree: pathlib.Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT), "--no-cache", "--config", str(tree / "pyproject.toml")], cwd=tree,
                          env={"PYTHONPATH": str(tree / "src"), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def tree(tmp_path):
    shutil.copytree(ROOT / "src", tmp_path / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_tree_keeps_every_contract(tree):
    run = lint(tree)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    contracts = (ROOT / "pyproject.toml").read_text().count("[[tool.importlinter.contracts]]")
    assert contracts >= 4 and f"{contracts} kept, 0 broken" in run.stdout


@pytest.mark.parametrize("module, line, contract", [
    ("sgd/worker.py", "from faasgd.cli import progress", "Wing 1"),
    ("store/base.py", "import flask", "Wing 1"),
    ("functions/emnist_setup.py", "import matplotlib", "Wing 1"),
    ("local/replicas.py", "from faasgd.sgd import worker", "Wing 2"),
    ("batch/runs.py", "from faasgd.cli import train", "Wing 3"),
    ("job/ending.py", "from faasgd import api", "Wing 1"),
    ("job/records.py", "from faasgd.job import status", "The job package imports one way"),
    ("api/jobs.py", "from faasgd.cli import progress", "Wing 3's Python API"),
])
def test_a_wrong_import_breaks_its_contract(tree, module, line, contract):
    path = tree / "src" / "faasgd" / module
    path.write_text(path.read_text() + f"\n{line}  # deliberately wrong\n")
    run = lint(tree)
    assert run.returncode == 1
    assert "1 broken" in run.stdout
    broken = " ".join(run.stdout.split("BROKEN")[0].split("\n\n")[-1].split())  # the broken contract's name
    assert broken.split("KEPT")[-1].strip().startswith(contract), run.stdout
