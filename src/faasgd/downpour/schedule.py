"""Downpour's communication modes (config `communication`) as schedules, chosen once per worker.

A schedule decides, at the points where the modes differ, what the worker's exchange (exchange.py) does; the
exchange keeps the state (`push_due`, `fetch_wanted`, the operation in flight `op`; Scheduled says what a schedule
uses):
- blocking: every store operation runs inline and is taken in at once (the worker waits for each round trip);
- background: operations run on the store thread while the worker trains on, taken in at the next
  synchronisation point (comm.py);
- coalesce: background, and a due push or fetch never waits for the one in flight: a push point passed
  meanwhile is put off to the first step after that operation has landed (the steps go on accumulating), a
  fetch point is served by the operation in flight or by the put-off push's result, and an operation that
  has landed is taken in before the next step.
"""

from __future__ import annotations

from typing import Protocol

from faasgd.downpour import comm
from faasgd.errors import ConfigError


class Scheduled(Protocol):
    """What a schedule reads and sets of the exchange it serves (ParameterExchange)."""

    comms: comm.StoreThread  # the worker's store operations, one in flight at most
    op: comm.Op | None  # the operation submitted and not yet taken in
    fetched_once: bool  # the first fetch of the invocation has been taken in
    push_due: bool  # coalesce: a push point passed while an operation was in flight
    fetch_wanted: bool  # coalesce: a fetch point left to the put-off push's result

    def sync(self) -> None: ...  # wait for the operation in flight and take its result in

    def take_in_landed(self) -> None: ...  # take in an operation that has landed, without waiting


class Blocking:
    """Every operation inline, taken in at once."""

    background = False  # the store thread runs operations on a thread of its own

    def after_submit(self, worker: Scheduled) -> None:
        """An operation was submitted: take it in now (blocking) or at the next synchronisation point."""
        worker.sync()

    def serves_fetch(self, worker: Scheduled) -> bool:
        """True when the fetch point is served otherwise (nothing to submit for it); never here."""
        return False

    def puts_off_push(self, worker: Scheduled) -> bool:
        """True when a due push is put off (the steps go on accumulating); never here."""
        return False

    def before_step(self, worker: Scheduled) -> None:
        """Before each minibatch step: nothing here."""


class Background(Blocking):
    """Operations on the store thread, overlapping the next steps; taken in at the next synchronisation point."""

    background = True

    def after_submit(self, worker: Scheduled) -> None:
        pass


class Coalesce(Background):
    """Background, and a due push or fetch never waits for the operation in flight."""

    def serves_fetch(self, worker: Scheduled) -> bool:
        if not worker.fetched_once:  # the first fetch of an invocation waits for its result
            return False
        if worker.comms.in_flight:
            if worker.op.kind == comm.PUSH:  # the push's result (global with our steps) serves as this fetch
                worker.op.merge = True
            return True  # a fetch in flight serves it as it is
        if worker.push_due:  # the push about to go serves as this fetch: one round trip, not two
            worker.fetch_wanted = True
            return True
        return False

    def puts_off_push(self, worker: Scheduled) -> bool:
        if worker.comms.in_flight:
            worker.push_due = True
            return True
        return False

    def before_step(self, worker: Scheduled) -> None:
        worker.take_in_landed()


SCHEDULES = {"blocking": Blocking, "background": Background, "coalesce": Coalesce}


def schedule_for(communication: str) -> Blocking:
    """The schedule of config `communication`; ConfigError naming it otherwise."""
    if communication not in SCHEDULES:
        raise ConfigError("communication", f"unknown mode {communication!r} (allowed: {', '.join(SCHEDULES)})")
    return SCHEDULES[communication]()
