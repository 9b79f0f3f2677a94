"""The stores' passwords stay out of process lists: a real redis-server and memcached started with one
(faasgd.local.services.stores) hold it in a 0600 file, never in /proc/<pid>/cmdline or environ, and refuse clients
that do not give it while serving those that do. So does the config k8s/redis.yaml's init container writes."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest
import redis
import yaml
from support.paths import ROOT

from faasgd.errors import ConfigError
from faasgd.local.services.stores import MEMCACHED_USER, free_port, start_memcached, start_redis
from faasgd.store import PASSWORD_SECRET, read_password

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
REDIS_PASSWORD = 'p4ss "word" \\ with\nnewline and caf\u00e9'  # every character a config file could trip on
MEMCACHED_PASSWORD = "s3cr:et-p4ss"


def process_text(pid: int) -> bytes:
    """What any user may read of a process: its command line (and, as root reads it, its environment)."""
    return Path(f"/proc/{pid}/cmdline").read_bytes() + Path(f"/proc/{pid}/environ").read_bytes()


def private(path: Path) -> bool:
    return stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def ask(port: int, data: bytes) -> bytes:
    """Send `data`, read until the server closes ('' when nothing listens yet)."""
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    except OSError:
        return b""
    with sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := sock.recv(4096):
            received += chunk
        return received


def test_redis_reads_its_password_from_a_private_config_file():
    server = start_redis(password=REDIS_PASSWORD)
    try:
        seen = process_text(server.pid)
        assert REDIS_PASSWORD.encode() not in seen and b"p4ss" not in seen and b"requirepass" not in seen
        conf = Path(server.log_path).parent / "redis.conf"  # redis-server retitles its cmdline; the file is beside
        assert private(conf)
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=server.port).ping()
        assert redis.Redis(port=server.port, password=REDIS_PASSWORD).ping()
    finally:
        server.stop()
    assert not conf.exists(), "the config file outlived the server"


def test_memcached_reads_its_password_from_a_private_auth_file():
    server = start_memcached(password=MEMCACHED_PASSWORD)
    try:
        seen = process_text(server.pid)
        assert MEMCACHED_PASSWORD.encode() not in seen and b"p4ss" not in seen
        argv = seen.split(b"\0")
        auth = Path(argv[argv.index(b"-Y") + 1].decode())
        assert auth.read_text() == f"{MEMCACHED_USER}:{MEMCACHED_PASSWORD}\n"
        assert private(auth)
        assert ask(server.port, b"get k\r\n").startswith(b"CLIENT_ERROR unauthenticated")
        credentials = f"{MEMCACHED_USER} {MEMCACHED_PASSWORD}".encode()
        wrong = f"{MEMCACHED_USER} guess".encode()
        assert ask(server.port, b"set a 0 0 %d\r\n%s\r\nget k\r\n" % (len(wrong), wrong)).startswith(b"CLIENT_ERROR")
        answer = ask(server.port, b"set a 0 0 %d\r\n%s\r\nset k 0 0 1\r\nv\r\nget k\r\n" % (len(credentials),
                                                                                          credentials))
        assert answer == b"STORED\r\nSTORED\r\nVALUE k 0 1\r\nv\r\nEND\r\n"
    finally:
        server.stop()
    assert not auth.exists(), "the auth file outlived the server"


def test_without_a_password_memcached_takes_no_auth_file():
    server = start_memcached()
    try:
        assert b"-Y" not in process_text(server.pid).split(b"\0")
        assert ask(server.port, b"set k 0 0 1\r\nv\r\n") == b"STORED\r\n"
    finally:
        server.stop()


@pytest.mark.parametrize("password", ["", "two words", "line\nbreak", "tab\there"])
def test_a_memcached_password_its_auth_file_cannot_hold_is_refused_before_starting(password):
    with pytest.raises(ConfigError) as info:
        start_memcached(password=password)
    assert info.value.field == "password"


@pytest.mark.parametrize("secret", ['  p4ss "w\\o$(rd)" `x` \t\n', "plain-password\n"])
def test_the_k8s_init_script_writes_a_config_redis_reads_with_the_password_the_functions_read(tmp_path, secret):
    """k8s/redis.yaml's init container, run by sh here: the config it writes makes redis-server ask for the
    secret's value trimmed as faasgd.store.read_password trims it, and holds the password only hex-escaped."""
    manifest = yaml.safe_load_all((ROOT / "k8s" / "redis.yaml").read_text())
    pod = next(doc for doc in manifest if doc and doc["kind"] == "Deployment")["spec"]["template"]["spec"]
    (init,) = pod["initContainers"]
    (secrets := tmp_path / "secrets").mkdir()
    (secrets / PASSWORD_SECRET).write_text(secret)
    config = tmp_path / "config" / "redis.conf"
    config.parent.mkdir()
    env = {"PATH": os.environ["PATH"], "SECRET_FILE": str(secrets / PASSWORD_SECRET), "CONFIG_FILE": str(config)}
    subprocess.run([*init["command"], *init["args"]], env=env, check=True, timeout=30)
    password = read_password(str(secrets))
    assert stat.S_IMODE(config.stat().st_mode) == 0o600 and password.encode() not in config.read_bytes()
    server = subprocess.Popen(["redis-server", str(config), "--port", str(port := free_port()), "--bind", "127.0.0.1",
                               "--save", "", "--appendonly", "no", "--dir", str(tmp_path)], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while b"NOAUTH" not in ask(port, b"PING\r\n") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert redis.Redis(port=port, password=password).ping()
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=port, password=secret).ping()  # untrimmed: not the password
    finally:
        server.terminate()
        server.wait(10)
