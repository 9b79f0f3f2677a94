"""Every command line of docs/how-to/tracking.md's fenced blocks runs as typed, in order, in a fresh folder.

Substituted, and nothing else: the documented store URL by the test's redis-server, `faasgd` and `python` by this
interpreter (`-m faasgd.cli`), and the repository's paths (`src/...`) made absolute, as run from the repository root.
Each line must exit 0.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

import pytest

from support.paths import ROOT

pytestmark = pytest.mark.e2e
PAGE = ROOT / "docs" / "how-to" / "tracking.md"
DOCUMENTED_STORE = "redis://127.0.0.1:6379/0"
_BLOCK = re.compile(r"^```(?:bash|console)?\n(.*?)^```", re.M | re.S)


def lines() -> list[str]:
    return [line.strip() for block in _BLOCK.findall(PAGE.read_text()) for line in block.splitlines()
            if line.strip().startswith(("faasgd ", "python "))]


def argv(line: str, store_url: str) -> list[str]:
    words = [store_url if w == DOCUMENTED_STORE else str(ROOT / w) if w.startswith("src/") else w
             for w in shlex.split(line)]
    return [sys.executable, "-m", "faasgd.cli", *words[1:]] if words[0] == "faasgd" else [sys.executable, *words[1:]]


def test_the_page_has_lines_for_every_tracker():
    text = " ".join(lines())
    assert "--mllog" in text and "compliance_checker" in text


def test_each_documented_line_runs_as_typed(redis_server, tmp_path):
    pytest.importorskip("mlperf_logging")
    for line in lines():
        done = subprocess.run(argv(line, redis_server.url), capture_output=True, text=True, cwd=tmp_path, timeout=300)
        assert done.returncode == 0, f"{line}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
