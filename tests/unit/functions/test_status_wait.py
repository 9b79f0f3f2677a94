"""emnist-setup's `wait`: a running job's status is answered as the job ends (its result written, its state lost),
or after the seconds asked; the value is checked before anything is read; the clients read with it."""

import threading
import time
import uuid

import pytest

from faasgd import job
from faasgd.api.jobs import Job
from faasgd.config import load_config
from faasgd.errors import ConfigError
from faasgd.functions import emnist_setup, replica_cache
from faasgd.job import ending
from faasgd.job.status import wait_for_end
from faasgd.polling import poll_until
from faasgd.store import open_store


@pytest.fixture
def running(monkeypatch):
    """A job of one worker that has not started, in a memory store installed as the function's; no supervision."""
    url = f"memory://wait{uuid.uuid4().hex[:8]}"
    store = open_store(url)
    replica_cache.keep_store(url, store)
    monkeypatch.setattr(emnist_setup.BESIDE, "look_after", lambda job_id, look: None)
    config = load_config({}, {"dataset": "synthetic", "train_samples": 600, "store_url": url})
    yield store, job.create_job(store, config), {"store_url": url, "gateway_url": "http://127.0.0.1:9"}
    replica_cache.forget()


def test_a_status_read_with_wait_answers_when_the_job_ends(running):
    store, job_id, env = running
    ender = threading.Timer(0.3, lambda: ending.write_result(store, job_id, error="ended by the test"))
    ender.start()
    began = time.monotonic()
    code, status = emnist_setup.job_status({"job_id": job_id, "wait": "8"}, env)
    took = time.monotonic() - began
    ender.join()
    assert code == 200 and status["state"] == "failed" and status["result"]["error"] == "ended by the test"
    assert 0.25 < took < 4  # at the end, long before the 8 s asked


def test_a_status_read_with_wait_answers_running_after_the_seconds_and_at_once_without(running):
    store, job_id, env = running
    began = time.monotonic()
    assert emnist_setup.job_status({"job_id": job_id, "wait": "0.3"}, env)[1]["state"] == "running"
    assert time.monotonic() - began >= 0.3
    began = time.monotonic()
    assert emnist_setup.job_status({"job_id": job_id}, env)[1]["state"] == "running"
    assert time.monotonic() - began < 0.3


def test_a_read_whose_wait_runs_out_answers_the_status_as_of_then(running):
    store, job_id, env = running
    record = {"worker_id": 0, "epoch": 1, "state": "running", "samples": 640}
    threading.Timer(0.1, lambda: store.update_worker(job_id, 0, record)).start()
    status = emnist_setup.job_status({"job_id": job_id, "wait": "0.4"}, env)[1]
    assert status["state"] == "running" and status["workers"][0]["samples"] == 640  # written during the wait


def test_at_most_two_reads_wait_at_once_in_a_replica_and_the_next_answers_at_once(running):
    store, job_id, env = running
    answers = []
    waiting = [threading.Thread(target=lambda: answers.append(emnist_setup.job_status(
        {"job_id": job_id, "wait": "1.5"}, env)[1]["state"])) for _ in range(emnist_setup.MAX_WAITING_READS)]
    for thread in waiting:
        thread.start()
    time.sleep(0.3)  # both are waiting now
    began = time.monotonic()
    assert emnist_setup.job_status({"job_id": job_id, "wait": "1.5"}, env)[1]["state"] == "running"
    assert time.monotonic() - began < 1.0  # it did not wait: the two slots were held
    for thread in waiting:
        thread.join()
    assert answers == ["running"] * emnist_setup.MAX_WAITING_READS


def test_a_lost_job_ends_the_wait_too(running):
    store, job_id, env = running
    threading.Timer(0.2, lambda: job.mark_lost(store, job_id, "the store lost it")).start()
    assert emnist_setup.job_status({"job_id": job_id, "wait": "8"}, env)[1]["state"] == "failed"


