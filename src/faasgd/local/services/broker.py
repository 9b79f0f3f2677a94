"""The local runtime's message broker: a real nats-server with JetStream on loopback, started and
stopped like the stores (faasgd.local.services.stores), that keeps the async queue on disk.

It binds 127.0.0.1 only, on a free port, keeps JetStream's files in `store_dir` (the runtime puts
it in `.faasgd/jetstream`, so a restarted runtime finds its queue again), and counts as started
only once it answers the NATS protocol with JetStream enabled (its INFO says `"jetstream":true`
and it answers PING with PONG; nats-server recovers the streams before it accepts clients).

JetStream's files are bounded by `max_file_store`, sized to the disk when the server starts (store_limit):
at most DEFAULT_STORE_BYTES, and at most what the directory's disk has free (plus what the queue's files
already hold) less DISK_MARGIN, so the queue refuses a call (the gateway answers 503) before the disk is
full; nats-server 2.9 stops answering anyone when a write finds the disk full. Below MIN_STORE_BYTES it
is not started: QueueDiskTooSmall names the directory, the space needed and `faasgd up --dir`.

`max_payload` is the body limit of an async call plus HEADER_ROOM for the call's own headers:
OpenFaaS's limit is NATS's default max_payload of 1 MB for the whole message; ours is 1 MiB for
the body, as the gateway counts it (413 beyond), whatever headers come with it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path

from faasgd.errors import FaasgdError
from faasgd.local.services.stores import LOOPBACK, ServerProcess, server_folder, spawn_server, start_server

DEBIAN_PATH = "/usr/sbin/nats-server"  # Debian's package installs it there, off a user's PATH
HEADER_ROOM = 64 << 10  # the call's metadata header: the request's headers (uvicorn takes ~16 KiB at most) and URL
DEFAULT_MAX_PAYLOAD = (1 << 20) + HEADER_ROOM
DEFAULT_STORE_BYTES = 1 << 30  # JetStream's files at most, when the disk has room
MIN_STORE_BYTES = 4 * DEFAULT_MAX_PAYLOAD  # room for a few calls of the largest size
DISK_MARGIN = 0.1  # the part of the disk's free space the queue leaves to others (and to its own index files)


class QueueDiskTooSmall(FaasgdError):
    """Raised when the disk of the queue's directory has too little room for JetStream's files."""

    http_status = 507


def nats_binary() -> str:
    """The nats-server program: on PATH, else where Debian's package puts it."""
    path = shutil.which("nats-server") or (DEBIAN_PATH if os.access(DEBIAN_PATH, os.X_OK) else None)
    if path is None:
        raise FaasgdError("nats-server not found (the async queue's broker); install it with: "
                          "apt-get install -y nats-server (or run `make deps`)")
    return path


def store_limit(store_dir: str | os.PathLike, wanted: int = DEFAULT_STORE_BYTES) -> int:
    """JetStream's max_file_store for `store_dir`: `wanted`, or less when its disk has less room (the free
    space plus what the queue's files hold, less DISK_MARGIN); raises QueueDiskTooSmall below MIN_STORE_BYTES."""
    store = Path(store_dir)
    room = int((shutil.disk_usage(store).free + held_bytes(store)) * (1 - DISK_MARGIN))
    if room < MIN_STORE_BYTES:
        raise QueueDiskTooSmall(
            f"the async queue's directory {store} has {room / (1 << 20):.1f} MiB of room for JetStream (90% of "
            f"the free space there); it needs at least {MIN_STORE_BYTES / (1 << 20):.1f} MiB: free some space on "
            f"that disk, or run `faasgd up --dir` with a directory on a larger disk (the queue is in <dir>/jetstream)")
    return min(wanted, room)


def held_bytes(store: Path) -> int:
    """The bytes of the files under `store` (the streams a previous server left)."""
    total = 0
    for folder, _, names in os.walk(store):
        for name in names:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass  # removed meanwhile
    return total


def start_nats(store_dir: str | os.PathLike, port: int | None = None, max_payload: int = DEFAULT_MAX_PAYLOAD,
               ready_timeout: float = 10.0, max_store: int = DEFAULT_STORE_BYTES) -> ServerProcess:
    """Start nats-server -js on 127.0.0.1 with its JetStream files in `store_dir`, at most `max_store` bytes of
    them and no more than its disk has room for (store_limit); return once it answers."""
    binary = nats_binary()
    store = Path(store_dir).resolve()
    store.mkdir(parents=True, exist_ok=True)
    limit = store_limit(store, max_store)

    def launch(p: int) -> ServerProcess:
        tmp = server_folder("faasgd-nats-")
        conf = os.path.join(tmp.name, "nats-server.conf")  # max_payload has no command-line flag
        with open(conf, "w") as f:
            f.write(f"listen: {LOOPBACK}:{p}\nserver_name: faasgd-local\nmax_payload: {max_payload}\n"
                    f"jetstream {{\n  store_dir: {json.dumps(str(store))}\n  max_file_store: {limit}\n}}\n")
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


def jetstream_serves(port: int, timeout: float = 1.0) -> bool:
    """True when 127.0.0.1:port answers a JetStream API request ($JS.API.INFO) within `timeout`: the server
    is up and its JetStream is not stuck (a full disk wedges nats-server 2.9 while its port still accepts)."""
    try:
        with socket.create_connection((LOOPBACK, port), timeout=timeout) as sock, sock.makefile("rb") as lines:
            if not lines.readline().startswith(b"INFO "):
                return False
            sock.sendall(b'CONNECT {"verbose":false}\r\nSUB _INBOX.faasgd-watch 1\r\n'
                         b"PUB $JS.API.INFO _INBOX.faasgd-watch 0\r\n\r\n")
            while True:
                line = lines.readline()
                if not line:
                    return False
                if line.startswith(b"PING"):
                    sock.sendall(b"PONG\r\n")
                elif line.startswith(b"MSG _INBOX.faasgd-watch "):
                    reply = json.loads(lines.read(int(line.split()[-1]) + 2))
                    return "error" not in reply
                elif line.startswith(b"-ERR"):
                    return False
    except (OSError, ValueError):
        return False
