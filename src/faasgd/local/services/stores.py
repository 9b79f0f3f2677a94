"""The local runtime's store servers: real redis-server and memcached on loopback (tests and benches use them too).

Each server binds 127.0.0.1 only, keeps nothing on disk, and is considered started only once it
answers (PING / version) before a deadline. `ServerProcess.stop()` is idempotent.

A password never reaches a command line (any user reads /proc/<pid>/cmdline): redis-server reads it from a
config file (`requirepass`), memcached from its ASCII-protocol auth file (`-Y`, a `user:password` line; clients
authenticate with `set` of "user password" first, user MEMCACHED_USER). Both files are mode 0600 in a
0700 folder of their own, removed when the server stops.
"""

from __future__ import annotations

import functools
import os
import random
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from faasgd.errors import ConfigError, StoreUnavailable
from faasgd.local import processes
from faasgd.local.processes import ProcessRef

LOOPBACK = "127.0.0.1"
POLL_S = 0.05  # the longest sleep between readiness polls (processes.backoff: from 2 ms, doubling)
EPHEMERAL_RANGE_FILE = "/proc/sys/net/ipv4/ip_local_port_range"
PORT_FLOOR = 10000  # free_port() never picks below this (well-known and registered services live there)
START_ATTEMPTS = 3  # fresh ports tried when the caller did not fix one (another process may grab a free port)

# Servers stopped with SIGKILL at once: they keep nothing past their exit (memcached has no file; redis runs with
# `--save "" --appendonly no`, a cluster node's nodes.conf is in a folder removed with it), so a clean exit saves
# nothing, and each acts on SIGTERM only at its next clock tick: memcached's once a second (0.3-0.9 s measured
# here), redis's serverCron (100 ms). nats-server keeps the queue's JetStream files: it gets SIGTERM.
KILLED_AT_ONCE = frozenset({"memcached", "redis"})
MEMCACHED_USER = "faasgd"  # the one user of a password-protected memcached's auth file
_random = random.SystemRandom()  # independent of any seed a caller sets


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range for the local ports of outgoing connections (Linux; 32768-60999 if unreadable)."""
    try:
        low, high = (int(part) for part in Path(EPHEMERAL_RANGE_FILE).read_text().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, outside the ephemeral range.

    Decision: not `bind(0)`. The OS picks that port from the ephemeral range, and between our closing it
    and a server binding it, any outgoing connection on the machine (a store client, a test) may take it
    as its local port: CI saw the gateway fail with "Address already in use" that way. A random port
    below (or above) the ephemeral range is never handed out to connections; a clash with another
    listener is still possible, so callers that can retry (`start_server`) do, and callers that can take a
    socket instead of a number (a replica's `netns.py serve`) take `bound_socket()`'s.
    """
    with bound_socket() as sock:
        return sock.getsockname()[1]


def bound_socket() -> socket.socket:
    """A TCP socket bound (not yet listening) to a port free_port() would pick, the bind held: for a child that
    gets it by descriptor. A port only picked may be taken by another listener before the child binds it (a
    replica then died at once and was counted restarted: a second `make test` process binds ports from the same
    ranges); a bind held cannot be."""
    low, high = ephemeral_range()
    candidates = [(PORT_FLOOR, low - 1), (high + 1, 65535)]
    candidates = [(a, b) for a, b in candidates if b - a >= 1000]
    for _ in range(100):
        a, b = _random.choice(candidates) if candidates else (0, 0)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((LOOPBACK, _random.randint(a, b) if candidates else 0))
        except OSError:
            sock.close()
            continue
        return sock
    raise OSError("no free TCP port on 127.0.0.1 outside the ephemeral range after 100 tries")


@dataclass(frozen=True)
class Where:
    """Where a server runs: inside an emulated node (faasgd.local.nodes.network), bound to the node's address
    (and its own loopback), started by the command prefix that enters the node (`ip netns exec NS`)."""

    address: str
    argv: tuple[str, ...]


