"""emnist-train's own tests, run by the template's test stage (`tox` in the image) with the core alone.

No store server exists at build time: an in-process store is served under the function's configured
store URL; the job is created with the core as emnist-setup would create it.
"""

import json
import uuid

import pytest

from faasgd.config import load_config
from faasgd.functions import orchestrate, replica_cache
from faasgd.store import open_store

from . import handler

STORE_URL = "redis://store.test:6379/0"


class Event:
    def __init__(self, body, call_id="call-1"):
        self.method, self.path, self.query = "POST", "/", {}
        self.body = json.dumps(body).encode()
        self.headers = {"X-Call-Id": call_id}

    def json(self):
        return json.loads(self.body)


@pytest.fixture
def job(monkeypatch):
    monkeypatch.setenv("store_url", STORE_URL)
    store = open_store(f"memory://train{uuid.uuid4().hex[:8]}")
    replica_cache.keep_store(STORE_URL, store)
    config = load_config({}, {"dataset": "synthetic", "train_samples": 400, "test_samples": 200, "validation_samples": 100, "hidden_sizes": [8],
                              "batch_size": 50, "max_epochs": 2, "target_accuracy": 1.0, "number_of_workers": 1,
                              "store_url": STORE_URL})
    yield store, orchestrate.create_job(store, config)
    replica_cache.forget()


def test_a_worker_trains_to_the_stop_rule_and_a_redelivery_trains_nothing(job):
    store, job_id = job
    answer = handler.handle(Event({"job_id": job_id, "worker_id": 0}), None)
    assert answer["statusCode"] == 200 and answer["body"]["duplicate"] is False
    assert answer["body"]["state"] == "finished"
    assert store.get_record(job_id, "result")["samples"] == 2 * (400 - 100)
    again = handler.handle(Event({"job_id": job_id, "worker_id": 0}, call_id="call-2"), None)
    assert again["body"]["duplicate"] is True
    assert store.get_record(job_id, "result")["samples"] == 2 * (400 - 100)


@pytest.mark.parametrize("body, field", [({"worker_id": 0}, "job_id"), ({"job_id": "j", "worker_id": -1}, "worker_id"),
                                         ({"job_id": "j", "worker_id": 0, "weights": []}, "weights")])
def test_bad_bodies_are_a_400_naming_the_field(job, body, field):
    with pytest.raises(Exception) as info:
        handler.handle(Event(body), None)
    assert info.value.http_status == 400 and info.value.field == field


def test_a_worker_beyond_the_job_is_a_400(job):
    _, job_id = job
    with pytest.raises(Exception) as info:
        handler.handle(Event({"job_id": job_id, "worker_id": 1}), None)
    assert info.value.field == "worker_id"
