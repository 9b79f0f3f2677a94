"""The bench scripts (bench/*.py) as modules, for tests that hold their figures to independent measurements."""

from __future__ import annotations

import importlib.util
import sys

from support.paths import ROOT

BENCH = ROOT / "bench"


def load_bench(name: str):
    """bench/`name`.py as a module `bench_<name>` (its folder on sys.path while it imports its neighbours, as when
    run; in sys.modules, where dataclasses look up the module of the classes it defines)."""
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))
