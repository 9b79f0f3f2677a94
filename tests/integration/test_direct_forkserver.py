"""`faasgd train --direct`'s workers fork from a forkserver that did their imports (cli/forkserver.py), started before
the command's own imports; the command sees a worker's end at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from faasgd.cli import direct, forkserver

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("argv, wanted", [
    (["train", "--direct", "--workers", "2"], True),
    (["train", "--workers", "2"], False),  # through the runtime: its replicas run the workers
    (["train", "--direct", "--dry-run"], False),
    (["train", "--direct", "--help"], False),
    (["status", "--direct"], False),
    ([], False),
])
def test_only_a_direct_training_run_starts_the_forkserver(argv, wanted):
    assert forkserver.wanted(argv) is wanted


def test_train_direct_starts_the_forkserver_before_it_imports_the_config_model():
    code = ("import sys, multiprocessing.forkserver\n"
            "def ensure_running():\n"
            "    print(sorted(m for m in ('faasgd.config', 'numpy', 'pydantic') if m in sys.modules))\n"
            "    raise SystemExit(0)\n"
            "multiprocessing.forkserver.ensure_running = ensure_running\n"
            "from faasgd.cli.main import main\n"
            "main(['train', '--direct', '--store-url', 'redis://127.0.0.1:1'])\n")
    seen = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert seen == "[]", f"the forkserver started after {seen}"


def test_a_worker_starts_with_its_imports_done_and_one_blas_thread(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "7")
    context = forkserver.start()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "7"  # this process's environment is as it was
    out = tmp_path / "seen.json"
    code = ("import json, os, sys\n"  # what the process has before it runs anything of its own
            f"json.dump({{'modules': [m for m in {forkserver.WORKER_MODULES + ['numpy']!r} if m in sys.modules],"
            " 'blas': os.environ.get('OPENBLAS_NUM_THREADS'), 'parent': os.getppid()},"
            f" open({str(out)!r}, 'w'))\n")
    process = context.Process(target=exec, args=(code,))
    process.start()
    process.join(30)
    seen = json.loads(out.read_text())
    assert process.exitcode == 0
    assert seen["modules"] == forkserver.WORKER_MODULES + ["numpy"]
    assert seen["blas"] == "1"
    assert seen["parent"] != os.getpid()  # the forkserver's child: nothing of this process's state


def test_the_wait_ends_when_a_worker_ends():
    workers = direct.WorkerProcesses("redis://127.0.0.1:1")
    process = workers.context.Process(target=time.sleep, args=(0.3,))
    process.start()
    workers.processes.append(process)
    started = time.monotonic()
    workers.sleep(20.0)
    waited = time.monotonic() - started
    assert process.exitcode == 0 and waited < 10.0  # woken by the end, not the 20 s
    started = time.monotonic()
    workers.sleep(0.2)  # none running: a plain sleep, not a return at once on the ended one
    assert time.monotonic() - started >= 0.2
