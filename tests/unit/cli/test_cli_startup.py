"""What every `faasgd` command loads before it does anything: never the heavy libraries one verb needs."""

from __future__ import annotations

import subprocess
import sys


def test_the_command_line_loads_no_scipy_stats_matplotlib_or_tensorflow_at_start():
    code = ("import sys, faasgd.cli.main; "
            "print(sorted(m for m in ('scipy.stats', 'matplotlib.pyplot', 'tensorflow', 'sklearn') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]", f"faasgd's command line imports {loaded} at start (each costs every command its load time)"
