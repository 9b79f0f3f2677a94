"""The template's index.py over its life: readiness with an inherited socket, deadlines, SIGTERM, bodies.

index.py runs in a subprocess as in the image (function/ a package beside it); TMPDIR is the test's
folder, so the readiness lock it owns is `<tmp>/.lock`.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import httpx
import pytest

from support.paths import ROOT

pytestmark = pytest.mark.integration

TEMPLATE = ROOT / "template" / "python3-http-faasgd"
CORE = TEMPLATE.parents[1] / "src"  # the faasgd core of this tree, which index.py imports
HANDLER = textwrap.dedent('''
    import time
    time.sleep(float(__import__("os").environ.get("import_s", "0")))  # a heavy import


    def handle(event, context):
        if event.path == "/slow":
            while not context.draining() and time.monotonic() < context.deadline + 5:
                time.sleep(0.01)
            return {"statusCode": 200, "body": {"draining": context.draining()}}
        if event.path == "/deadline":
            return {"statusCode": 200, "body": {"left": context.deadline - time.monotonic()}}
        return {"statusCode": 200, "body": {"json": event.json()}}
''')


def start(tmp_path, extra_env=None, bootstrap=False):
    """index.py with our test handler; with `bootstrap`, launched as the image does: bootstrap.py binds the
    socket and execs (here, instead of the watchdog) index.py, which inherits it as fd 3."""
    for name in ("index.py", "bootstrap.py"):
        shutil.copy(TEMPLATE / name, tmp_path / name)
    (tmp_path / "function").mkdir(exist_ok=True)
    (tmp_path / "function" / "__init__.py").write_text("")
    (tmp_path / "function" / "handler.py").write_text(HANDLER)
    url = f"http://127.0.0.1:{free_port()}"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "TMPDIR": str(tmp_path), "PYTHONPATH": f"{tmp_path}{os.pathsep}{CORE}",
           "exec_timeout": "30s", "write_timeout": "30s", "healthcheck_interval": "1s", "upstream_url": url,
           **(extra_env or {})}
    argv = [sys.executable, "-S", "bootstrap.py", sys.executable, "index.py"] if bootstrap else \
        [sys.executable, "index.py"]
    process = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                               stderr=open(tmp_path / "stderr.log", "wb"))
    return process, url


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_ready(url, timeout_s=20):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/_/ready", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.02)
    raise AssertionError("index.py never became ready")


def stop(process):
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()


def test_calls_fired_while_the_handler_still_imports_all_wait_and_are_answered(tmp_path):
    process, url = start(tmp_path, {"import_s": "1.0"}, bootstrap=True)
    answers = []
    port = int(url.rsplit(":", 1)[1])
    deadline = time.monotonic() + 10
    while True:  # the first instant the port takes a connection (bootstrap.py bound it, index.py not yet up)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert time.monotonic() < deadline
    try:
        def fire():
            answers.append(httpx.post(url + "/", json={"n": 1}, timeout=30).status_code)

        not_ready = httpx.get(url + "/_/ready", timeout=30)  # answered (503) while the handler loads
        threads = [threading.Thread(target=fire) for _ in range(20)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert answers == [200] * 20
        assert not_ready.status_code == 503 and not_ready.json() == {"error": "starting"}
        assert (tmp_path / ".lock").exists() and httpx.get(url + "/_/ready").status_code == 200
    finally:
        stop(process)


def test_a_call_past_its_deadline_gets_a_json_504_and_the_handler_is_told_its_deadline(tmp_path):
    process, url = start(tmp_path, {"exec_timeout": "3s"})
    try:
        wait_ready(url)
        left = httpx.get(url + "/deadline", timeout=10).json()["left"]
        assert 0.5 < left < 1.5  # 3 s, less 0.5 s to answer and 1 s for the handler to stop
        short = httpx.get(url + "/deadline", headers={"X-Timeout": "2s"}, timeout=10).json()["left"]
        assert short < left - 0.5  # X-Timeout below exec_timeout shortens it, as the watchdog does
        started = time.monotonic()
        late = httpx.get(url + "/slow", timeout=10)
        assert late.status_code == 504 and "deadline" in late.json()["error"]
        assert 2.0 < time.monotonic() - started < 3.0  # before the watchdog's own empty 504 at 3 s
    finally:
        stop(process)


def test_sigterm_drains_readiness_tells_the_running_call_and_exits_0(tmp_path):
    process, url = start(tmp_path)
    try:
        wait_ready(url)
        running = {}
        call = threading.Thread(target=lambda: running.update(answer=httpx.get(url + "/slow", timeout=30)))
        call.start()
        time.sleep(0.3)
        process.send_signal(signal.SIGTERM)
        call.join(10)
        assert running["answer"].json() == {"draining": True}  # the running call was told, and answered
        assert not (tmp_path / ".lock").exists()
        assert httpx.get(url + "/_/ready", timeout=5).json() == {"error": "draining"}
        assert httpx.post(url + "/", json={}, timeout=5).status_code == 200  # still served in the window
        assert process.wait(10) == 0
    finally:
        stop(process)


@pytest.mark.parametrize("content_type, body, status, expected", [
    ("application/x-www-form-urlencoded", b"number_of_workers=2&hidden_sizes=256%2C128", 200,
     {"number_of_workers": "2", "hidden_sizes": "256,128"}),
    ("application/x-www-form-urlencoded", b'{"a": 1}', 200, {"a": 1}),  # curl -d labels JSON a form
    ("text/plain", b'{"a": 1}', 200, {"a": 1}),  # faas-cli invoke
    ("application/x-www-form-urlencoded", b"a=1&a=2", 400, "a: given twice in the form"),
    ("application/octet-stream", b"\x00\x01", 415, "Content-Type: application/octet-stream is not served"),
    ("application/json", b"[" * 100000 + b"]" * 100000, 400, "body: JSON nested too deeply"),
])
def test_bodies_as_clients_send_them(tmp_path, content_type, body, status, expected):
    process, url = start(tmp_path)
    try:
        wait_ready(url)
        answer = httpx.post(url + "/", content=body, headers={"Content-Type": content_type}, timeout=10)
        assert answer.status_code == status
        if status == 200:
            assert answer.json() == {"json": expected}
        else:
            assert answer.json()["error"].startswith(expected)
    finally:
        stop(process)
