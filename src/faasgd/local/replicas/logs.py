"""Replica logs with a timestamp per line, as a container runtime keeps them, and their reading.

A replica's stdout and stderr go through a pipe to `pump`, which writes each line to the replica's
log file as `<RFC 3339 UTC time> <text>` (the form `kubectl logs --timestamps` shows). The gateway's
/system/logs reads those files back as faas-provider log messages; `faasgd logs` prints the text.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO, Callable, Iterable


def stamp(moment: datetime) -> str:
    """RFC 3339 in UTC with microseconds and a Z, which Go's time.Time reads."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str) -> datetime | None:
    """An RFC 3339 time (with a zone) as an aware datetime, or None."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def split_line(line: str) -> tuple[datetime | None, str]:
    """(time, text) of one log line; a line without a leading time is all text."""
    head, _, text = line.partition(" ")
    moment = parse_time(head)
    return (moment, text) if moment is not None else (None, line)


def pump(source: BinaryIO, path: Path, now: Callable[[], datetime] = lambda: datetime.now(timezone.utc)
         ) -> threading.Thread:
    """Copy `source` to `path` line by line, each line stamped with the time it arrived; a daemon thread."""

    def copy() -> None:
        with open(path, "ab", buffering=0) as log, source:
            for raw in iter(source.readline, b""):
                text = raw.decode("utf-8", "replace").rstrip("\r\n")
                log.write(f"{stamp(now())} {text}\n".encode())

    thread = threading.Thread(target=copy, name=f"log-{path.stem}", daemon=True)
    thread.start()
    return thread


def write_line(path: Path, text: str, moment: datetime | None = None) -> None:
    """Append one stamped line (the runtime's own notes in a replica's log)."""
    with open(path, "ab") as log:
        log.write(f"{stamp(moment or datetime.now(timezone.utc))} {text}\n".encode())


@dataclass
class Entry:
    """One log line of one replica."""

    instance: str
    time: datetime
    text: str


class LogFile:
    """A replica's log file read incrementally: each `read()` returns the whole lines added since."""

    def __init__(self, instance: str, path: Path):
        self.instance, self.path, self.offset = instance, path, 0

    def read(self) -> list[Entry]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except OSError:
            return []
        complete = chunk[:chunk.rfind(b"\n") + 1]
        self.offset += len(complete)
        entries, last = [], datetime.min.replace(tzinfo=timezone.utc)
        for line in complete.decode("utf-8", "replace").splitlines():
            moment, text = split_line(line)
            last = moment or last  # an unstamped line (written before stamping) takes the time before it
            entries.append(Entry(self.instance, last, text))
        return entries


def select(entries: Iterable[Entry], since: datetime | None, tail: int) -> list[Entry]:
    """The entries at or after `since`, then the last `tail` per instance (tail <= 0: all), by time."""
    kept: dict[str, list[Entry]] = {}
    for entry in entries:
        if since is None or entry.time >= since:
            kept.setdefault(entry.instance, []).append(entry)
    chosen = [e for per_instance in kept.values() for e in (per_instance[-tail:] if tail > 0 else per_instance)]
    return sorted(chosen, key=lambda e: e.time)
