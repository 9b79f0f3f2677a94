"""lint-imports passes on the tree, and fails when a module imports across a wing's wall."""

import pathlib
import shutil
import subprocess
import sys
import tomllib

import pytest

from support.paths import ROOT

pytestmark = pytest.mark.integration

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


def broken_contracts(output: str) -> list[str]:
    """The names of the contracts lint-imports reports broken (it wraps long names: compared with spaces collapsed)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    text = " ".join(output.split())
    return [c["name"] for c in config["contracts"] if f"{' '.join(c['name'].split())} BROKEN" in text]


STACKING_FUNCTIONS = "Stacking's functions load neither Downpour nor LambdaML, nor a worker's call"


@pytest.mark.parametrize("module, line, contracts", [
    ("downpour/worker.py", "from faasgd.cli import progress", ["Wing 1"]),
    ("store/base.py", "import flask", ["Wing 1"]),
    ("functions/emnist_setup.py", "import matplotlib", ["Wing 1"]),
    ("local/replicas/supervisor.py", "from faasgd.downpour import worker", ["Wing 2"]),
    # stacking's function imports faasgd.stacking: a stacking module importing Downpour reaches it too
    ("stacking/flow.py", "from faasgd.downpour import worker", ["Workloads never import each other", STACKING_FUNCTIONS]),
    ("lambdaml/rounds/exchange.py", "from faasgd.stacking import records", ["Workloads never import each other"]),
    ("functions/supervise.py", "from faasgd.lambdaml import sync_worker", ["The shared layers import no workload"]),
    ("functions/stacking.py", "from faasgd.worker import budget", [STACKING_FUNCTIONS]),
    ("batch/runs.py", "from faasgd.cli import train", ["Wing 3"]),
    # the Python API reads stacking's runs: a shared layer importing it imports a workload too
    ("job/ending.py", "from faasgd import api", ["Wing 1", "The shared layers import no workload"]),
    ("job/records.py", "from faasgd.job import status", ["The job package imports one way"]),
    ("api/jobs.py", "from faasgd.cli import progress", ["Wing 3's Python API"]),
    ("cli/main.py", "from faasgd.testing import faults", ["No module of faasgd imports its test tooling"]),
])
def test_a_wrong_import_breaks_its_contract(tree, module, line, contracts):
    path = tree / "src" / "faasgd" / module
    path.write_text(path.read_text() + f"\n{line}  # deliberately wrong\n")
    run = lint(tree)
    assert run.returncode == 1
    assert f"{len(contracts)} broken" in run.stdout, run.stdout[-3000:]
    broken = broken_contracts(run.stdout)
    assert len(broken) == len(contracts) and all(
        any(name.startswith(prefix) for name in broken) for prefix in contracts), broken
