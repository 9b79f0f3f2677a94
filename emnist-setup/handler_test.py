"""emnist-setup's own tests, run by the template's test stage (`tox` in the image) with the core alone.

No store server exists at build time: an in-process store is served under the function's configured
store URL, and the gateway client is replaced by a recorder of async calls.
"""

import json
import uuid

import pytest

from faasgd.functions import replica_cache
from faasgd.store import open_store

from . import handler

STORE_URL = "redis://store.test:6379/0"
JOB = {"dataset": "synthetic", "train_samples": "400", "test_samples": "200", "validation_samples": "100", "hidden_sizes": "8",
       "batch_size": "50", "max_epochs": "2", "target_accuracy": "1.0"}


class Event:
    def __init__(self, method="POST", body=None, query=None, headers=None):
        self.method, self.path, self.query = method, "/", dict(query or {})
        self.body = b"" if body is None else json.dumps(body).encode()
        self.headers = dict(headers or {})

    def json(self):
        return json.loads(self.body) if self.body.strip() else {}


class Recorder:
    def __init__(self):
        self.calls = []

    def invoke_async(self, function, payload=None, callback_url=None, headers=None):
        self.calls.append((function, payload, callback_url))
        return f"call-{len(self.calls)}"


@pytest.fixture
def store(monkeypatch):
    for key, value in {**JOB, "store_url": STORE_URL}.items():
        monkeypatch.setenv(key, value)
    store = open_store(f"memory://setup{uuid.uuid4().hex[:8]}")
    replica_cache.keep_store(STORE_URL, store)
    yield store
    replica_cache.forget()


def test_a_job_fans_out_one_async_call_per_worker(store, monkeypatch):
    gateway = Recorder()
    monkeypatch.setattr(replica_cache, "gateway_for", lambda url: gateway)
    answer = handler.handle(Event(body={"number_of_workers": 3}, headers={"X-Callback-Url": "http://cb/"}), None)
    assert answer["statusCode"] == 202
    job_id = answer["body"]["job_id"]
    assert [(f, p["worker_id"], cb) for f, p, cb in gateway.calls] == [("emnist-train", i, "http://cb/") for i in range(3)]
    status = handler.handle(Event("GET", query={"job_id": job_id}), None)
    assert status["statusCode"] == 200 and status["body"]["state"] == "running"


def test_without_a_callback_of_its_own_each_call_reports_its_end_to_emnist_setup(store, monkeypatch):
    gateway = Recorder()
    monkeypatch.setattr(replica_cache, "gateway_for", lambda url: gateway)
    job_id = handler.handle(Event(body={"number_of_workers": 2}), None)["body"]["job_id"]
    assert [cb.split("/function/")[1] for _, _, cb in gateway.calls] == \
        [f"emnist-setup?job_id={job_id}&worker={w}&delivery=1" for w in range(2)]
    report = Event(query={"job_id": job_id, "worker": "1", "delivery": "1"}, headers={"X-Function-Status": "200"})
    answer = handler.handle(report, None)
    assert answer["statusCode"] == 200 and answer["body"]["noted"] is False  # answered: nothing to act on


def test_single_mode_trains_a_whole_job_in_the_call(store):
    answer = handler.handle(Event(body={"invocation_mode": "single"}), None)
    assert answer["statusCode"] == 200
    result = answer["body"]["result"]
    assert result["state"] == "done" and result["samples"] == 2 * (400 - 100)  # two epochs over the rows not held out for validation


@pytest.mark.parametrize("body, field", [({"batchsize": 3}, "batchsize"), ({"number_of_workers": 0}, "number_of_workers"),
                                         ([1, 2], "body")])
def test_bad_input_is_a_400_naming_the_field_and_writes_nothing(store, body, field):
    with pytest.raises(Exception) as info:
        handler.handle(Event(body=body), None)
    assert info.value.http_status == 400 and info.value.field == field
    assert store.client._values == {}


def test_status_of_an_unknown_job_is_a_404(store):
    with pytest.raises(Exception) as info:
        handler.handle(Event("GET", query={"job_id": "jnothere"}), None)
    assert info.value.http_status == 404
