"""`faasgd data list` and `faasgd data fetch emnist`: data arrives on purpose, never inside a training call.

`fetch emnist` downloads NIST's EMNIST archive (gzip.zip) from the `emnist` package's NIST URL or
`--url`, with a timeout on connecting and on every read and a deadline on the whole download, checks
its SHA-256 against the value pinned here (`--sha256` for another archive), holds a file lock beside
the archive so concurrent fetches do not race (the second waits, then finds the archive there), shows
a progress bar, and places it atomically: a temporary file in the target folder, verified, then
renamed over the target. A failed fetch leaves nothing behind. The archive lands where the core
reads it: $FAASGD_EMNIST_ARCHIVE, else the `emnist` package's cache path.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from contextlib import suppress
from pathlib import Path
from urllib.parse import urlsplit

from faasgd.cli import download, output
from faasgd.cli.download import DownloadError
from faasgd.data import augmented, emnist_source, fashion
from faasgd.errors import ConfigError, DataMissing, FaasgdError
from faasgd.store.url import mask_password

# SHA-256 and size of NIST's gzip.zip, as published by TensorFlow Datasets
# (tensorflow/datasets, tensorflow_datasets/url_checksums/emnist.txt); NIST publishes no checksum.
EMNIST_SHA256 = "fb9bb67e33772a9cc0b895e4ecf36d2cf35be8b709693c3564cea2a019fcda8e"
EMNIST_BYTES = 561_753_746
NIST_ARCHIVE_URL = "https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip"  # where NIST serves it today
SHA256_HEX = re.compile(r"[0-9a-f]{64}\Z")


def add_parser(sub) -> None:
    """Register `faasgd data list | fetch` on the main parser's subcommands."""
    data = sub.add_parser("data", help="data sets on this machine: list them, fetch EMNIST on purpose")
    verbs = data.add_subparsers(dest="data_command", required=True)
    listing = verbs.add_parser("list", help="each data set: present or not, where, its size")
    output.add_flags(listing, "print the list as one JSON document on stdout")
    fetch = verbs.add_parser("fetch", help="download and verify a data set (fashion-mnist comes from Debian)")
    fetch.add_argument("dataset", metavar="emnist", help="emnist (one archive holds every emnist-* data set)")
    fetch.add_argument("--url", default=None, help="where to download from (default: NIST, the emnist package's URL)")
    fetch.add_argument("--sha256", default=None, help="expected SHA-256 (default: NIST's gzip.zip, pinned)")
    fetch.add_argument("--timeout", type=float, default=30.0, help="seconds to connect and for every read")
    fetch.add_argument("--deadline", type=float, default=3600.0, help="seconds for the whole download")
    fetch.add_argument("--lock-wait", type=float, default=3600.0,
                       help="seconds to wait for another fetch of the same archive to finish")
    fetch.add_argument("--force", action="store_true", help="download again even if the archive is there")


def run(args) -> int:
    return list_data(args) if args.data_command == "list" else fetch_emnist(args)


def default_url() -> str:
    """The `emnist` package's NIST URL for the archive when it is https, else NIST's current address."""
    urls = getattr(emnist_source.package(), "SOURCE_URLS", [])
    return next((u for u in urls if u.startswith("https://") and "nist.gov" in u), NIST_ARCHIVE_URL)


def fetch_emnist(args) -> int:
    if args.dataset != "emnist" and not args.dataset.startswith("emnist-"):
        how = {"fashion-mnist": "it comes from Debian: `apt-get install dataset-fashion-mnist`",
               "synthetic": "it is generated, never fetched"}.get(args.dataset, "faasgd fetches only emnist")
        raise ConfigError("dataset", f"must be emnist, got {args.dataset!r}: {how}")
    url, target = args.url or default_url(), emnist_source.archive_location()
    sha256 = check_fetch_args(url, args)
    expected_bytes = EMNIST_BYTES if sha256 == EMNIST_SHA256 else None
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    with download.held(target + ".lock", args.lock_wait, say):
        if os.path.exists(target) and not args.force:
            found = file_sha256(target)
            if found != sha256:
                raise DownloadError(f"{target} is there but its SHA-256 is {found}, not {sha256}; "
                                    "`faasgd data fetch emnist --force` replaces it")
            print(f"emnist: already present at {target} ({os.path.getsize(target):,} bytes, sha256 verified)")
            return 0
        size = download_verified(url, target, sha256, expected_bytes, args.timeout, args.deadline)
    print(f"emnist: placed {target} ({size:,} bytes, sha256 {sha256}, variants "
          f"{', '.join(emnist_source.archive_variants(target))})")
    return 0


