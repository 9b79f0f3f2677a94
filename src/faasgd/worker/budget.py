"""How long an invocation may go on training: its deadline and its replica's shutdown, checked at pushes.

A call's work ends cleanly only at a push boundary, where the worker's record is a checkpoint (store/
push.py). Before each stretch of work the worker asks its budget whether the next push boundary (and an
evaluation) still fits before the call's deadline, and whether its replica is draining (SIGTERM). If
not, it raises HandOff: the caller re-invokes the worker, which resumes from that checkpoint.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from faasgd.errors import FaasgdError


class HandOff(FaasgdError):
    """Raised at a push boundary when the call must end before the worker's work does (its deadline is near,
    or the replica is shutting down); the worker's record is its checkpoint and the caller re-invokes it."""

    http_status = 200


class Superseded(FaasgdError):
    """Raised when another invocation has taken this worker over (the store holds a newer push or record
    of it): this call stops at once and writes nothing more."""

    http_status = 200


@dataclass(frozen=True)
class CallBudget:
    """The limits of one invocation, as the platform shim (index.py) knows them."""

    deadline: float | None = None  # on `clock`; None: no deadline (a local process, a test)
    draining: Callable[[], bool] = field(default=lambda: False)  # True once the replica got SIGTERM
    margin_s: float = 2.0  # kept free before the deadline: answering, chaining the next call
    clock: Callable[[], float] = time.monotonic

    def stop_reason(self, upcoming_s: float = 0.0) -> str | None:
        """Why the call must hand off now rather than do `upcoming_s` more seconds of work, or None."""
        if self.draining():
            return "the replica is shutting down (SIGTERM)"
        if self.deadline is not None and self.clock() + upcoming_s + self.margin_s >= self.deadline:
            left = self.deadline - self.clock()
            return f"the call's deadline is {left:.1f} s away, the next push needs about {upcoming_s:.1f} s"
        return None

    def check(self, upcoming_s: float = 0.0) -> None:
        """Raise HandOff when the budget says stop."""
        reason = self.stop_reason(upcoming_s)
        if reason:
            raise HandOff(reason)


UNLIMITED = CallBudget()
