"""Every faas-cli line of the documentation, run with the real faas-cli against `faasgd up`, in reading order.

The documentation is README.md, the faas-cli how-to (docs/how-to/faas-cli.md: login first), then every page of
the site in mkdocs.yml's nav order.

A line is a line of a fenced block that runs faas-cli (alone, after `VAR=value`s or a pipe), or an
inline code span that is a faas-cli command with arguments (a bare verb in prose names a command,
it is not a line to run). Substituted, and nothing else: the gateway (http://127.0.0.1:8080 becomes
the runtime's URL, also in OPENFAAS_URL), the body (the JSON an `echo` pipes into `faas-cli invoke`
becomes a small synthetic job; `--password-stdin` without a redirect reads the runtime's password),
and `faas-cli up` gets `--skip-push` (a test never pushes). They run logged in, in a copy of the
project where `.faasgd` is the runtime's folder. Each must succeed, except `up` and `build` (not
`--shrinkwrap`), which on a machine without a Docker daemon must stop at the build with faas-cli's
own "Errors received during build" (the test names no Docker daemon, so it is so on every machine).
"""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest
import yaml

from support.docs import nav_pages
from support.paths import ROOT

pytestmark = [pytest.mark.openfaas, pytest.mark.serial, pytest.mark.timeout(600)]
DOCUMENTED_GATEWAY = "http://127.0.0.1:8080"
SMALL_JOB = json.dumps({"dataset": "synthetic", "train_samples": 2000, "test_samples": 200, "hidden_sizes": [16],
                        "max_epochs": 1, "number_of_workers": 2})
_BLOCK_OR_SPAN = re.compile(r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```|`([^`\n]+(?:\n[^`\n]+)?)`", re.M | re.S)
_RUNS_FAAS_CLI = re.compile(r"(?:^|\|\s*|&&\s*|;\s*)(?:\w+=\S*\s+)*faas-cli\s")
_SPAN_COMMAND = re.compile(r"^(?:\w+=\S*\s+)*faas-cli\s+[a-z-]+\s+\S")
_BUILDS = re.compile(r"faas-cli\s+(up|build)\b(?!.*--shrinkwrap)")
HOW_TO = "how-to/faas-cli.md"


def documentation() -> str:
    pages = nav_pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"])
    ordered = [HOW_TO] + [page for page in pages if page != HOW_TO]
    return "\n".join([(ROOT / "README.md").read_text()] + [(ROOT / "docs" / page).read_text() for page in ordered])


def faas_cli_lines(text: str) -> list[str]:
    """The faas-cli lines of a Markdown text, in order, comments after two blanks dropped, wrapped spans joined."""
    lines = []
    for block, span in _BLOCK_OR_SPAN.findall(text):
        if block:
            commands = [re.sub(r"\s{2,}#.*$", "", line).strip() for line in block.splitlines()]
            lines += [c for c in commands if _RUNS_FAAS_CLI.search(c)]
        elif _SPAN_COMMAND.match(" ".join(span.split())):
            lines.append(" ".join(span.split()))
    return list(dict.fromkeys(lines))


def substituted(line: str, url: str) -> str:
    line = line.replace(DOCUMENTED_GATEWAY, url)
    line = re.sub(r"echo '\{.*?\}'", f"echo '{SMALL_JOB}'", line)
    return re.sub(r"(faas-cli\s+up)\b", r"\1 --skip-push", line)


def test_the_documentation_has_the_lines_this_test_runs():
    lines = faas_cli_lines(documentation())
    for verb in ("login", "deploy -f", "diff", "deploy --yaml", "remove", "invoke", "logs", "secret create",
                 "secret list", "namespace list", " up "):
        assert any(verb in line for line in lines), f"no faas-cli {verb.strip()} line in the documentation"
    assert "faas-cli login" not in lines  # a bare verb in prose is not a line
    assert substituted("echo '{\"a\": 1}' | faas-cli invoke f", "http://x") == f"echo '{SMALL_JOB}' | faas-cli invoke f"


def test_every_faas_cli_line_of_the_documentation_works(faas_cli, faas_cli_path, runtime, project):
    link = project / ".faasgd"
    if not link.exists():
        link.symlink_to(runtime["dir"])
    bin_dir = project / ".bin"
    bin_dir.mkdir(exist_ok=True)
    if not (bin_dir / "faas-cli").exists():
        (bin_dir / "faas-cli").symlink_to(faas_cli_path)
    # DOCKER_HOST names no daemon, on every machine: a line that builds stops at the build, as the module says.
    # The README's `faas-cli up` runs for real, built, pushed and deployed, in tests/docker (where Docker is);
    # here every documented build line would build all six images again, or deploy a cluster's image names.
    env = {"HOME": str(faas_cli.home), "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
           "OPENFAAS_URL": runtime["url"], "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    failures = []
    for line in faas_cli_lines(documentation()):
        command = substituted(line, runtime["url"])
        stdin = runtime["password"] if "--password-stdin" in command and "<" not in command else ""
        done = subprocess.run(["bash", "-o", "pipefail", "-c", command], input=stdin, capture_output=True, text=True,
                              cwd=project, env=env, timeout=300)
        output = done.stdout + done.stderr
        if _BUILDS.search(command):
            passed = done.returncode == 0 or "Errors received during build" in output
        else:
            passed = done.returncode == 0
        if not passed:
            failures.append(f"{line}\n  ran: {command}\n  exit {done.returncode}: {output.strip()[-600:]}")
    assert not failures, "documented faas-cli lines that fail:\n" + "\n".join(failures)
