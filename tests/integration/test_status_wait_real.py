"""emnist-setup's `wait` on each real store: a running job's status read is answered as its result is written, and
a read whose seconds run out answers the status as of then (its workers' records written meanwhile)."""

import threading
import time

from faasgd import job
from faasgd.config import load_config
from faasgd.functions import emnist_setup, replica_cache
from faasgd.job import ending
from faasgd.store import open_store


def running_job(url: str, monkeypatch):
    store = open_store(url)
    replica_cache.keep_store(url, store)
    monkeypatch.setattr(emnist_setup.BESIDE, "look_after", lambda job_id, look: None)  # no supervision here
    config = load_config({}, {"dataset": "synthetic", "train_samples": 600, "store_url": url})
    return store, job.create_job(store, config), {"store_url": url, "gateway_url": "http://127.0.0.1:9"}


def test_a_waiting_status_read_answers_as_the_result_is_written(store_server, monkeypatch):
    store, job_id, env = running_job(store_server.url, monkeypatch)
    try:
        ender = threading.Timer(0.3, lambda: ending.write_result(store, job_id, error="ended by the test"))
        ender.start()
        began = time.monotonic()
        status = emnist_setup.job_status({"job_id": job_id, "wait": "8"}, env)[1]
        took = time.monotonic() - began
        ender.join()
        assert status["state"] == "failed" and status["result"]["error"] == "ended by the test"
        assert 0.25 < took < 4  # at the end, long before the 8 s asked
    finally:
        replica_cache.forget()


def test_a_waiting_read_whose_seconds_run_out_answers_the_status_as_of_then(store_server, monkeypatch):
    store, job_id, env = running_job(store_server.url, monkeypatch)
    try:
        record = {"worker_id": 0, "epoch": 1, "state": "running", "samples": 640}
        threading.Timer(0.1, lambda: store.update_worker(job_id, 0, record)).start()
        status = emnist_setup.job_status({"job_id": job_id, "wait": "0.4"}, env)[1]
        assert status["state"] == "running" and status["workers"][0]["samples"] == 640
    finally:
        replica_cache.forget()
