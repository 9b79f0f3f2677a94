"""emnist-setup's fan-out keeps FAN_OUT_IN_FLIGHT async calls in flight at once (each waits a round trip to the
gateway and its queue's broker: one at a time, a 1,024-worker job waited for 1,024 in a row), launches every worker
exactly once, answers their call ids in worker order, and after a failing call launches no more and fails the job
naming how many were launched. The gateway is the tests' one stand-in (support.fake_gateway), over the memory store."""

import threading
import uuid

import pytest

from faasgd.functions import orchestrate, replica_cache
from faasgd.openfaas import GatewayClient
from faasgd.store import open_store
from support.fake_gateway import FakeGateway
from support.handlers import FakeEvent, load_handler

setup_handler = load_handler("emnist-setup")
IN_FLIGHT = orchestrate.FAN_OUT_IN_FLIGHT


@pytest.fixture
def env(monkeypatch):
    url = f"memory://f{uuid.uuid4().hex[:10]}"
    values = {"store_url": url, "dataset": "synthetic", "train_samples": "4096", "test_samples": "200",
              "hidden_sizes": "8", "batch_size": "2", "max_epochs": "1", "invocation_mode": "per-iteration",
              "gateway_url": "http://127.0.0.1:9"}
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    replica_cache.keep_store(url, open_store(url))
    gateway = FakeGateway().install(monkeypatch)
    yield {"url": url, "gateway": gateway}
    replica_cache.forget()


def start(workers: int):
    answer = setup_handler.handle(FakeEvent("POST", {"number_of_workers": workers}), None)
    return answer["statusCode"], answer["body"]


def test_the_fan_out_has_its_calls_in_flight_at_once(env, monkeypatch):
    together = threading.Barrier(IN_FLIGHT, timeout=10)  # passes only when IN_FLIGHT calls wait in it at once
    real = GatewayClient.invoke_async

    def meets_the_others(self, function, payload=None, callback_url=None, headers=None):
        if payload["worker_id"] < IN_FLIGHT:  # the first IN_FLIGHT calls are all open before any answers
            together.wait()
        return real(self, function, payload, callback_url, headers)

    monkeypatch.setattr(GatewayClient, "invoke_async", meets_the_others)
    code, body = start(IN_FLIGHT * 4)
    assert code == 202, body
    assert len(env["gateway"].take()) == IN_FLIGHT * 4


def test_1024_workers_are_each_launched_exactly_once_and_answered_in_worker_order(env):
    code, body = start(1024)
    assert code == 202, body
    calls = env["gateway"].take()
    assert sorted(call.payload["worker_id"] for call in calls) == list(range(1024))
    by_worker = {call.payload["worker_id"]: call.call_id for call in calls}
    assert body["call_ids"] == [by_worker[worker_id] for worker_id in range(1024)]
    assert all(call.payload["job_id"] == body["job_id"] for call in calls)


def test_a_failing_call_stops_the_fan_out_and_fails_the_job_naming_how_many_were_launched(env, monkeypatch):
    real, started = GatewayClient.invoke_async, []
    lock = threading.Lock()

    def worker_40_breaks(self, function, payload=None, callback_url=None, headers=None):
        with lock:
            started.append(payload["worker_id"])
        if payload["worker_id"] == 40:
            raise MemoryError("cannot allocate the call's body")
        return real(self, function, payload, callback_url, headers)

    monkeypatch.setattr(GatewayClient, "invoke_async", worker_40_breaks)
    with pytest.raises(MemoryError):
        start(1024)
    launched = env["gateway"].take()
    assert len(started) <= 40 + IN_FLIGHT  # no call starts after the failure; those under way end
    assert len(set(started)) == len(started) and len(launched) == len(started) - 1
    (job_id,) = {key.split(":")[1] for key in open_store(env["url"]).client._values}
    final = setup_handler.handle(FakeEvent("GET", b"", query={"job_id": job_id}), None)["body"]
    assert final["state"] == "failed"
    assert final["result"]["error"] == (f"fan-out stopped after {len(launched)} of 1024 workers: "
                                        f"MemoryError: cannot allocate the call's body")


def test_each_at_most_once_calls_in_order_one_at_a_time_when_asked():
    seen, done = [], {}
    orchestrate.each_at_most_once(5, 1, done, lambda i: seen.append(i) or f"c{i}")
    assert seen == [0, 1, 2, 3, 4] and done == {i: f"c{i}" for i in range(5)}
