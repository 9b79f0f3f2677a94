"""An inflated copy of a gzip'd IDX file, made once and read by every later shard load.

A gzip stream cannot seek: a worker's rows in the second half of Fashion-MNIST's training images, or the
validation rows at their end, cost decompressing everything before them, ~0.3 s of a core per load here,
and a job's worker loads its shard, its validation rows and its test rows. So the first reader of a gzip'd
file writes its content, inflated, to the cache folder (FAASGD_CACHE_DIR, else $XDG_CACHE_HOME/faasgd, else
~/.cache/faasgd: inflated/), named by the source's path, size and modification time (a changed source is
never served from an old copy); readers after it open that file and seek. Readers at the same moment wait
on the copy's lock (fcntl) instead of inflating it twice; the copy appears whole or not at all (written
beside, then renamed). Where the folder cannot be written (a read-only container), or the copy would exceed
MAX_BYTES or the free disk, reads stream from the gzip file as before: a copy is only ever a shortcut.
"""

from __future__ import annotations

import fcntl
import gzip
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

CACHE_ENV = "FAASGD_CACHE_DIR"
MAX_BYTES = 2 << 30  # no inflated copy above this (the largest IDX file of the catalog is ~0.7 GB)
CHUNK = 1 << 16


def cache_dir(environ: os._Environ | dict = os.environ) -> Path:
    """Where inflated copies live."""
    if environ.get(CACHE_ENV):
        return Path(environ[CACHE_ENV])
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "faasgd"


def copy_path(source: str, folder: Path) -> Path:
    """The copy's name: the source's name, and a digest of its real path, size and modification time."""
    stat = os.stat(source)
    key = f"{os.path.realpath(source)}\0{stat.st_size}\0{stat.st_mtime_ns}".encode()
    name = os.path.basename(source).removesuffix(".gz")
    return folder / "inflated" / f"{name}.{hashlib.sha256(key).hexdigest()[:16]}"


def inflated(source: str, declared_bytes: int, folder: Path | None = None) -> str | None:
    """The path of `source`'s inflated copy, made now if missing; None when none can be had (then stream).

    `declared_bytes` is what the IDX header says the file holds (header and values): a copy of another size is
    not made (the file is truncated or carries more than it declares) and the reader streams and reports."""
    if not 0 < declared_bytes <= MAX_BYTES:
        return None
    try:
        target = copy_path(source, folder or cache_dir())
        if _whole(target, declared_bytes):
            return str(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(str(target) + ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one inflates; the others wait, then read its copy
            if _whole(target, declared_bytes):
                return str(target)
            if shutil.disk_usage(target.parent).free < 2 * declared_bytes:
                return None
            return str(target) if _inflate(source, target, declared_bytes) else None
    except OSError:
        return None


def _whole(target: Path, declared_bytes: int) -> bool:
    try:
        return target.stat().st_size == declared_bytes
    except OSError:
        return False


def _inflate(source: str, target: Path, declared_bytes: int) -> bool:
    """Write the inflated content beside `target`, then rename it in; False (nothing left) if its size is wrong."""
    handle, partial = tempfile.mkstemp(prefix=target.name + ".", suffix=".part", dir=target.parent)
    try:
        written, buffer = 0, bytearray(CHUNK)  # one buffer: memory stays one chunk, whatever the file's size
        view = memoryview(buffer)
        with os.fdopen(handle, "wb") as out, gzip.open(source, "rb") as stream:
            while written <= declared_bytes and (size := stream.readinto(buffer)):
                out.write(view[:size])
                written += size
        if written != declared_bytes:
            return False
        os.replace(partial, target)
        return True
    except (OSError, EOFError, gzip.BadGzipFile):
        return False
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
