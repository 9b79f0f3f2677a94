"""A job's keys expire on real Redis and Memcached (store/expiry.py): listed from the server, every key under
the job's prefix (Redis: SCAN + PTTL; Memcached: `lru_crawler metadump all`), never a chosen few.
"""

import threading
import time

import pytest

from faasgd import job
from faasgd.config import load_config
from faasgd.errors import JobNotFound, StateLost
from faasgd.functions import replica_cache
from faasgd.functions.orchestrate import train_call
from faasgd.functions.train_request import TrainRequest
from faasgd.local.services.stores import start_memcached, start_redis
from faasgd.store import keys, open_store
from support.expiry_keys import MEMCACHED_KINDS, missing_kinds, ttls_of, write_every_kind
from support.waits import wait_until

pytestmark = pytest.mark.integration

SLACK_S = 1.5  # memcached's clock ticks once a second (an item's exp may read a little past); a listing takes time


def create(url: str, keep_s: int, **settings) -> str:
    config = load_config({}, {"dataset": "synthetic", "train_samples": 600, "test_samples": 100, "hidden_sizes": [8],
                              "number_of_workers": 1, "max_epochs": 3, "target_accuracy": 0.3, "n_push": 2,
                              "push_codec": "f16", "store_url": url, "store_timeout_s": 5, "lease_s": 5,
                              "profile_hz": 5, "keep_s": keep_s, "start_timeout_s": 1, **settings})
    with open_store(url) as store:
        return job.create_job(store, config)


def run_worker(url: str, job_id: str) -> list[dict]:
    """Worker 0's calls, one after another as a --direct worker makes them, on a store object of its own."""
    store, request, answers = open_store(url, timeout_s=2.0), TrainRequest(job_id, 0), []
    try:
        while request is not None:
            answers.append(train_call(store, request, f"expiry-{job_id}"))
            following = answers[-1].get("next_iteration")
            request = None if following is None else request.next(following)
        return answers
    finally:
        store.close()
        replica_cache.forget()


def outlasting(found: dict, keep_s: float) -> dict:
    """The listed keys without an expiry, or with more than keep_s left."""
    return {key: left for key, left in found.items() if left is None or not -SLACK_S < left <= keep_s + SLACK_S}


@pytest.mark.parametrize("mode, codec", [("loop", "f16"), ("per-iteration", "topk:0.05")])
def test_after_a_job_ends_every_key_under_its_prefix_expires_within_keep_s(store_server, mode, codec):
    job_id = create(store_server.url, 600, invocation_mode=mode, push_codec=codec)
    answers = run_worker(store_server.url, job_id)
    assert answers[-1]["state"] == "finished"
    with open_store(store_server.url) as store:
        result = store.get_record(job_id, keys.RESULT)
    assert result["state"] == "done"
    found = ttls_of(store_server.url, job_id)
    expected = ["w:meta", "w:version", "w:0", "r:config", "r:job", "r:result", "r:progress:0", "r:profile:0",
                "b:residual", "events"]
    expected += ["r:done", "m:crossing-0:meta"] if result["reached_target"] else ["m:final:meta"]  # its model
    assert missing_kinds(found, job_id, expected) == [], sorted(found)  # the listing reaches every kind
    assert outlasting(found, 600) == {}


def test_a_jobs_keys_are_gone_keep_s_after_its_last_write(store_server):
    job_id = "expiry-" + str(time.time_ns())
    with open_store(store_server.url) as store:
        write_every_kind(store, job_id, keep_s=2)
        found = ttls_of(store_server.url, job_id)
        kinds = MEMCACHED_KINDS if store_server.url.startswith("memcached") else ()
        assert missing_kinds(found, job_id, kinds) == [] and len(found) >= 12, sorted(found)
        assert outlasting(found, 2) == {}
        wait_until(lambda: ttls_of(store_server.url, job_id) == {}, timeout_s=8, what="the job's keys to expire")
        with pytest.raises(JobNotFound):
            store.get_weights(job_id)
        assert store.get_record(job_id, keys.CONFIG) is None and store.events(job_id) == []


def test_a_job_written_to_for_longer_than_keep_s_keeps_what_it_reads_then_expires_once_idle(store_server):
    job_id = "renew-" + str(time.time_ns())
    with open_store(store_server.url) as store:
        write_every_kind(store, job_id, keep_s=2)
        began = time.monotonic()
        while time.monotonic() - began < 5:  # a running worker's heartbeats, nothing else written
            store.put_record(job_id, keys.heartbeat_name(0), {"at": time.time()}, ttl_s=1)
            time.sleep(0.1)
        assert store.get_record(job_id, keys.CONFIG) == {"keep_s": 2}
        assert store.get_weights(job_id)[1] == 2 and store.read_copy(job_id, keys.LAST_PARAMS_COPY) is not None
        assert store.worker_record(job_id, 0)["state"] == "finished"
        assert outlasting(ttls_of(store_server.url, job_id), 2) == {}
        wait_until(lambda: ttls_of(store_server.url, job_id) == {}, timeout_s=8, what="the job's keys to expire")


def test_a_job_running_longer_than_keep_s_ends_done_with_its_result_readable(store_server):
    # keep_s 3: Memcached's clock ticks in whole seconds, so an item set to live 2 s may be gone after 1
    job_id = create(store_server.url, 3, train_samples=3000, max_epochs=250, target_accuracy=1.0)
    answers = run_worker(store_server.url, job_id)
    assert answers[-1]["state"] == "finished"
    with open_store(store_server.url) as store:
        result = store.get_record(job_id, keys.RESULT)
    assert result["state"] == "done" and result["epochs"] == 250
    assert result["wall_s"] > 3  # it did outlast keep_s


@pytest.mark.parametrize("start", [start_redis, start_memcached], ids=["redis", "memcached"])
def test_a_lost_jobs_worker_writing_after_the_store_restarted_empty_writes_only_expiring_keys(start):
    server = start()
    try:
        job_id = create(server.url, 300, max_epochs=100_000, target_accuracy=1.0, push_codec="f32")
        outcome = {}

        def work() -> None:
            try:
                outcome["answers"] = run_worker(server.url, job_id)
            except StateLost as error:  # what a worker whose job's state is gone ends with
                outcome["error"] = error
        worker = threading.Thread(target=work, daemon=True)
        worker.start()
        with open_store(server.url) as store:
            wait_until(lambda: (store.worker_record(job_id, 0) or {}).get("pushes", 0) > 2, timeout_s=30,
                       what="the worker's pushes")
        port = server.port
        server.stop()
        server = start(port=port)  # empty: the job's state is gone, its worker still running
        worker.join(60)
        assert not worker.is_alive() and "error" in outcome, outcome
        found = ttls_of(server.url, job_id)
        assert keys.record(job_id, keys.LOST) in found, sorted(found)  # written after the restart
        assert found, "the lost job's worker wrote nothing after the restart"
        assert outlasting(found, 300) == {}, found  # none without an expiry
    finally:
        server.stop()
