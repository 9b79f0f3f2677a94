"""Every command line of docs/how-to/tracking.md's fenced blocks runs as typed, in order, in a fresh folder.

Substituted, and nothing else: the documented store URL by the test's redis-server, `faasgd` and `python` by this
interpreter (`-m faasgd.cli`), and the repository's paths (`src/...`) made absolute, as run from the repository root.
Each line must exit 0.
"""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from support.paths import ROOT

pytestmark = pytest.mark.e2e
PAGE = ROOT / "docs" / "how-to" / "tracking.md"
DOCUMENTED_STORE = "redis://127.0.0.1:6379/0"
SHELL = ("", "bash", "console", "sh")  # a fenced block in one of these languages holds command lines


def lines() -> list[str]:
    """The `faasgd` and `python` lines of the page's shell blocks, in order."""
    found, language = [], None
    for line in PAGE.read_text().splitlines():
        if line.startswith("```"):
            language = line[3:].strip() if language is None else None
        elif language in SHELL and line.strip().startswith(("faasgd ", "python ")):
            found.append(line.strip())
    return found


def argv(line: str, store_url: str) -> list[str]:
    words = [store_url if w == DOCUMENTED_STORE else str(ROOT / w) if w.startswith("src/") else w
             for w in shlex.split(line)]
    return [sys.executable, "-m", "faasgd.cli", *words[1:]] if words[0] == "faasgd" else [sys.executable, *words[1:]]


def test_the_page_has_lines_for_every_tracker():
    text = " ".join(lines())
    assert all(flag in text for flag in ("--mllog", "compliance_checker", "--metrics-lines", "--tensorboard",
                                         "--mlflow"))


def test_each_documented_line_runs_as_typed(redis_server, tmp_path):
    pytest.importorskip("mlperf_logging")
    for line in lines():
        done = subprocess.run(argv(line, redis_server.url), capture_output=True, text=True, cwd=tmp_path, timeout=300)
        assert done.returncode == 0, f"{line}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
