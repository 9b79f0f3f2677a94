"""A stacking function loads neither Downpour nor LambdaML, nor a worker's call: checked in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from support.paths import ROOT

OTHERS = ("faasgd.downpour", "faasgd.lambdaml", "faasgd.worker", "faasgd.functions.workloads")

# Imports the handler as the template does (its folder's handler.py), then lists the faasgd modules loaded.
PROBE = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("handler", sys.argv[1])
handler = importlib.util.module_from_spec(spec)
spec.loader.exec_module(handler)
print(json.dumps(sorted(m for m in sys.modules if m.startswith("faasgd"))))
"""


def loaded_modules(function: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    run = subprocess.run([sys.executable, "-c", PROBE, str(ROOT / function / "handler.py")], env=env,
                         capture_output=True, text=True, timeout=120, check=True)
    return json.loads(run.stdout)


def of_package(modules: list[str], package: str) -> list[str]:
    return [m for m in modules if m == package or m.startswith(package + ".")]


@pytest.mark.parametrize("function", ["stacking-driver", "stacking-trainer", "stacking-reducer", "stacking-metatrainer"])
def test_a_stacking_handler_loads_no_other_workload(function):
    modules = loaded_modules(function)
    assert "faasgd.functions.stacking" in modules  # the handler did load its function's logic
    assert [m for package in OTHERS for m in of_package(modules, package)] == []


def test_the_training_handler_does_load_its_workloads():
    """The probe sees what a handler loads: emnist-train runs Downpour and LambdaML's rounds."""
    modules = loaded_modules("emnist-train")
    assert of_package(modules, "faasgd.downpour") and of_package(modules, "faasgd.lambdaml")
