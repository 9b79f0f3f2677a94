"""One download done carefully, for `faasgd data fetch`: a lock, a temporary file, a bounded stream.

- `held(lock_path, wait_s)`: an exclusive flock on a file beside the target; a second fetch waits
  for it (saying so) up to `wait_s`, then reports. The kernel releases it if the holder dies.
- `temporary_file(folder, name)`: `.NAME.*.part` in the target's own folder, so the final rename
  is atomic (same file system).
- `stream_to(path, url, ...)`: httpx with a timeout on connecting and on every read, a deadline on
  the whole download, a size bound when the size is known, SHA-256 computed on the way, and a rich
  progress bar on stderr.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import time
from contextlib import contextmanager
from typing import Callable, Iterator

from faasgd.errors import FaasgdError
from faasgd.store.url import mask_password

LOCK_POLL_S = 0.2
CHUNK_BYTES = 1 << 20


class DownloadError(FaasgdError):
    """Raised when a download cannot be made: another holds the lock, HTTP status, timeout, size."""


@contextmanager
def held(lock_path: str, wait_s: float, say: Callable[[str], None],
         clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> Iterator[None]:
    """Hold an exclusive lock on `lock_path`, waiting up to `wait_s` for another holder to finish."""
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline, told = clock() + wait_s, False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if clock() >= deadline:
                    raise DownloadError(f"another fetch holds {lock_path} (still after {wait_s:g} s); "
                                        "wait for it or raise --lock-wait") from None
                if not told:
                    say(f"another fetch holds {lock_path}: waiting for it (at most {wait_s:g} s)")
                    told = True
                sleep(min(LOCK_POLL_S, max(0.0, deadline - clock())))
        yield
    finally:
        os.close(fd)  # releases the lock; the lock file stays (removing it would race a waiter)


def temporary_file(folder: str, name: str) -> str:
    fd, path = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".part")
    os.close(fd)
    return path


def stream_to(path: str, url: str, timeout_s: float, deadline_s: float, expected_bytes: int | None,
              label: str) -> tuple[str, int]:
    """Download `url` into `path` (fsync'd); return (SHA-256 hex, bytes). DownloadError on any failure."""
    import httpx
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    shown = mask_password(url)
    digest, size, deadline = hashlib.sha256(), 0, time.monotonic() + deadline_s
    columns = ("{task.description}", BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn())
    try:
        with httpx.Client(timeout=httpx.Timeout(timeout_s), follow_redirects=True) as client, \
                client.stream("GET", url) as response, open(path, "wb") as out, \
                Progress(*columns, console=Console(stderr=True)) as progress:
            if response.status_code != 200:
                raise DownloadError(f"{shown}: HTTP {response.status_code}")
            total = int(response.headers.get("content-length") or 0) or expected_bytes
            if expected_bytes is not None and total != expected_bytes:
                raise DownloadError(f"{shown}: {total:,} bytes announced, expected {expected_bytes:,}")
            task = progress.add_task(label, total=total)
            for chunk in response.iter_bytes(CHUNK_BYTES):
                size += len(chunk)
                if expected_bytes is not None and size > expected_bytes:
                    raise DownloadError(f"{shown}: more than the expected {expected_bytes:,} bytes")
                if time.monotonic() > deadline:
                    raise DownloadError(f"{shown}: not finished after --deadline {deadline_s:g} s")
                out.write(chunk)
                digest.update(chunk)
                progress.update(task, advance=len(chunk))
            out.flush()
            os.fsync(out.fileno())
    except httpx.TimeoutException as error:
        raise DownloadError(f"{shown}: timed out after {timeout_s:g} s ({type(error).__name__})") from None
    except httpx.HTTPError as error:
        raise DownloadError(f"{shown}: {type(error).__name__}: {mask_password(str(error))}") from None
    return digest.hexdigest(), size


def sync_folder(folder: str) -> None:
    """fsync a folder so a rename in it survives a crash."""
    fd = os.open(folder or ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
