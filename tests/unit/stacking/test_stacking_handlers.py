"""The four stacking handlers as the template calls them: methods, hostile bodies, status, the store by name."""

from __future__ import annotations

import uuid

import pytest

from faasgd.errors import ConfigError, JobNotFound, MethodNotAllowed
from faasgd.functions import replica_cache
from faasgd.stacking import records
from faasgd.stacking.config import load_stacking
from faasgd.stacking.safe_format import UnsafeObject
from faasgd.store import open_store
from support.handlers import FakeEvent, load_handler

STORE_URL = "redis://store.test:6379/0"


@pytest.fixture
def store(monkeypatch):
    monkeypatch.setenv("store_url", STORE_URL)
    monkeypatch.setenv("stores", "")
    store = open_store(f"memory://stacking{uuid.uuid4().hex[:8]}")
    replica_cache.keep_store(STORE_URL, store)
    yield store
    replica_cache.forget()


@pytest.mark.parametrize("function", ["stacking-driver", "stacking-trainer", "stacking-reducer", "stacking-metatrainer"])
def test_only_the_served_methods(store, function):
    with pytest.raises(MethodNotAllowed):
        load_handler(function).handle(FakeEvent("PUT", {}), None)


@pytest.mark.parametrize("body, field", [({"transfer": "s3"}, "transfer"), ({"store_url": "redis://x:1/0"}, "store_url"),
                                         ({"store": "elsewhere"}, "store"), ({"trainers": 2}, "trainers"),
                                         ({"keep_s": 0}, "keep_s"), ({"keep_s": 31 * 86400}, "keep_s")])
def test_the_driver_refuses_bad_bodies_and_writes_nothing(store, body, field):
    with pytest.raises(ConfigError) as info:
        load_handler("stacking-driver").handle(FakeEvent("POST", body), None)
    assert info.value.field == field and store.client._values == {}


def test_the_driver_answers_a_jobs_status_and_404_for_an_unknown_one(store):
    job_id = records.create_job(store, load_stacking({}, {}))
    answer = load_handler("stacking-driver").handle(FakeEvent("GET", query={"job_id": job_id}), None)
    assert answer["statusCode"] == 200 and answer["body"]["state"] == "running"
    with pytest.raises(JobNotFound):
        load_handler("stacking-driver").handle(FakeEvent("GET", query={"job_id": "snothere"}), None)
    with pytest.raises(ConfigError) as info:
        load_handler("stacking-driver").handle(FakeEvent("GET", query={"job_id": job_id, "x": "1"}), None)
    assert info.value.field == "x"


@pytest.mark.parametrize("body, field", [
    ({"job_id": "J", "trainer_id": 9, "dataset": "dataset"}, "trainer_id"),
    ({"job_id": "J", "trainer_id": 0, "config": {}}, "config"),  # a job's config comes from its record only
    ({"job_id": "J", "trainer_id": 0, "dataset": "faasgd:other:b:x"}, "dataset"),  # store: only the job's own name
])
def test_a_trainer_refuses_bad_calls(store, body, field):
    job_id = records.create_job(store, load_stacking({}, {"transfer": "store"}))
    body = {**body, "job_id": job_id}
    with pytest.raises(ConfigError) as info:
        load_handler("stacking-trainer").handle(FakeEvent("POST", body), None)
    assert info.value.field == field


def test_an_inline_object_that_is_not_base64_is_refused(store):
    job_id = records.create_job(store, load_stacking({}, {"transfer": "inline"}))
    with pytest.raises(UnsafeObject, match="not base64"):
        load_handler("stacking-trainer").handle(FakeEvent("POST", {"job_id": job_id, "trainer_id": 0,
                                                                   "dataset": "gASV***"}), None)
