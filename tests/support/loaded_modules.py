"""What importing a function's handler loads, asked of a fresh interpreter through its sys.modules."""

from __future__ import annotations

import json
import subprocess

# Imports the handler as the template does (its folder's handler.py), then lists the faasgd modules loaded.
PROBE = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("handler", sys.argv[1])
handler = importlib.util.module_from_spec(spec)
spec.loader.exec_module(handler)
print(json.dumps(sorted(m for m in sys.modules if m.startswith("faasgd"))))
"""


def loaded_modules(python: str, handler: str, env: dict[str, str] | None = None) -> list[str]:
    """The faasgd modules in sys.modules once `python` (a fresh interpreter) has imported `handler`."""
    run = subprocess.run([python, "-c", PROBE, handler], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout)


def of_package(modules, package: str) -> list[str]:
    """Those of `modules` that are `package` or lie inside it."""
    return sorted(m for m in modules if m == package or m.startswith(package + "."))
