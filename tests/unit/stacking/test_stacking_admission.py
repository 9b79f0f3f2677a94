"""Stacking jobs are admitted against the function's memory limit before anything is written or allocated, and
any exception escaping a job (MemoryError included) ends it failed with the reason (faasgd.stacking.admission,
flow.drive)."""

from __future__ import annotations

import tracemalloc
import uuid

import pytest
from support.handlers import FakeEvent, load_handler
from support.stacking_drive import SMALL, in_process

from faasgd.errors import ConfigError, TooLarge
from faasgd.functions import replica_cache
from faasgd.stacking import admission, flow, records
from faasgd.stacking.config import load_stacking
from faasgd.store import open_store

STORE_URL = "redis://store.test:6379/0"
HUGE = {"n_samples": 100_000, "n_features": 100_000}


@pytest.fixture
def store(monkeypatch):
    monkeypatch.setenv("store_url", STORE_URL)
    monkeypatch.setenv("stores", "")
    monkeypatch.setenv("memory_limit", "1Gi")
    store = open_store(f"memory://admission{uuid.uuid4().hex[:8]}")
    replica_cache.keep_store(STORE_URL, store)
    yield store
    replica_cache.forget()


def test_a_dataset_past_the_memory_limit_is_a_413_naming_the_field_with_nothing_written_or_allocated(store):
    tracemalloc.start()
    try:
        with pytest.raises(TooLarge) as info:
            load_handler("stacking-driver").handle(FakeEvent("POST", HUGE), None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.http_status == 413 and info.value.field == "n_samples"
    assert "memory_limit=1Gi" in str(info.value) and "100,000 x 100,000" in str(info.value)
    assert peak < 16 << 20, f"{peak / (1 << 20):.1f} MiB allocated while refusing"  # not the 74.5 GiB dataset
    assert store.client._values == {}


@pytest.mark.parametrize("sizes, field", [({"n_samples": 100_000, "n_features": 400}, "n_samples"),
                                          ({"n_samples": 2_000, "n_features": 20_000}, "n_features")])
def test_the_larger_size_is_named_and_a_larger_limit_admits_the_same_job(sizes, field):
    config = load_stacking({}, sizes)
    with pytest.raises(TooLarge) as info:
        admission.check(config, {"memory_limit": "1Gi"})
    assert info.value.field == field
    assert admission.check(config, {"memory_limit": "8Gi"})["call_bytes"] == admission.needs(config)


def test_without_a_memory_limit_the_stacking_functions_default_applies():
    with pytest.raises(TooLarge, match=f"memory_limit={admission.DEFAULT_MEMORY_LIMIT}"):
        admission.check(load_stacking(None, HUGE))
    assert admission.check(load_stacking(None, {}))["call_bytes"] < 1 << 30  # vSwarm's 300 x 1024 fits


def test_a_bad_memory_limit_names_the_setting():
    with pytest.raises(ConfigError) as info:
        admission.check(load_stacking(None, {}), {"memory_limit": "lots"})
    assert info.value.field == "memory_limit"


@pytest.mark.parametrize("error", [MemoryError(), KeyError("models"), ZeroDivisionError("division by zero")])
def test_any_exception_escaping_a_job_fails_it_with_the_reason(error):
    store = open_store(f"memory://ends{uuid.uuid4().hex[:8]}")
    config = load_stacking({}, {**SMALL, "trainers_num": 2})
    job_id = records.create_job(store, config)
    calls = in_process(store, job_id, config)

    def failing(function, body):
        if function == flow.REDUCER:
            raise error
        return calls(function, body)

    with pytest.raises(type(error)):
        flow.drive(store, job_id, config, failing, sleep=lambda s: None)
    status = records.read_status(store, job_id)
    assert status["state"] == "failed" and status["error"].startswith(type(error).__name__)
    assert status["phase"] == "reduce"
