"""A call that starts while its store is down waits the outage out (within store_timeout_s) and trains.

Its first reads (the job, its lease, its record) used to fail at once: in function mode supervision
re-invoked such a call, but a `faasgd train --direct` worker exited and failed the job. Real servers:
Redis killed and started again on its append-only file (refused connections), and Redis and Memcached
frozen with SIGSTOP (reads time out) while the call starts; and a lease whose set-if-absent reply was lost,
found on the real server under the Lease's own nonce.
"""

import os
import signal
import subprocess
import threading
import time

import pytest

from faasgd import job
from faasgd.config import load_config
from faasgd.data import load_shard
from faasgd.functions import orchestrate
from faasgd.errors import StoreTimeout
from faasgd.functions.train_request import TrainRequest
from faasgd.local.services.stores import free_port, start_memcached, start_redis
from faasgd.functions.workloads import run_loop_call
from faasgd.worker.invocation import Call
from faasgd.store import open_store

pytestmark = pytest.mark.integration

ROWS, EPOCHS = 600, 2


def create(url: str, mode: str) -> str:
    config = load_config({}, {"dataset": "synthetic", "train_samples": ROWS, "test_samples": 100,
                              "hidden_sizes": [8], "number_of_workers": 1, "max_epochs": EPOCHS,
                              "target_accuracy": 1.0, "invocation_mode": mode, "store_url": url,
                              "store_timeout_s": 20, "lease_s": 5, "profile_hz": 0})
    with open_store(url) as store:
        return job.create_job(store, config)


def call_in_background(url: str, job_id: str, timeout_s: float = 5.0) -> tuple[threading.Thread, dict]:
    """emnist-train's work for worker 0 in a thread, as a --direct worker runs it (every iteration); its store
    client gives up on a read after `timeout_s`."""
    outcome: dict = {}

    def run() -> None:
        try:
            request, answers = TrainRequest(job_id, 0), []
            while request is not None:
                answers.append(orchestrate.train_call(open_store(url, timeout_s=timeout_s), request, f"startup-{job_id}"))
                following = answers[-1].get("next_iteration")
                request = None if following is None else request.next(following)
            outcome["answers"] = answers
        except BaseException as error:  # the assertion below names it
            outcome["error"] = repr(error)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def assert_trained(url: str, job_id: str, thread: threading.Thread, outcome: dict) -> None:
    thread.join(90)
    assert not thread.is_alive()
    assert "error" not in outcome, outcome.get("error")
    assert outcome["answers"][-1]["state"] == "finished"
    with open_store(url) as store:
        assert store.get_record(job_id, "result")["state"] == "done"
        assert store.worker_record(job_id, 0)["samples"] == EPOCHS * (ROWS - 60)  # every epoch once, none twice


@pytest.mark.parametrize("mode", ["loop", "per-iteration"])
def test_a_call_started_while_redis_restarts_waits_for_it_and_trains(tmp_path, mode):
    port = free_port()
    command = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes",
               "--appendfsync", "always", "--dir", str(tmp_path)]
    url = f"redis://127.0.0.1:{port}/0"
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(url)
        job_id = create(url, mode)
        server.send_signal(signal.SIGTERM)
        server.wait(10)  # down: the call's first read is refused
        thread, outcome = call_in_background(url, job_id)
        time.sleep(1.5)
        assert thread.is_alive() and not outcome  # waiting, not failed
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert_trained(url, job_id, thread, outcome)
    finally:
        server.kill()
        server.wait(10)


@pytest.mark.parametrize("start", [start_redis, start_memcached], ids=["redis", "memcached"])
def test_a_call_started_while_its_store_is_frozen_waits_for_it_and_trains(start):
    server = start()
    try:
        job_id = create(server.url, "loop")
        os.kill(server.pid, signal.SIGSTOP)  # frozen: the call's first reads time out
        try:
            thread, outcome = call_in_background(server.url, job_id, timeout_s=1.0)
            time.sleep(3.5)  # past the client's timeout: its first reads have timed out, more than once
            assert thread.is_alive() and not outcome
        finally:
            os.kill(server.pid, signal.SIGCONT)
        assert_trained(server.url, job_id, thread, outcome)
    finally:
        server.stop()


@pytest.mark.parametrize("server", ["redis_server", "memcached_server"])
def test_a_lease_taken_whose_reply_was_lost_is_the_calls_own_on_a_real_store(server, request):
    """The store applies the lease's set-if-absent and the reply is lost (the client times out): the retried
    acquire finds the lease under its own nonce on the real server, and trains at once (no lease_s wait)."""
    url = request.getfixturevalue(server).url
    job_id = create(url, "loop")
    store, lost = open_store(url), []
    add = store.add_record

    def add_then_lose_the_reply(*args, **kwargs):
        done = add(*args, **kwargs)
        if not lost and args[1].startswith("lease:"):
            lost.append(done)
            raise StoreTimeout(url, "the reply was lost")
        return done
    store.add_record = add_then_lose_the_reply
    config = job.read_job(store, job_id)[0]
    began = time.monotonic()
    answer = run_loop_call(Call(config, store, job_id, 0, "", loader=load_shard))  # no call id: a POST without X-Call-Id
    assert lost == [True]  # the set-if-absent was applied on the server
    assert answer["state"] == "finished" and not answer["duplicate"], answer
    assert time.monotonic() - began < config.lease_s  # not waited out
    assert open_store(url).get_record(job_id, "result")["state"] == "done"


def wait_ready(url: str) -> None:
    deadline = time.monotonic() + 10
    while True:
        try:
            with open_store(url) as store:
                store.ping()
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
