"""A stacking function loads neither Downpour nor LambdaML, nor a worker's call: checked in a fresh interpreter."""

from __future__ import annotations

import os
import sys

import pytest

from support.loaded_modules import loaded_modules, of_package
from support.paths import ROOT

OTHERS = ("faasgd.downpour", "faasgd.lambdaml", "faasgd.worker", "faasgd.functions.workloads")


def loaded(function: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return loaded_modules(sys.executable, str(ROOT / function / "handler.py"), env)


@pytest.mark.parametrize("function", ["stacking-driver", "stacking-trainer", "stacking-reducer", "stacking-metatrainer"])
def test_a_stacking_handler_loads_no_other_workload(function):
    modules = loaded(function)
    assert "faasgd.functions.stacking" in modules  # the handler did load its function's logic
    assert [m for package in OTHERS for m in of_package(modules, package)] == []


def test_the_training_handler_does_load_its_workloads():
    """The probe sees what a handler loads: emnist-train runs Downpour and LambdaML's rounds."""
    modules = loaded("emnist-train")
    assert of_package(modules, "faasgd.downpour") and of_package(modules, "faasgd.lambdaml")
