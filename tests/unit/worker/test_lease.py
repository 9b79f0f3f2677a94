"""Leases (loop and per-iteration): a duplicate is refused, a redelivery of a dead call takes over once
its lease expires, a live holder keeps it, and a release frees it. A fake clock: no real waiting."""

import uuid

from faasgd.worker.lease import POLL_S, Lease
from faasgd.store import open_store
from support.fake_clock import StepClock


def fresh(clock):
    store = open_store(f"memory://lease{uuid.uuid4().hex[:8]}")
    store.client.clock = clock  # TTLs expire on the fake clock
    return store


def lease(store, clock, call_id, ttl_s=30, scope=3):
    return Lease(store, "j1", 0, scope, call_id, ttl_s, sleep=clock.sleep, clock=clock)


def test_first_caller_takes_the_lease_and_another_call_is_a_duplicate_at_once():
    clock = StepClock()
    store = fresh(clock)
    assert lease(store, clock, "call-a").acquire()
    assert not lease(store, clock, "call-b").acquire()
    assert clock.waits == []  # a different call does not wait
    assert store.get_record("j1", "lease:0:3")["call_id"] == "call-a"


def test_a_redelivery_of_the_same_call_waits_out_the_dead_holder_then_takes_over():
    clock = StepClock()
    store = fresh(clock)
    assert lease(store, clock, "call-a", ttl_s=5).acquire()  # then that delivery dies, never renews
    started = clock.now
    assert lease(store, clock, "call-a", ttl_s=5).acquire()
    assert 5 <= clock.now - started <= 5 + POLL_S  # until the dead holder's lease expired, not before


def test_a_live_holder_renewing_its_lease_keeps_a_redelivery_out_until_the_deadline():
    clock = StepClock()
    store = fresh(clock)
    holder = lease(store, clock, "call-a", ttl_s=5)
    assert holder.acquire()
    waiting = lease(store, clock, "call-a", ttl_s=5)
    waiting.sleep = lambda seconds: (holder.renew(), clock.sleep(seconds))  # alive: renews meanwhile
    assert not waiting.acquire()
    assert clock.waits and clock.now - 1000.0 >= 5  # it polled, and gave up at its deadline


def test_release_frees_the_lease_for_the_next_call_and_only_the_holder_releases():
    clock = StepClock()
    store = fresh(clock)
    first, second = lease(store, clock, "call-a", scope="loop"), lease(store, clock, "call-b", scope="loop")
    assert first.acquire() and not second.acquire()
    second.release()  # not held: nothing deleted
    assert store.get_record("j1", "lease:0:loop")["call_id"] == "call-a"
    first.release()
    assert store.get_record("j1", "lease:0:loop") is None
    assert second.acquire()


def test_an_add_whose_reply_was_lost_is_ours_at_once_with_or_without_a_call_id():
    """The set-if-absent was applied, the reply lost (a store outage at a call's start), the acquire retried:
    the lease names this Lease's nonce, so it is held at once; no wait for its expiry, no 'duplicate' (a call
    without X-Call-Id used to answer duplicate here)."""
    from faasgd.errors import StoreTimeout
    from faasgd.retry import STORE_OUTAGE, retry_call

    for call_id in ("call-a", ""):
        clock = StepClock()
        store = fresh(clock)
        add, lost = store.add_record, []

        def add_then_lose_the_reply(*args, **kwargs):
            done = add(*args, **kwargs)
            if not lost:
                lost.append(done)
                raise StoreTimeout(store.url, "reply lost")
            return done
        store.add_record = add_then_lose_the_reply
        mine, began = lease(store, clock, call_id, ttl_s=30), clock.now
        assert retry_call(mine.acquire, STORE_OUTAGE, sleep=clock.sleep, clock=clock)
        assert lost == [True] and mine.held
        assert clock.now - began < 5  # backoff only, not the lease's 30 s
        assert not lease(store, clock, "call-b").acquire()  # and it is held for everyone else
