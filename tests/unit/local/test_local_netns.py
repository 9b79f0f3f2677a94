"""faasgd.local.replicas.netns, run as a replica runs it: each command in a network namespace of its own, served on its
host port through the forwarder, so two of them both hold port 8081 (of-watchdog's fixed metrics port).
Real processes on loopback; needs root (the runtime falls back to bare replicas without it)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import httpx
import psutil
import pytest

from faasgd.local.replicas import netns
from faasgd.local.replicas.watchdog import LAUNCHER
from faasgd.local.services.stores import free_port

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a network namespace per replica needs root")

# In the namespace: hold 8081 (fails if another holds it in the same namespace), then answer on PORT.
SERVER = """
import http.server, socket, sys
metrics = socket.socket(); metrics.bind(("0.0.0.0", 8081)); metrics.listen()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = self.path.encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def launch(port: int) -> subprocess.Popen:
    return serving(port, [sys.executable, "-c", SERVER, str(port)])


def serving(port: int, command: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-S", str(LAUNCHER), "serve", str(port), *command],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def get(port: int, path: str, deadline_s: float = 10.0) -> httpx.Response:
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            return httpx.get(f"http://127.0.0.1:{port}{path}", timeout=2)
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_two_commands_each_hold_8081_and_answer_on_their_host_ports():
    ports = [free_port(), free_port()]
    started = [launch(port) for port in ports]
    try:
        for port in ports:
            assert get(port, f"/from-{port}").text == f"/from-{port}"  # the host port reaches that namespace
        assert all(p.poll() is None for p in started), "a second 8081 in one namespace would have failed"
        namespaces = {os.readlink(f"/proc/{p.pid}/ns/net") for p in started}
        assert len(namespaces) == 2 and os.readlink("/proc/self/ns/net") not in namespaces
        body = os.urandom(300_000)  # larger than one copy's chunk, both ways
        assert httpx.post(f"http://127.0.0.1:{ports[0]}/", content=body, timeout=5).content == body
    finally:
        for p in started:
            p.kill()
            p.wait(5)


def test_the_forwarder_goes_with_the_command():
    port = free_port()
    command = launch(port)
    try:
        get(port, "/up")
        forwarders = psutil.Process(command.pid).children()
        assert len(forwarders) == 1
    finally:
        command.kill()
        command.wait(5)
    psutil.wait_procs(forwarders, timeout=5)
    assert not any(f.is_running() and f.status() != psutil.STATUS_ZOMBIE for f in forwarders)
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{port}/", timeout=1)


def test_serve_listens_on_the_socket_the_runtime_bound_and_binds_nothing_itself():
    """As pods.start_replica starts it: the host socket bound by the runtime, passed by descriptor (HOST_FD_ENV).
    The port argument is the namespace's port; the host's is the inherited socket's, wherever it is bound."""
    held, inner = socket.socket(), free_port()
    held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    held.bind(("127.0.0.1", free_port()))
    outer = held.getsockname()[1]
    command = subprocess.Popen([sys.executable, "-S", str(LAUNCHER), "serve", str(inner), sys.executable, "-c",
                                SERVER, str(inner)], env={**os.environ, netns.HOST_FD_ENV: str(held.fileno())},
                               pass_fds=(held.fileno(),), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    held.close()
    try:
        assert get(outer, "/through-the-inherited-socket").text == "/through-the-inherited-socket"
        with pytest.raises(httpx.TransportError):  # nothing bound the port argument on the host
            httpx.get(f"http://127.0.0.1:{inner}/", timeout=1)
    finally:
        command.kill()
        command.wait(5)


# As the watchdog starts the function: `enter` the host's namespace (this test's), then serve on PORT there.
FUNCTION = """
import subprocess, sys, time
subprocess.Popen([sys.executable, "-S", sys.argv[1], "enter", sys.argv[2], sys.executable, "-c", sys.argv[3],
                  sys.argv[4]])
time.sleep(120)
"""


def test_enter_puts_the_function_back_in_the_hosts_namespace_and_it_dies_with_its_parent():
    outer, inner = free_port(), free_port()
    parent = serving(outer, [sys.executable, "-c", FUNCTION, str(LAUNCHER), f"/proc/{os.getpid()}/ns/net",
                             SERVER.replace('("0.0.0.0", 8081)', '("127.0.0.1", 0)'), str(inner)])
    try:
        assert get(inner, "/host").text == "/host"  # reached straight on the host's loopback: not in the namespace
        function = next(c for c in psutil.Process(parent.pid).children() if c.cmdline()[1:2] == ["-c"])
        assert os.readlink(f"/proc/{function.pid}/ns/net") == os.readlink("/proc/self/ns/net")
    finally:
        parent.kill()  # as SIGKILL to a watchdog
        parent.wait(5)
    function.wait(5)  # gone with its parent (raises TimeoutExpired otherwise)
