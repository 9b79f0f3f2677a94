"""`make lint`'s ruff (pyproject.toml [tool.ruff]) catches what let a NameError sit in the queue's error path: a name
used in an `except` clause that nothing binds, and an import nobody uses; and the tree as it stands passes."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
RUFF = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
pytestmark = pytest.mark.skipif(RUFF is None, reason="ruff is not installed (the dev extra brings it)")

QUEUE_AS_IT_WAS = '''
import logging

log = logging.getLogger(__name__)


async def settle(message):
    try:
        await message.ack()
    except QueueError as exc:
        log.warning("could not settle: %s", exc)
'''


def ruff(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([RUFF, "check", "--no-cache", "--output-format", "concise", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_the_projects_rules_find_an_undefined_name_in_an_except_clause_and_an_unused_import(tmp_path):
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    (tmp_path / "queue.py").write_text(QUEUE_AS_IT_WAS)
    (tmp_path / "unused.py").write_text("import json\n")
    done = ruff(".", cwd=tmp_path)
    assert done.returncode == 1
    assert "queue.py:10:12: F821 Undefined name `QueueError`" in done.stdout, done.stdout
    assert "unused.py:1:8: F401" in done.stdout, done.stdout


def test_the_tree_passes_and_make_lint_runs_it():
    done = ruff(".")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ruff check --no-cache ." in (ROOT / "Makefile").read_text()
