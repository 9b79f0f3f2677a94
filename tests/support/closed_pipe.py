"""A command run with its stdout a pipe whose reader has already gone (`cmd | head -1` once head has left)."""

from __future__ import annotations

import os
import subprocess


def run_into_a_closed_pipe(argv: list[str], timeout: float = 120, **options) -> subprocess.CompletedProcess:
    """`argv` run with stdout a pipe whose reading end is closed: its first write finds nobody reading."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(argv, stdout=write, stderr=subprocess.PIPE, text=True, timeout=timeout, **options)
    finally:
        os.close(write)