@pytest.mark.parametrize("wait", ["-1", "10.5", "nan", "inf", "soon", ""])
def test_a_wait_outside_0_to_10_seconds_is_refused_naming_it_before_any_read(running, monkeypatch, wait):
    store, job_id, env = running
    monkeypatch.setattr(emnist_setup.replica_cache, "store_for", lambda url: pytest.fail("the store was opened"))
    with pytest.raises(ConfigError) as error:
        emnist_setup.job_status({"job_id": job_id, "wait": wait}, env)
    assert error.value.field == "wait" and "[0, 10]" in str(error.value)
    with pytest.raises(ConfigError) as error:
        emnist_setup.job_status({"job_id": job_id, "wait": "1", "model": "npz"}, env)
    assert error.value.field == "wait"


class Clock:
    def __init__(self):
        self.now, self.sleeps = 0.0, []

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def test_wait_for_end_reads_two_records_every_20_ms_until_the_end_or_the_deadline():
    reads, ends_at_read = [], [4]

    class Store:
        def get_records(self, job_id, names):
            reads.append(names)
            return {name: ({"state": "done"} if len(reads) == ends_at_read[0] and name == "result" else None)
                    for name in names}

    clock = Clock()
    assert wait_for_end(Store(), "j1", 5.0, sleep=clock.sleep, clock=lambda: clock.now) is True
    assert reads == [["result", "lost"]] * 4 and clock.sleeps == [0.02] * 3
    reads.clear()
    ends_at_read[0], clock = 0, Clock()  # never ends
    assert wait_for_end(Store(), "j1", 0.05, sleep=clock.sleep, clock=lambda: clock.now) is False
    assert [round(s, 3) for s in clock.sleeps] == [0.02, 0.02, 0.01] and len(reads) == 4


def test_poll_until_counts_a_waiting_reads_time_in_its_period_and_only_that():
    clock = Clock()

    def read():  # a read that takes 0.3 s (a status read that waits)
        clock.now += 0.3
        return clock.now

    last = poll_until(read, lambda value: value > 2.0, 10.0, poll_s=0.5, sleep=clock.sleep, clock=lambda: clock.now,
                      read_waits=True)
    assert last > 2.0 and [round(s, 3) for s in clock.sleeps] == [0.2] * len(clock.sleeps)
    clock = Clock()

    def slow():  # longer than the period: no sleep at all
        clock.now += 0.7
        return clock.now

    poll_until(slow, lambda value: value > 2.0, 10.0, poll_s=0.5, sleep=clock.sleep, clock=lambda: clock.now,
               read_waits=True)
    assert clock.sleeps == [0.0] * len(clock.sleeps) and clock.sleeps
    clock = Clock()  # a read that does not wait: poll_s between reads, however long the read took
    poll_until(slow, lambda value: value > 2.0, 10.0, poll_s=0.5, sleep=clock.sleep, clock=lambda: clock.now)
    assert clock.sleeps == [0.5] * len(clock.sleeps) and clock.sleeps


def test_a_jobs_wait_asks_each_read_to_wait_its_period_and_never_past_its_own_deadline():
    asked = []

    def waiting(seconds):
        asked.append(seconds)
        time.sleep(seconds)
        return {"state": "running"}

    job_ = Job("j0123456789abcdef", lambda: pytest.fail("read without a wait"), lambda: b"",
               lambda verb: AssertionError(verb), read_status_waiting=waiting)
    assert job_.wait(timeout_s=0.5, poll_s=0.2)["state"] == "running"
    assert asked[0] == pytest.approx(0.2, abs=0.01) and all(0 <= s <= 0.2 for s in asked)
    assert sum(asked) <= 0.5 + 1e-9  # the last read's wait is what was left of the 0.5 s
    big = []
    Job("j0123456789abcdef", lambda: {}, lambda: b"", lambda verb: AssertionError(verb),
        read_status_waiting=lambda s: big.append(s) or {"state": "done"}).wait(timeout_s=60, poll_s=30)
    assert big == [10.0]  # a poll period longer than emnist-setup takes is asked as its most
