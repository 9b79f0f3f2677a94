"""Waiting in tests: poll a condition until it holds, or fail naming what was awaited."""

from __future__ import annotations

import time
from typing import Callable


def wait_until(predicate: Callable[[], object], what: str, timeout_s: float = 20.0, poll_s: float = 0.02) -> None:
    """Return once `predicate()` is true; an AssertionError naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out after {timeout_s}s waiting for {what}"
        time.sleep(poll_s)
