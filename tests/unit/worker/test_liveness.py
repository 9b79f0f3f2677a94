"""A worker's heartbeat rides out a store outage: its record and the lease renewal `on_heartbeat` (worker/liveness.py)
are both retried within store_timeout_s, so a store restart between the two does not fail the worker. The worker's
resource stats go to their own record with the beat that follows their renewal, and only then."""

from types import SimpleNamespace

from faasgd.errors import StoreUnavailable
from faasgd.retry import STORE_OUTAGE, retry_call
from faasgd.worker.liveness import Liveness
from faasgd.store import open_store


class Worker(Liveness):
    def __init__(self, on_heartbeat):
        self.store, self.job_id = open_store("memory://liveness"), "j1"
        self.config = SimpleNamespace(lease_s=5, store_timeout_s=30.0)
        self.progress = SimpleNamespace(worker_id=0, owner="call#1", pushes=3, resources={})
        self.now = 0.0
        self.clock, self.on_heartbeat, self.slept = (lambda: self.now), on_heartbeat, []

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


def test_resource_stats_are_written_with_the_beat_after_the_profile_renews_them():
    writes = []
    worker = Worker(None)
    put = worker.store.put_record
    worker.store.put_record = lambda job_id, name, value, **kw: (writes.append(name), put(job_id, name, value, **kw))
    worker.heartbeat(force=True)
    assert writes == ["heartbeat:0"]  # no profile yet: nothing to write
    worker.progress.resources = {"cpu": {"integral": 0.123456789, "bursts": 2.0}}  # the profile's publish
    worker.now = 1.5
    worker.heartbeat()
    assert writes == ["heartbeat:0", "heartbeat:0", "resources:0"]
    assert worker.store.get_record("j1", "resources:0") == {"cpu": {"integral": 0.123457, "bursts": 2.0}}
    worker.now = 3.0
    worker.heartbeat()  # not renewed since: only the beat
    assert writes[3:] == ["heartbeat:0"]
