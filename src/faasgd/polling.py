"""Reading something until it says done: one loop for the gateway's callers (a job's status, replicas' availability,
the runtime's state file) and the status reads that wait inside emnist-setup (faasgd.job.status.wait_for_end).
The standard library alone, so the job package and the runtime's start import it without httpx."""

from __future__ import annotations

import time
from typing import Any, Callable

POLL_S = 0.5  # how often a job's status is read by default (openfaas.wait_for_job)


def poll_until(read: Callable[[], Any], done: Callable[[Any], bool], timeout_s: float, *,
               poll_s: float = POLL_S, on_value: Callable[[Any], None] | None = None,
               sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
               read_waits: bool = False) -> Any:
    """Read until `done(value)` or `timeout_s` has passed, sleeping `poll_s` between reads; the last value.
    `read_waits`: the read itself waits up to `poll_s` (emnist-setup's `wait`), so only what is left of `poll_s`
    after it is slept (all of it when the server answered at once: an emnist-setup that holds no reads)."""
    deadline = clock() + timeout_s
    while True:
        began = clock()
        value = read()
        if on_value is not None:
            on_value(value)
        if done(value) or clock() >= deadline:
            return value
        pause = poll_s - (clock() - began) if read_waits else poll_s
        sleep(max(0.0, min(pause, deadline - clock())))