@dataclass
class ServerProcess:
    """A store server this process started; `url` is what `faasgd.store.open_store` takes."""

    name: str  # "redis" or "memcached"
    url: str  # redis://127.0.0.1:P/0 or memcached://127.0.0.1:P (never contains the password)
    port: int
    popen: subprocess.Popen | None  # the child (stopping it reaps it); None for a server adopted from a dead runtime
    ref: ProcessRef  # its identity, for the local runtime's state file
    password: str | None = None  # what clients authenticate with, if any (from a file, never argv)
    log_path: str | None = None  # the server's stdout/stderr
    workdir: str | None = None  # redis --dir
    host: str = LOOPBACK  # the address its URL names: the loopback, or its node's (Where)
    _tmpdir: tempfile.TemporaryDirectory | None = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        return self.ref.pid

    def alive(self) -> bool:
        """True while the server process has not exited."""
        return processes.alive(self.popen if self.popen is not None else self.ref)

    def stop(self, timeout: float = 5.0) -> None:
        """Terminate the server, wait up to `timeout`, kill it if needed (KILLED_AT_ONCE: kill it at once); calling
        it again does nothing."""
        target = self.popen if self.popen is not None else self.ref
        if self.name in KILLED_AT_ONCE:
            processes.kill(target)
        else:
            processes.stop(target, timeout)
        if self._tmpdir is not None:
            self._tmpdir.cleanup()
            self._tmpdir = None

    def log_tail(self, lines: int = 20) -> str:
        """The last lines the server wrote, for error messages."""
        if not self.log_path or not os.path.exists(self.log_path):
            return ""
        with open(self.log_path, "r", errors="replace") as f:
            return "".join(f.readlines()[-lines:]).strip()


