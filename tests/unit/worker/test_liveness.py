"""A worker's heartbeat rides out a store outage: its record and the lease renewal `on_heartbeat` (worker/liveness.py)
are both retried within store_timeout_s, so a store restart between the two does not fail the worker."""

from types import SimpleNamespace

from faasgd.errors import StoreUnavailable
from faasgd.retry import STORE_OUTAGE, retry_call
from faasgd.worker.liveness import Liveness
from faasgd.store import open_store


class Worker(Liveness):
    def __init__(self, on_heartbeat):
        self.store, self.job_id = open_store("memory://liveness"), "j1"
        self.config = SimpleNamespace(lease_s=5, store_timeout_s=30.0)
        self.progress = SimpleNamespace(worker_id=0, owner="call#1", pushes=3)
        self.clock, self.on_heartbeat, self.slept = (lambda: 0.0), on_heartbeat, []

    def retry(self, call):
        return retry_call(call, STORE_OUTAGE.within(self.config.store_timeout_s), sleep=self.slept.append,
                          clock=self.clock)


def test_a_lease_renewal_refused_once_by_a_restarting_store_is_retried_not_fatal():
    calls = []

    def renew():
        calls.append(1)
        if len(calls) == 1:
            raise StoreUnavailable("redis://127.0.0.1:1/0", "connection refused")

    worker = Worker(renew)
    worker.heartbeat(force=True)
    assert len(calls) == 2 and len(worker.slept) == 1
    assert worker.store.get_record("j1", "heartbeat:0")["pushes"] == 3
