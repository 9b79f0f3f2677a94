"""A real `faasgd up` for the hostile e2e tests (one per module, on a free port, in a temp folder), what
they count (the keys in the runtime's own redis-server and memcached), what they check after every case
(every process of the runtime alive, the same replicas, none restarted), and requests as bytes on a socket.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil
import redis
from pymemcache.client.base import Client as Memcached
from support.paths import ROOT

from faasgd.local.lifecycle import credentials
from faasgd.local.replicas import pods
from faasgd.local.services.stores import free_port
from faasgd.openfaas import GatewayClient
from faasgd.testing import stacks


def faasgd(*args, timeout=120, stdin=None, env=None, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "faasgd.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, input=stdin, env=env)


@dataclass
class Runtime:
    dir: Path
    state: dict
    gateway: GatewayClient  # logged in to /system

    @property
    def url(self) -> str:
        return self.state["gateway_url"]

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def replica_port(self, function: str) -> int:
        return next(r["port"] for r in self.state["replicas"] if r["name"].startswith(function + "-"))

    def pids(self) -> set[int]:
        """The runtime's processes: the daemon, broker, stores and replicas, and (under the zygote: local/replicas/zygote.py)
        the zygote and the function processes it forked, which are no replica's descendants."""
        state = self.state
        return {state["pid"], state["broker"]["pid"], *(s["pid"] for s in state["stores"].values()),
                *(r["pid"] for r in state["replicas"]), *([state["zygote"]["pid"]] if "zygote" in state else []),
                *pods.function_pids(self.dir)}

    def keys(self) -> int:
        """Keys in the runtime's own stores: redis (every database) and memcached."""
        stores = self.state["stores"]
        with redis.Redis.from_url(stores["redis"]["url"]) as client:
            in_redis = sum(db.get("keys", 0) for name, db in client.info("keyspace").items() if name.startswith("db"))
        host, port = stores["memcached"]["url"].rsplit("/", 1)[1].split(":")
        client = Memcached((host, int(port)), timeout=5)
        try:
            return in_redis + int(client.stats()[b"curr_items"])
        finally:
            client.close()

    def intact(self) -> None:
        """Every process the runtime started is alive and the replicas are the ones it started, none restarted."""
        dead = [pid for pid in self.pids() if not psutil.pid_exists(pid)
                or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE]
        assert not dead, f"processes of the runtime died: {dead}"
        for function in ("emnist-setup", "emnist-train"):
            status = self.gateway.function_status(function)
            started = {r["pid"] for r in self.state["replicas"] if r["name"].startswith(function + "-")}
            assert status["restarts"] == 0 and set(status["pids"]) == started, (status, self.log_tails(function))

    def log_tails(self, function: str, lines: int = 15) -> str:
        """The last lines of the function's replica logs (the ended ones' too) and of the runtime's: why a replica
        ended, for the failure's message."""
        logs = self.dir / "logs"
        paths = sorted(logs.glob(f"{function}-*.log")) + [logs / "runtime.log", logs / "zygote.log"]
        return "\n".join(f"== {path.name}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
                         for path in paths if path.exists())


@contextmanager
def runtime_up(directory: Path, stack: Path | str | None = None, *up_args):
    """`faasgd up` on a free port in `directory` (the repository's stack, replicas draining for 1 s, unless `stack`;
    `up_args` more flags of `faasgd up`); `faasgd down` afterwards, every process checked gone."""
    stack = stack or stacks.stack_copy(ROOT, Path(directory).parent / "stack")
    # --wait: every replica listed and serving, so the sweeps and process checks see them all
    started = faasgd("up", "--port", free_port(), "--dir", directory, "-f", stack, "--wait", *up_args)
    assert started.returncode == 0, started.stdout + started.stderr
    state = json.loads((directory / "state.json").read_text())
    runtime = Runtime(directory, state, GatewayClient(state["gateway_url"], 30,
                                                      auth=credentials.read(directory / "secrets")))
    runtime.up_output = started
    try:
        yield runtime
    finally:
        pids = runtime.pids()
        stopped = faasgd("down", "--dir", directory)
        runtime.down_output = stopped
        assert stopped.returncode == 0, stopped.stderr
        assert not [pid for pid in pids if psutil.pid_exists(pid) and
                    psutil.Process(pid).status() != psutil.STATUS_ZOMBIE], "faasgd down left processes behind"


@dataclass
class Raw:
    status: int  # 0: the server closed the connection without an answer
    headers: dict[str, str]  # names lower-cased
    body: bytes

    def json(self) -> dict:
        assert self.headers.get("content-type", "").startswith("application/json"), (self.status, self.body[:300])
        return json.loads(self.body)


def raw(port: int, data: bytes, half_close: bool = False, timeout_s: float = 10.0) -> Raw:
    """Send `data` as it is to 127.0.0.1:port; read one answer (or the close). `half_close`: shut our side after."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        sock.sendall(data)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        received = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            received += chunk
            head, sep, body = received.partition(b"\r\n\r\n")
            length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
            if sep and length and len(body) >= int(length.group(1)):
                break
    if not received:
        return Raw(0, {}, b"")
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return Raw(int(lines[0].split()[1]), headers, body)


def request(method: str, path: str, body: bytes = b"", headers: dict | None = None) -> bytes:
    """An HTTP/1.1 request as bytes (Content-Length set unless a header gives framing)."""
    headers = {"Host": "127.0.0.1", **(headers or {})}
    if "Transfer-Encoding" not in headers and "Content-Length" not in headers:
        headers["Content-Length"] = str(len(body))
    return (f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode(
        "latin-1") + body


def env_without_gateway() -> dict:
    return {k: v for k, v in os.environ.items() if k != "OPENFAAS_URL"}
