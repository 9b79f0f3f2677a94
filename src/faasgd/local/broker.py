"""The local runtime's message broker: a real nats-server with JetStream on loopback, started and
stopped like the stores (faasgd.local.stores), that keeps the async queue on disk.

It binds 127.0.0.1 only, on a free port, keeps JetStream's files in `store_dir` (the runtime puts
it in `.faasgd/jetstream`, so a restarted runtime finds its queue again), and counts as started
only once it answers the NATS protocol with JetStream enabled (its INFO says `"jetstream":true`
and it answers PING with PONG; nats-server recovers the streams before it accepts clients).

`max_payload` is the body limit of an async call plus HEADER_ROOM for the call's own headers:
OpenFaaS's limit is NATS's default max_payload of 1 MB for the whole message; ours is 1 MiB for
the body, as the gateway counts it (413 beyond), whatever headers come with it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
from pathlib import Path

from faasgd.errors import FaasgdError
from faasgd.local.stores import LOOPBACK, ServerProcess, spawn_server, start_server

DEBIAN_PATH = "/usr/sbin/nats-server"  # Debian's package installs it there, off a user's PATH
HEADER_ROOM = 64 << 10  # the call's metadata header: the request's headers (uvicorn takes ~16 KiB at most) and URL
DEFAULT_MAX_PAYLOAD = (1 << 20) + HEADER_ROOM


def nats_binary() -> str:
    """The nats-server program: on PATH, else where Debian's package puts it."""
    path = shutil.which("nats-server") or (DEBIAN_PATH if os.access(DEBIAN_PATH, os.X_OK) else None)
    if path is None:
        raise FaasgdError("nats-server not found (the async queue's broker); install it with: "
                          "apt-get install -y nats-server (or run `make deps`)")
    return path


def start_nats(store_dir: str | os.PathLike, port: int | None = None, max_payload: int = DEFAULT_MAX_PAYLOAD,
               ready_timeout: float = 10.0) -> ServerProcess:
    """Start nats-server -js on 127.0.0.1 with its JetStream files in `store_dir`; return once it answers."""
    binary = nats_binary()
    store = Path(store_dir).resolve()
    store.mkdir(parents=True, exist_ok=True)

    def launch(p: int) -> ServerProcess:
        tmp = tempfile.TemporaryDirectory(prefix="faasgd-nats-")
        conf = os.path.join(tmp.name, "nats-server.conf")  # max_payload has no command-line flag
        with open(conf, "w") as f:
            f.write(f"listen: {LOOPBACK}:{p}\nserver_name: faasgd-local\nmax_payload: {max_payload}\n"
                    f"jetstream {{\n  store_dir: {json.dumps(str(store))}\n}}\n")
        server = spawn_server("nats", f"nats://{LOOPBACK}:{p}", p, [binary, "-c", conf], tmp, None)
        server.workdir = str(store)
        return server

    return start_server(launch, port, jetstream_answers, ready_timeout)


def jetstream_answers(port: int, timeout: float = 0.5) -> bool:
    """True when 127.0.0.1:port speaks NATS with JetStream on and answers a PING."""
    try:
        with socket.create_connection((LOOPBACK, port), timeout=timeout) as sock, sock.makefile("rb") as lines:
            info = lines.readline()
            if not info.startswith(b"INFO ") or not json.loads(info[5:]).get("jetstream"):
                return False
            sock.sendall(b'CONNECT {"verbose":false}\r\nPING\r\n')
            return lines.readline().startswith(b"PONG")
    except (OSError, ValueError):
        return False
