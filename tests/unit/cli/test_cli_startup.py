"""What every `faasgd` command loads before it does anything: never the heavy libraries one verb needs."""

from __future__ import annotations

import subprocess
import sys


def test_the_command_line_loads_no_scipy_stats_matplotlib_or_tensorflow_at_start():
    code = ("import sys, faasgd.cli.main; "
            "print(sorted(m for m in ('scipy.stats', 'matplotlib.pyplot', 'tensorflow', 'sklearn') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]", f"faasgd's command line imports {loaded} at start (each costs every command its load time)"


def test_faasgd_up_starts_the_runtime_before_it_imports_the_gateway_client(tmp_path):
    """The runtime's daemon starts first; httpx (~70 ms) is imported while it starts, on another core."""
    stack = tmp_path / "stack.yml"
    stack.write_text("version: 1.0\n")
    code = ("import sys, subprocess\n"
            "from faasgd.local import control\n"
            "def popen(argv, **_):\n"
            "    print('httpx' in sys.modules)\n"
            "    raise SystemExit(0)\n"
            "control.subprocess.Popen = popen\n"
            f"control.up({str(stack)!r}, 0, {str(tmp_path / '.faasgd')!r}, watchdog_choice='off')\n")
    seen = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert seen == "False", "faasgd up imported httpx before it started the runtime"
