"""`faasgd data fetch emnist` against a real HTTP server on 127.0.0.1 serving a tiny EMNIST-shaped archive.

Checksum and size refused with nothing placed, a stalled server timed out, two concurrent fetches
(one downloads, the other waits and finds it; a third with a short --lock-wait reports), the archive
landing by rename only once verified, and load_shard reading what was fetched.
"""

from __future__ import annotations

import gzip
import hashlib
import subprocess
import sys
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import emnist
import numpy as np
import pytest

from faasgd.data import load_shard
from support.paths import ROOT

pytestmark = pytest.mark.integration


def idx_bytes(array: np.ndarray) -> bytes:
    code = {np.dtype(np.uint8): 0x08}[array.dtype]
    return bytes([0, 0, code, array.ndim]) + np.array(array.shape, ">u4").tobytes() + array.tobytes()


def build_archive(path: Path) -> dict:
    """A valid archive with the members emnist.ZIP_PATH_TEMPLATE names (digits: 200 train, 40 test rows)."""
    rng, arrays = np.random.default_rng(7), {}
    with zipfile.ZipFile(path, "w") as archive:
        for usage, n in (("train", 200), ("test", 40)):
            images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
            labels = rng.integers(0, 10, size=n, dtype=np.uint8)
            arrays[usage] = images, labels
            for matrix, dim, array in (("images", 3, images), ("labels", 1, labels)):
                name = emnist.ZIP_PATH_TEMPLATE.format(dataset="digits", usage=usage, matrix=matrix, dim=dim)
                archive.writestr(name, gzip.compress(idx_bytes(array), compresslevel=1))
    return arrays


class ArchiveServer:
    """Serves `body` at /gzip.zip in chunks, `delay_s` apart; with `stall_after`, stops sending there; with
    `hold_at`, waits there until `resume` is set, then sends the rest."""

    def __init__(self, body: bytes, chunk: int = 8192, delay_s: float = 0.0, stall_after: int | None = None,
                 hold_at: int | None = None):
        self.body, self.chunk, self.delay_s, self.stall_after, self.hold_at = body, chunk, delay_s, stall_after, hold_at
        self.requests, self.released, self.resume = 0, threading.Event(), threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                server.requests += 1
                if self.path != "/gzip.zip":
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(server.body)))
                self.end_headers()
                end = len(server.body) if server.stall_after is None else server.stall_after
                for start in range(0, end, server.chunk):
                    if server.hold_at is not None and start >= server.hold_at:
                        server.resume.wait(60)
                    self.wfile.write(server.body[start:min(end, start + server.chunk)])
                    self.wfile.flush()
                    server.released.wait(server.delay_s)
                if server.stall_after is not None:
                    server.released.wait(60)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/gzip.zip"

    def close(self):
        self.released.set()
        self.resume.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def archive(tmp_path):
    path = tmp_path / "served" / "gzip.zip"
    path.parent.mkdir()
    arrays = build_archive(path)
    return path.read_bytes(), arrays


@pytest.fixture
def serve():
    servers = []

    def start(body, **options):
        servers.append(ArchiveServer(body, **options))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def fetch(target: Path, *args, wait=True):
    argv = [sys.executable, "-m", "faasgd.cli", "data", "fetch", "emnist", *map(str, args)]
    env = {"FAASGD_EMNIST_ARCHIVE": str(target), "PATH": "/usr/bin:/bin", "HOME": str(target.parent)}
    process = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if not wait:
        return process
    out, err = process.communicate(timeout=60)
    return process.returncode, out, err