def stop_all(servers, timeout: float = 5.0) -> None:
    """Stop servers (anything with `.stop(timeout)` and a `.name`) all at once: each takes its own time to exit
    (nats-server flushes its JetStream files), so one after another would add them up."""
    threads = [threading.Thread(target=server.stop, args=(timeout,), name=f"faasgd-stop-{server.name}")
               for server in servers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def start_redis(
    port: int | None = None,
    workdir: str | None = None,
    password: str | None = None,
    ready_timeout: float = 10.0,
    also_bind: str | None = None,
    where: Where | None = None,
) -> ServerProcess:
    """Start redis-server on 127.0.0.1 (and `also_bind`, e.g. a container network's gateway address)
    without persistence; return once it answers PING. Protected mode (which answers only loopback
    when there is no password) is off with `also_bind`: the server binds those two addresses only.
    `where`: inside a node, on its address (then `also_bind` is that address)."""
    binary = server_binary("redis-server", "redis-server")
    also_bind, host, prefix = (where.address, where.address, list(where.argv)) if where else (also_bind, LOOPBACK, [])

    def launch(p: int) -> ServerProcess:
        tmp = server_folder("faasgd-redis-")
        directory = workdir or tmp.name
        conf = private_file(tmp.name, "redis.conf", f"requirepass {redis_quoted(password)}\n" if password else "")
        argv = [*prefix, binary, conf, "--port", str(p), "--bind", LOOPBACK, *([also_bind, "--protected-mode", "no"] if also_bind else []), "--save", "",
                "--appendonly", "no", "--dir", directory, "--daemonize", "no"]
        server = spawn_server("redis", f"redis://{host}:{p}/0", p, argv, tmp, password)
        server.workdir, server.host = directory, host
        return server

    return start_server(launch, port, functools.partial(redis_answers, host=host), ready_timeout)


def start_memcached(
    port: int | None = None,
    item_size: str = "2m",
    memory_mb: int = 256,
    ready_timeout: float = 10.0,
    also_bind: str | None = None,
    password: str | None = None,
    where: Where | None = None,
) -> ServerProcess:
    """Start memcached on 127.0.0.1 (and `also_bind`) over TCP only; return once it answers `version`. With
    `password`, every client must first authenticate as MEMCACHED_USER (the auth file, `-Y`). `where`: inside a
    node, on its address."""
    binary = server_binary("memcached", "memcached")
    also_bind, host, prefix = (where.address, where.address, list(where.argv)) if where else (also_bind, LOOPBACK, [])
    check_memcached_password(password)

    def launch(p: int) -> ServerProcess:
        tmp = server_folder("faasgd-memcached-")
        argv = [*prefix, binary, "-l", ",".join([LOOPBACK, *([also_bind] if also_bind else [])]), "-p", str(p), "-U", "0", "-I", item_size, "-m", str(memory_mb)]
        if password:
            argv += ["-Y", private_file(tmp.name, "auth", f"{MEMCACHED_USER}:{password}\n")]
        if os.geteuid() == 0:
            argv += ["-u", "root"]  # memcached refuses to run as root without it
        server = spawn_server("memcached", f"memcached://{host}:{p}", p, argv, tmp, password)
        server.host = host
        return server

    return start_server(launch, port, functools.partial(_memcached_answers, host=host), ready_timeout)


def server_folder(prefix: str) -> tempfile.TemporaryDirectory:
    """A server's own temp folder (its config, log, auth file), removed at its stop: in tempfile's folder, which the
    runtime's daemon sets to <dir>/tmp, made again if it was removed meanwhile (a server started later, the S3 server
    on demand or a restarted nats-server, would fail on a missing folder)."""
    os.makedirs(tempfile.gettempdir(), mode=0o700, exist_ok=True)
    return tempfile.TemporaryDirectory(prefix=prefix)


def private_file(folder: str, name: str, text: str) -> str:
    """Write `text` to folder/name, readable by this user only (0600 from its creation); its path."""
    path = os.path.join(folder, name)
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as f:
        f.write(text)
    return path


def redis_quoted(password: str) -> str:
    """`password` as one double-quoted argument of redis.conf: letters and digits as they are, every other byte
    as \\xHH, so no quote, backslash, space or newline in it can end the value or start another directive."""
    return '"' + "".join(chr(b) if chr(b).isascii() and chr(b).isalnum() else f"\\x{b:02x}"
                         for b in password.encode("utf-8")) + '"'


def check_memcached_password(password: str | None) -> None:
    """memcached's auth file holds `user:password` lines and clients send "user password": no whitespace or
    control character can be in it."""
    if password is not None and (not password or not password.isprintable() or any(c.isspace() for c in password)):
        raise ConfigError("password", "memcached's password must be non-empty printable text without spaces "
                                      "(its auth file holds one user:password line)")


def adopt_server(name: str, url: str, ref: ProcessRef, answers, workdir: str | None = None) -> ServerProcess | None:
    """The server a dead runtime left running, if it is still that process and answers on its port.

    Its data lives on: a job whose runtime crashed keeps its state when the next runtime adopts
    the stores (faasgd.local.lifecycle.control.up). None when the process is gone, reused or silent.
    """
    port = _port_of(url)
    if port is None or not processes.alive(ref) or not answers(port):
        return None
    return ServerProcess(name=name, url=url, port=port, popen=None, ref=ref, workdir=workdir)


def _port_of(url: str) -> int | None:
    host_port = url.split("://", 1)[-1].split("/", 1)[0]
    host, _, port = host_port.rpartition(":")
    return int(port) if host == LOOPBACK and port.isdigit() else None


def server_binary(program: str, package: str) -> str:
    path = shutil.which(program)
    if path is None:
        raise StoreUnavailable(
            f"{program} (local)",
            f"{program} not found on PATH; install it with: apt-get install -y {package}",
        )
    return path


def spawn_server(name, url, port, argv, tmp, password) -> ServerProcess:
    log_path = os.path.join(tmp.name, f"{name}.log")
    with open(log_path, "wb") as log:
        popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    return ServerProcess(name=name, url=url, port=port, popen=popen, ref=ProcessRef.of(popen.pid),
                         password=password, log_path=log_path, _tmpdir=tmp)


def start_server(launch, port, answers, ready_timeout) -> ServerProcess:
    """Launch on `port` (or on fresh free ports, a few times) and wait until `answers(port)`."""
    attempts_left = 1 if port is not None else START_ATTEMPTS
    while True:
        attempts_left -= 1
        server = launch(port if port is not None else free_port())
        try:
            _wait_ready(server, answers, ready_timeout)
            return server
        except StoreUnavailable:
            exited = not server.alive()
            server.stop()
            if attempts_left == 0 or not exited:
                raise  # out of ports to try, or a live server that never answered


def _wait_ready(server: ServerProcess, answers, ready_timeout: float) -> None:
    deadline = time.monotonic() + ready_timeout
    for sleep_s in processes.backoff(longest_s=POLL_S):
        if not server.alive():
            code = server.popen.returncode if server.popen is not None else "?"
            raise StoreUnavailable(server.url, f"{server.name} exited with code {code}: "
                                               f"{server.log_tail()}")
        if answers(server.port):
            return
        if time.monotonic() >= deadline:
            raise StoreUnavailable(server.url, f"{server.name} did not answer within {ready_timeout}s")
        time.sleep(sleep_s)


def _ask(port: int, request: bytes, timeout: float = 0.5, host: str = LOOPBACK) -> bytes:
    """Send one request line to host:port (127.0.0.1's) and return the first reply bytes ('' if unreachable)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(request)
            return sock.recv(256)
    except OSError:
        return b""


def redis_answers(port: int, host: str = LOOPBACK) -> bool:
    reply = _ask(port, b"PING\r\n", host=host)
    return reply.startswith(b"+PONG") or reply.startswith(b"-NOAUTH")  # up, with or without a password


def _memcached_answers(port: int, host: str = LOOPBACK) -> bool:
    reply = _ask(port, b"version\r\n", host=host)
    return reply.startswith(b"VERSION ") or reply.startswith(b"CLIENT_ERROR unauthenticated")  # with a password too


STORE_ANSWERS = {"redis": redis_answers, "memcached": _memcached_answers}  # how `adopt_server` asks each store
