"""What the runtime's daemon and a replica's shim load as they start: never httpx's command-line client (rich,
pygments), which nothing in them runs; httpx itself still works."""

from __future__ import annotations

import subprocess
import sys

import pytest

from support.paths import ROOT

INDEX = ROOT / "template" / "python3-http-faasgd" / "index.py"
LOADS = {
    "daemon": "import faasgd.local.daemon",
    "replica shim": ("import importlib.util\n"
                     f"spec = importlib.util.spec_from_file_location('index', {str(INDEX)!r})\n"
                     "spec.loader.exec_module(importlib.util.module_from_spec(spec))"),
}


@pytest.mark.parametrize("what", list(LOADS))
def test_starting_loads_no_http_command_line_client_and_httpx_still_works(what):
    code = (f"{LOADS[what]}\nimport sys, httpx\n"
            "httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(204))).get('http://x/')\n"
            "print(sorted(m for m in ('rich', 'pygments') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=INDEX.parent).stdout.strip()
    assert loaded == "[]", f"the {what} loads {loaded}"
