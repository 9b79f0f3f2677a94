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
            "from faasgd.local.lifecycle import control\n"
            "from faasgd.local.lifecycle.options import UpOptions\n"
            "def popen(argv, **_):\n"
            "    print('httpx' in sys.modules)\n"
            "    raise SystemExit(0)\n"
            "control.subprocess.Popen = popen\n"
            f"control.up(UpOptions({str(stack)!r}, 0, {str(tmp_path / '.faasgd')!r}, watchdog='off'))\n")
    seen = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert seen == "False", "faasgd up imported httpx before it started the runtime"


def test_the_program_freezes_the_heap_after_main_and_still_exits_as_main_says(tmp_path):
    """`faasgd` (console script and `python -m faasgd.cli`) is `entry`: main's exit code, then gc.freeze so the
    interpreter's teardown skips its collections; atexit handlers still run and stdout is flushed."""
    from importlib.metadata import entry_points

    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "faasgd"]
    assert script.value == "faasgd.cli.main:entry"
    code = ("import atexit, gc, sys\n"
            "from faasgd.cli import main\n"
            "atexit.register(lambda: print('atexit ran', flush=True))\n"
            f"sys.argv = ['faasgd', 'down', '--dir', {str(tmp_path / 'none')!r}]\n"
            "code = main.entry()\n"
            "print('frozen', gc.get_freeze_count() > 0, 'code', code, end=' ')\n"
            "sys.exit(code)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (done.returncode, done.stdout.split()[-6:]) == (0, ["frozen", "True", "code", "0", "atexit", "ran"])
    bad = subprocess.run([sys.executable, "-m", "faasgd.cli", "train", "--batch-size", "0", "--dry-run"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "batch_size" in bad.stderr  # `python -m faasgd.cli` passes main's code through


def test_a_job_through_the_gateway_imports_none_of_the_direct_paths_machinery():
    """`faasgd train` without --direct imports neither the workers' processes nor the job's creation nor the
    workloads (cli/train.py imports them where --direct and --dry-run run), nor httpx's command-line client."""
    code = ("import sys, faasgd.cli.main, faasgd.cli.train, httpx; "
            "print(sorted(m for m in ('faasgd.cli.direct', 'faasgd.functions.orchestrate', 'faasgd.functions.admission',"
            " 'faasgd.downpour.worker', 'faasgd.lambdaml.sync_worker', 'click', 'pygments', 'prometheus_client')"
            " if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]", f"faasgd train imports {loaded} before it knows it needs them"
