"""Per-iteration leases: a duplicate is refused, a redelivery of a dead call takes over once its lease expires."""

import time
import uuid

from faasgd.sgd.iteration import acquire_lease
from faasgd.store import open_store


def fresh_store():
    return open_store(f"memory://lease{uuid.uuid4().hex[:8]}")


def test_first_caller_takes_the_lease_and_another_call_is_a_duplicate():
    store = fresh_store()
    assert acquire_lease(store, "j1", "lease:0:3", "call-a", ttl_s=30)
    started = time.monotonic()
    assert not acquire_lease(store, "j1", "lease:0:3", "call-b", ttl_s=30)
    assert time.monotonic() - started < 1  # a different call does not wait
    assert store.get_record("j1", "lease:0:3")["call_id"] == "call-a"


def test_a_redelivery_of_the_same_call_waits_out_the_dead_holder_then_takes_over():
    store = fresh_store()
    assert acquire_lease(store, "j1", "lease:1:0", "call-a", ttl_s=1)  # then that delivery dies, never renews
    started = time.monotonic()
    assert acquire_lease(store, "j1", "lease:1:0", "call-a", ttl_s=1)
    waited = time.monotonic() - started
    assert 0.4 < waited < 3.5  # until the dead holder's lease expired, not at once and not forever
    assert store.get_record("j1", "lease:1:0")["at"] > time.time() - 2


def test_a_live_holder_renewing_its_lease_keeps_a_redelivery_out_until_the_deadline():
    store = fresh_store()
    assert acquire_lease(store, "j1", "lease:2:0", "call-a", ttl_s=1)
    renewals = []

    def renew_while_waiting(seconds):  # the first delivery is alive and renews meanwhile
        renewals.append(seconds)
        store.put_record("j1", "lease:2:0", {"call_id": "call-a", "at": time.time()}, ttl_s=1)
        time.sleep(seconds)

    assert not acquire_lease(store, "j1", "lease:2:0", "call-a", ttl_s=1, sleep=renew_while_waiting)
    assert renewals  # it polled, and gave up at its deadline
