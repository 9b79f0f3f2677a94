"""A real `mlflow server` on loopback for the tests: a SQLite backend and served artifacts in a folder of the test's,
on a free port, stopped (its process group: the server and its workers) when done."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from faasgd.local.services.stores import free_port
from support.waits import wait_until


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


@contextmanager
def mlflow_server(folder: Path) -> Iterator[str]:
    """The server's URL while the block runs."""
    mlflow = shutil.which("mlflow", path=os.path.dirname(sys.executable)) or "mlflow"
    port = free_port()
    log = open(folder / "mlflow-server.log", "wb")
    process = subprocess.Popen(
        [mlflow, "server", "--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}", "--artifacts-destination",
         str(folder / "artifacts"), "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        cwd=folder, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: healthy(url) or process.poll() is not None, "mlflow server's /health", timeout_s=400,
                   poll_s=0.25)
        assert process.poll() is None, (folder / "mlflow-server.log").read_text()[-3000:]
        yield url
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(5)
        log.close()
