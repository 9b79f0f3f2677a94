"""The function image's Python environment, built without docker, as the template's Dockerfile builds it.

`build_image(tmp, functions, extras)` lays out build/<fn>/ with the real `faas-cli build --shrinkwrap` when it
is found (else as faas-cli does, by faasgd.local.replicas.build), then applies the Dockerfile's steps for `functions` to
a fresh venv (no system site-packages): the template's requirements.txt, each function's requirements.txt, and
the core shipped by `configuration.copy` (moved out of function/ and installed with `extras`, the Dockerfile's
FAASGD_EXTRAS; none by default). Used by the integration tier (the core alone; the stacking functions' venv)
and the openfaas tier (the real of-watchdog in front of it).
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

from support import openfaas_bin
from support.paths import ROOT

FUNCTIONS = ("emnist-setup", "emnist-train")
STACKING = ("stacking-driver", "stacking-trainer", "stacking-reducer", "stacking-metatrainer")


# The Dockerfile's pip steps, quicker: this process's pip installs into the venv (`--python`, pip >= 22.3; a venv
# made `--without-pip` skips ensurepip, ~6 s), and without compiling every installed module to bytecode
# (`--no-compile`: the first import compiles what it uses; ~9 s of numpy, pydantic and the rest). What is installed
# is the same. The Docker tier (tests/docker) builds the real image with the Dockerfile's own pip lines.
PIP = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
NO_COMPILE = "--no-compile"


def run(argv, cwd=None, env=None, timeout=600) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(map(str, argv))}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def shrinkwrap(tmp: pathlib.Path) -> pathlib.Path:
    """build/<fn>/ for both functions, from a clean copy of the project (as `faas-cli build` sees it)."""
    project = tmp / "project"
    shutil.copytree(ROOT, project, ignore=shutil.ignore_patterns(".git", ".venv", ".faasgd", "build", "results",
                                                                 "__pycache__", "*.egg-info", ".pytest_cache"))
    faas_cli = openfaas_bin.find("faas-cli")
    if faas_cli:
        run([faas_cli, "build", "--shrinkwrap", "-f", "stack.yml"], cwd=project,
            env={"HOME": str(tmp), "PATH": os.environ["PATH"]})
    else:  # the same layout by our reader of faas-cli's rules
        from faasgd.local.replicas.build import build_function
        from faasgd.local.replicas.stack import load_stack

        for spec in load_stack(project / "stack.yml", {}).values():
            target = build_function(spec, project / "template", project / "build")
            for path in ("pyproject.toml", "src"):
                copy = shutil.copytree if (project / path).is_dir() else shutil.copy
                copy(project / path, target / "function" / path)
    return project / "build"


def build_image(tmp: pathlib.Path, functions: tuple[str, ...] = FUNCTIONS,
                extras: str = "") -> tuple[str, pathlib.Path]:
    """(python of a fresh venv holding what the images of `functions` hold, the build folder) after the
    Dockerfile's steps, the core installed with `extras` (comma-separated, as FAASGD_EXTRAS)."""
    build = shrinkwrap(tmp)
    venv = tmp / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = str(venv / "bin" / "python")
    pip = [*PIP, "--python", python, "install", NO_COMPILE]
    first = build / functions[0]
    run([*pip, "-r", str(first / "requirements.txt")])  # the shim's: flask, waitress
    for fn in functions:
        function, core = build / fn / "function", build / fn / "core"
        run([*pip, "-r", str(function / "requirements.txt")])
        assert (function / "pyproject.toml").is_file() and (function / "src").is_dir()  # configuration.copy
        core.mkdir()  # the Dockerfile moves the core out of the function folder, then installs it
        shutil.move(function / "src", core / "src")
        shutil.move(function / "pyproject.toml", core / "pyproject.toml")
        (function / "__init__.py").touch()  # the Dockerfile's `touch ./function/__init__.py`
    run([*pip, f"{first / 'core'}[{extras}]" if extras else str(first / "core")])  # `pip install /tmp/faasgd-core`
    return python, build
