"""Every documented `faasgd` line that uses a store the local runtime starts on demand (`--stores`, `--store cluster`,
`--store pool`, `--channel s3`, `--channel dynamodb`) runs as typed, in README.md and the site's pages (mkdocs.yml's nav), against the
repository's stack.yml as it is: no stack edit, nothing started by hand.

Each fenced block holding such a line is a session in a fresh runtime folder: its `faasgd up` and `faasgd down`
lines and its store lines run in order. Substituted, and nothing else: `up` gets `--port 0` and every command the
test's folder (`--dir`), and a `train` gets flags appended that make its job small (argparse takes the last value
of a flag given twice: a fraction of the data, one epoch, no target to reach), so each line's own flags (workers,
store, channel, algorithm, dataset) are what the job runs with. Each must exit 0 (a train: its job done). Then a
documented store line run with no runtime running starts one with that store and stops it again.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

import pytest
import yaml

from faasgd.local.lifecycle import control
from support.docs import nav_pages
from support.paths import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]
_BLOCK = re.compile(r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```", re.M | re.S)
_USES_OPTIONAL = re.compile(r"--stores\b|--store\s+(?:cluster|pool)\b|--channel\s+(?:s3|dynamodb)\b")
SMALL_JOB = ["--train-samples", "2000", "--test-samples", "200", "--validation-samples", "200", "--max-epochs", "1",
             "--target-accuracy", "1.0", "--profile-hz", "0", "--timeout", "600"]


def documents() -> dict[str, str]:
    pages = nav_pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"])
    return {"README.md": (ROOT / "README.md").read_text(), **{page: (ROOT / "docs" / page).read_text() for page in pages}}


def sessions() -> list[tuple[str, list[str]]]:
    """(document, the block's up/down and optional-store lines in order) for each block using an optional store; a
    synopsis (`[--flag ...]`) is not a line to run."""
    found = []
    for name, text in documents().items():
        for block in _BLOCK.findall(text):
            lines = [re.sub(r"\s{2,}#.*$", "", line).strip() for line in block.splitlines()]
            lines = [line for line in lines if line.startswith("faasgd ") and "[-" not in line]
            if any(_USES_OPTIONAL.search(line) for line in lines):
                found.append((name, [line for line in lines
                                     if _USES_OPTIONAL.search(line) or line.split()[1] in ("up", "down")]))
    return found


def argv(line: str, directory) -> list[str]:
    words = shlex.split(line)[1:]
    extra = {"up": ["--port", "0"], "train": SMALL_JOB}.get(words[0], [])
    return [sys.executable, "-m", "faasgd.cli", *words, *extra, "--dir", str(directory)]


def run(line: str, directory) -> subprocess.CompletedProcess:
    return subprocess.run(argv(line, directory), capture_output=True, text=True, cwd=ROOT, timeout=900)


def test_the_documentation_has_the_lines_this_test_runs():
    found = dict(sessions())
    readme = found["README.md"]
    assert any(line.startswith("faasgd up --stores") for line in readme)
    assert any("--store pool" in line for line in readme)
    lines = [line for _, block in sessions() for line in block]
    assert any("--store cluster" in line for line in lines) and any("--channel s3" in line for line in lines)
    assert any("--channel dynamodb" in line and "--stores" not in line for line in lines)
    assert argv("faasgd train --store pool", "D")[-len(SMALL_JOB) - 2:-2] == SMALL_JOB


@pytest.mark.parametrize("document, lines", sessions(), ids=[f"{name}:{i}" for i, (name, _) in enumerate(sessions())])
def test_each_documented_session_runs_as_typed(document, lines, tmp_path):
    directory = tmp_path / ".faasgd"
    failures = []
    try:
        for line in lines:
            done = run(line, directory)
            if done.returncode != 0:
                failures.append(f"{line}\n  exit {done.returncode}: {(done.stdout + done.stderr).strip()[-800:]}")
    finally:
        control.down(str(directory))
    assert not failures, f"documented lines of {document} that fail:\n" + "\n".join(failures)


def test_a_documented_store_line_with_no_runtime_starts_one_with_that_store_and_stops_it(tmp_path):
    line = next(line for line in dict(sessions())["README.md"] if "--store pool" in line)
    directory = tmp_path / ".faasgd"
    try:
        done = run(line, directory)
        assert done.returncode == 0, (done.stdout + done.stderr)[-1500:]
        assert "store pool (memcached://127.0.0.1:" in done.stdout + done.stderr  # the job ran on the pool
        assert control.read_state(str(directory)) is None  # the runtime it started is stopped again
    finally:
        control.down(str(directory))
