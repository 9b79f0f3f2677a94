"""Leases: which invocation may train a worker now, for loop and per-iteration modes alike.

A lease is the record `lease:<worker>:<scope>` (scope `loop`, or the iteration number in
per-iteration mode), created set-if-absent with a TTL of `lease_s`, renewed at every progress
write, and released when the invocation ends, whatever its outcome.
- Another holder means a duplicate delivery: the caller trains nothing.
- A holder with *our own* call id is an earlier delivery of this very message that died (the
  gateway redelivers with the same X-Call-Id): wait for its lease to expire, then take over.
- A holder with our own nonce is this very Lease: its set-if-absent was applied but the reply was lost (a
  store outage at the call's start, retried): it is ours already, with or without a call id.
"""

from __future__ import annotations

import time
import uuid
from typing import Callable

from faasgd.errors import StoreError
from faasgd.store import ParameterStore, keys

POLL_S = 0.5  # how often a redelivery checks whether the dead holder's lease has expired


class Lease:
    """One invocation's claim on a worker (or one iteration of it)."""

    def __init__(self, store: ParameterStore, job_id: str, worker_id: int, scope: int | str, call_id: str,
                 ttl_s: int, *, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic):
        self.store, self.job_id, self.name = store, job_id, keys.lease_name(worker_id, scope)
        self.call_id, self.ttl_s = call_id, ttl_s
        self.sleep, self.clock = sleep, clock
        self.held = False
        self.nonce = uuid.uuid4().hex  # tells this Lease's own write from any other's

    def acquire(self) -> bool:
        """Take the lease; True if taken. Waits out a lease held under our own call id (a dead delivery)."""
        if self._add():
            return True
        holder = self.store.get_record(self.job_id, self.name)
        if holder is not None and holder.get("nonce") == self.nonce:  # our own add, its reply lost
            self.held = True
            return True
        if holder is not None and (not self.call_id or holder.get("call_id") != self.call_id):
            return False
        deadline = self.clock() + self.ttl_s + 2 * POLL_S
        while self.clock() < deadline:
            if self._add():
                return True
            self.sleep(POLL_S)
        return False

    def renew(self) -> None:
        """Push the expiry `ttl_s` into the future again (called at every progress write)."""
        self.store.put_record(self.job_id, self.name, self._value(), ttl_s=self.ttl_s)

    def release(self) -> None:
        """Give the lease up; best effort (with the store gone the lease simply expires)."""
        if self.held:
            self.held = False
            try:
                self.store.delete_record(self.job_id, self.name)
            except StoreError:
                pass

    def _add(self) -> bool:
        self.held = self.store.add_record(self.job_id, self.name, self._value(), ttl_s=self.ttl_s)
        return self.held

    def _value(self) -> dict:
        return {"call_id": self.call_id, "at": time.time(), "nonce": self.nonce}