def check_fetch_args(url: str, args) -> str:
    """The expected SHA-256 (lower-case hex) after checking every flag; ConfigError naming the flag."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError for a port that is not a number in range)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # a bad port or IPv6 address
        valid = False
    if not valid:
        raise ConfigError("url", f"must be an http:// or https:// URL with a host, got {mask_password(url)!r}")
    sha256 = (args.sha256 or EMNIST_SHA256).strip().lower()
    if not SHA256_HEX.match(sha256):
        raise ConfigError("sha256", f"must be 64 hexadecimal digits, got {args.sha256!r}")
    for flag in ("timeout", "deadline"):
        if not getattr(args, flag) > 0:  # NaN too
            raise ConfigError(flag, f"must be a number of seconds > 0, got {getattr(args, flag):g}")
    if not args.lock_wait >= 0:
        raise ConfigError("lock_wait", f"must be a number of seconds >= 0 (0: do not wait), got {args.lock_wait:g}")
    return sha256


def download_verified(url: str, target: str, sha256: str, expected_bytes: int | None, timeout_s: float,
                      deadline_s: float) -> int:
    """Download `url` into a temporary file beside `target`, verify it, rename it over `target`; its size."""
    directory, name = os.path.split(target)
    part = download.temporary_file(directory, name)
    try:
        digest, size = download.stream_to(part, url, timeout_s, deadline_s, expected_bytes, f"emnist {name}")
        if digest != sha256:
            raise DownloadError(f"checksum mismatch for {mask_password(url)}: SHA-256 {digest}, expected {sha256}; "
                                "nothing placed")
        check_archive(part, url)
        os.chmod(part, 0o644)
        os.replace(part, target)  # atomic within the folder: readers see the old file or the whole new one
        download.sync_folder(directory)
        return size
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(part)
        raise


def check_archive(path: str, url: str) -> None:
    try:
        variants = emnist_source.archive_variants(path)
    except FaasgdError:
        variants = []
    if not variants:
        raise DownloadError(f"{mask_password(url)} is not an EMNIST archive (no gzip/emnist-*-test-images member); "
                            "nothing placed")


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(download.CHUNK_BYTES), b""):
            digest.update(chunk)
    return digest.hexdigest()


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def data_rows() -> list[dict]:
    """What `data list` shows: per source, present or not, where, bytes, the data sets it holds, how to get it."""
    rows = []
    directory = fashion.fashion_dir()
    found = []
    for name in (name for pair in fashion.FILES.values() for name in pair):
        with suppress(DataMissing):
            found.append(Path(fashion.find_file(directory, name)))
    rows.append({"source": "fashion-mnist", "datasets": ["fashion-mnist", *augmented.NAMES], "present": len(found) == 4,
                 "where": directory, "bytes": sum(f.stat().st_size for f in found),
                 "get": "apt-get install dataset-fashion-mnist"})
    archive = emnist_source.archive_location()
    present = os.path.isfile(archive) and os.path.getsize(archive) > 0
    variants = []
    if present:
        with suppress(FaasgdError):
            variants = emnist_source.archive_variants(archive)
    rows.append({"source": "emnist", "datasets": [f"emnist-{v}" for v in variants], "present": present,
                 "where": archive, "bytes": os.path.getsize(archive) if present else 0,
                 "get": emnist_source.FETCH_COMMAND})
    rows.append({"source": "synthetic", "datasets": ["synthetic"], "present": True, "where": "generated",
                 "bytes": 0, "get": "-"})
    return rows


def size_text(size: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:,.1f} {unit}"
    return f"{size} B" if size else "-"


def list_data(args) -> int:
    rows = data_rows()
    if args.json:
        output.emit_json(rows, indent=1)
        return 0
    from rich.table import Table

    from faasgd.cli.progress import console

    table = Table("source", "state", "where", "size", "data sets", "get it with")
    for row in rows:
        table.add_row(row["source"], "present" if row["present"] else "missing", row["where"],
                      size_text(row["bytes"]), ", ".join(row["datasets"]) or "-",
                      "-" if row["present"] else row["get"])
    console().print(table)
    return 0