def parts(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.part")) if folder.exists() else []


def test_the_archive_lands_by_rename_once_verified_and_load_shard_reads_it(tmp_path, archive, serve, monkeypatch):
    body, arrays = archive
    server = serve(body, chunk=4096, delay_s=0.02)  # about 1 s in all, to watch it arrive
    target = tmp_path / "data" / "emnist.zip"
    process = fetch(target, "--url", server.url, "--sha256", hashlib.sha256(body).hexdigest(), wait=False)
    seen_part, seen_target = False, []
    while process.poll() is None:
        seen_part |= bool(parts(target.parent))
        if target.exists():
            seen_target.append(target.read_bytes() == body)
        time.sleep(0.01)
    out, err = process.communicate()
    assert process.returncode == 0, err
    assert seen_part and all(seen_target)  # written beside the target; the target, whenever seen, is whole
    assert target.read_bytes() == body and parts(target.parent) == [] and server.requests == 1
    assert f"placed {target}" in out and "variants digits" in out
    assert "emnist emnist.zip" in err  # the progress bar (plain when not a terminal)
    monkeypatch.setenv("FAASGD_EMNIST_ARCHIVE", str(target))
    for split in ("train", "test"):
        images, labels = arrays[split]
        for worker in range(2):
            shard = load_shard("emnist-digits", split, worker, 2)
            np.testing.assert_array_equal(shard.y, labels[shard.start:shard.stop])
            expected = images[shard.start:shard.stop].swapaxes(1, 2).reshape(-1, 784) / np.float32(255)
            np.testing.assert_array_equal(shard.x, expected.astype(np.float32))


def test_a_checksum_or_size_mismatch_is_refused_and_nothing_is_placed(tmp_path, archive, serve):
    body, _ = archive
    server = serve(body)
    target = tmp_path / "data" / "emnist.zip"
    code, _, err = fetch(target, "--url", server.url, "--sha256", "0" * 64)
    assert code == 1 and "checksum mismatch" in err and f"expected {'0' * 64}" in err and "nothing placed" in err
    assert not target.exists() and parts(target.parent) == []
    code, _, err = fetch(target, "--url", server.url)  # the pinned SHA-256 of NIST's archive, and its size
    assert code == 1 and "expected 561,753,746" in err
    assert not target.exists() and parts(target.parent) == []
    not_emnist = serve(b"PK\x05\x06" + bytes(18))  # an empty zip: right checksum, wrong contents
    code, _, err = fetch(target, "--url", not_emnist.url, "--sha256", hashlib.sha256(not_emnist.body).hexdigest())
    assert code == 1 and "is not an EMNIST archive" in err
    assert not target.exists() and parts(target.parent) == []


def test_a_stalled_download_times_out_and_places_nothing(tmp_path, archive, serve):
    body, _ = archive
    server = serve(body, stall_after=5000)
    target = tmp_path / "data" / "emnist.zip"
    started = time.monotonic()
    code, _, err = fetch(target, "--url", server.url, "--sha256", hashlib.sha256(body).hexdigest(), "--timeout", 1)
    assert code == 1 and "timed out after 1 s" in err and time.monotonic() - started < 20
    assert not target.exists() and parts(target.parent) == []


def test_concurrent_fetches_download_once(tmp_path, archive, serve):
    body, _ = archive
    server = serve(body, chunk=4096, hold_at=len(body) // 2)  # the first download holds halfway until resumed
    target = tmp_path / "data" / "emnist.zip"
    sha = hashlib.sha256(body).hexdigest()
    first = fetch(target, "--url", server.url, "--sha256", sha, wait=False)
    deadline = time.monotonic() + 20
    while not parts(target.parent):  # the first holds the lock and is downloading
        assert first.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    second = fetch(target, "--url", server.url, "--sha256", sha, wait=False)
    told = []  # the second's stderr up to its line saying it waits for the lock (EOF if it never says so)
    while not told or ("waiting for it" not in told[-1] and told[-1]):
        told.append(second.stderr.readline())
    impatient = fetch(target, "--url", server.url, "--sha256", sha, "--lock-wait", 0.2, wait=False)
    _, err_i = impatient.communicate(timeout=60)  # gives up while the first still holds the lock
    assert impatient.returncode == 1 and "another fetch holds" in err_i and "--lock-wait" in err_i
    assert first.poll() is None  # still held halfway: the impatient one was refused by the lock, not a race
    server.resume.set()
    out_1, _ = first.communicate(timeout=60)
    out_2, rest_2 = second.communicate(timeout=60)
    err_2 = "".join(told) + rest_2
    assert first.returncode == 0 and "placed" in out_1
    assert second.returncode == 0 and "waiting for it" in err_2 and "already present" in out_2
    assert "sha256 verified" in out_2
    assert server.requests == 1 and target.read_bytes() == body and parts(target.parent) == []
