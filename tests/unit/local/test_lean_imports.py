"""How the runtime's daemon and a replica's shim start and end: they load no httpx command-line client (rich,
pygments), which nothing in them runs, and httpx itself still works; the daemon ends without the interpreter's
teardown, its code and output intact."""

from __future__ import annotations

import subprocess
import sys

import pytest

from support.paths import ROOT

INDEX = ROOT / "template" / "python3-http-faasgd" / "index.py"
LOADS = {
    "daemon": "import faasgd.local.lifecycle.daemon",
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


def test_the_daemon_ends_with_its_code_and_output_flushed_but_no_teardown():
    code = ("import atexit, logging, sys\n"
            "from faasgd.local.lifecycle.daemon import exit_at_once\n"
            "atexit.register(print, 'teardown')\n"
            "logging.basicConfig(stream=sys.stderr)\n"
            "logging.getLogger('x').warning('logged')\n"
            "print('said', end='')\n"
            "exit_at_once(3)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 3 and done.stdout == "said" and "logged" in done.stderr
