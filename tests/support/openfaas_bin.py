"""Finding the real OpenFaaS binaries (../shared/bin/README.md): an environment variable, then PATH,
then ../shared/bin beside the repository. Tests that need one skip with a one-line reason without it."""

from __future__ import annotations

import os
import shutil

from support.paths import ROOT

SHARED_BIN = ROOT.parent / "shared" / "bin"
BINARIES = {"faas-cli": "FAAS_CLI", "fwatchdog": "FAASGD_WATCHDOG"}


def find(name: str) -> str | None:
    """The path of `name` (faas-cli or fwatchdog), or None when it is nowhere to be found."""
    given = os.environ.get(BINARIES[name])
    if given:
        return given if os.access(given, os.X_OK) else None
    on_path = shutil.which(name)
    if on_path:
        return on_path
    shared = SHARED_BIN / name
    return str(shared) if os.access(shared, os.X_OK) else None


def missing_reason(name: str) -> str:
    return (f"{name} not found (set {BINARIES[name]}, put it on PATH, or place it in {SHARED_BIN}); "
            f"the tests that run the real {name} did not run")
