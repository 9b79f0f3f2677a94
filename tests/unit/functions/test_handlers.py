"""emnist-setup and emnist-train handlers called directly with events, over the memory:// store."""

import uuid

import pytest

from faasgd.errors import ConfigError, GatewayError, JobNotFound
from faasgd.functions import replica_cache
from faasgd.openfaas import GatewayClient
from faasgd.store import open_store
from support.fake_gateway import FakeGateway
from support.handlers import BadJson, FakeEvent, deliver, load_handler

setup_handler = load_handler("emnist-setup")
train_handler = load_handler("emnist-train")


@pytest.fixture
def env(monkeypatch):
    url = f"memory://h{uuid.uuid4().hex[:10]}"
    values = {
        "store_url": url, "dataset": "synthetic", "train_samples": "1200", "test_samples": "400",
        "hidden_sizes": "16", "batch_size": "40", "max_epochs": "3", "target_accuracy": "1.0",
        "number_of_workers": "2", "gateway_url": "http://127.0.0.1:9",
    }
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    replica_cache.keep_store(url, open_store(url))  # the function's store, in process (no function opens memory://)
    gateway = FakeGateway().install(monkeypatch)
    yield {"url": url, "gateway": gateway}
    replica_cache.forget()


def start(body=None, headers=None):
    answer = setup_handler.handle(FakeEvent("POST", body or {}, headers), None)
    return answer["statusCode"], answer["body"]


def status(job_id):
    answer = setup_handler.handle(FakeEvent("GET", b"", query={"job_id": job_id}), None)
    assert answer["statusCode"] == 200
    return answer["body"]


def space_keys(url):
    return list(open_store(url).client._values)


def test_setup_fans_out_one_async_call_per_worker_and_passes_the_callback(env):
    code, body = start({"number_of_workers": 3}, {"X-Callback-Url": "http://127.0.0.1:1/cb"})
    assert code == 202
    assert body["number_of_workers"] == 3 and body["invocation_mode"] == "loop" and body["job_id"]
    calls = env["gateway"].take()
    assert [c.function for c in calls] == ["emnist-train"] * 3
    assert sorted(c.payload["worker_id"] for c in calls) == [0, 1, 2]  # launched at once, in any order
    assert all(c.payload["job_id"] == body["job_id"] and c.payload["iteration"] == 0 for c in calls)
    assert all(c.headers["x-callback-url"] == "http://127.0.0.1:1/cb" for c in calls)
    assert body["call_ids"] == [c.call_id for c in sorted(calls, key=lambda c: c.payload["worker_id"])]
    assert status(body["job_id"])["state"] == "running"


def test_loop_mode_trains_to_the_stop_rule_and_a_duplicate_trains_nothing(env):
    _, body = start()
    calls = env["gateway"].take()
    for call in calls:
        code, answer = deliver(train_handler, call)
        assert code == 200 and answer["duplicate"] is False and answer["state"] == "finished"
    done = status(body["job_id"])
    assert done["state"] == "done" and done["result"]["state"] == "done"
    samples = done["result"]["samples"]
    assert samples == 3 * 1080  # 3 epochs over 2 shards of 540: 120 of the 1200 rows are held out to validate
    code, answer = deliver(train_handler, calls[0])  # redelivered by the queue
    assert code == 200 and answer["duplicate"] is True
    assert status(body["job_id"])["result"]["samples"] == samples


def test_per_iteration_chains_one_epoch_per_invocation_and_ignores_duplicates(env):
    _, body = start({"invocation_mode": "per-iteration"})
    gateway, trained, duplicates = env["gateway"], {0: 0, 1: 0}, 0
    pending = gateway.take()
    while pending:
        call = pending.pop(0)
        code, answer = deliver(train_handler, call)
        assert code == 200
        if answer["duplicate"]:
            duplicates += 1
            continue
        trained[answer["worker_id"]] += 1
        again_code, again = deliver(train_handler, call)  # at-least-once: the same call twice
        assert again_code == 200 and again["duplicate"] is True
        pending += gateway.take()
    final = status(body["job_id"])
    assert final["state"] == "done"
    assert trained == {0: 3, 1: 3}
    assert [w["epoch"] for w in final["workers"]] == [3, 3]
    assert final["result"]["samples"] == 3 * 1080  # 1200 rows less 120 held out
    store = open_store(env["url"])
    assert store.worker_record(body["job_id"], 0)["epoch"] == 3  # the record is the checkpoint


def test_single_mode_trains_inside_setup(env):
    code, body = start({"invocation_mode": "single", "max_epochs": 2})
    assert code == 200 and env["gateway"].take() == []
    assert body["number_of_workers"] == 1
    assert body["result"]["state"] == "done" and body["result"]["samples"] == 2 * 1080


@pytest.mark.parametrize("body, field", [
    ({"batchsize": 3}, "batchsize"),
    ({"number_of_workers": 0}, "number_of_workers"),
    ({"learning_rate": -1}, "learning_rate"),
    ({"store_url": "ftp://x"}, "store_url"),
    ({"mode": "loop"}, "mode"),
    (["not", "an", "object"], "body"),
])
def test_bad_setup_input_names_the_field_and_writes_nothing(env, body, field):
    with pytest.raises(ConfigError) as info:
        start(body)
    assert info.value.field == field and info.value.http_status == 400
    assert space_keys(env["url"]) == [] and env["gateway"].take() == []


def test_bad_json_is_a_400_on_body(env):
    with pytest.raises(BadJson) as info:
        setup_handler.handle(FakeEvent("POST", b"{not json"), None)
    assert info.value.field == "body" and info.value.http_status == 400


def test_status_needs_a_known_job(env):
    with pytest.raises(ConfigError) as info:
        setup_handler.handle(FakeEvent("GET", b"", query={}), None)
    assert info.value.field == "job_id"
    with pytest.raises(JobNotFound) as missing:
        status("jnope")
    assert missing.value.http_status == 404


@pytest.mark.parametrize("payload, field", [
    ({"worker_id": 0}, "job_id"),
    ({"job_id": "j1", "worker_id": -1}, "worker_id"),
    ({"job_id": "j1", "worker_id": "0"}, "worker_id"),
    ({"job_id": "j1", "worker_id": 0, "weights": []}, "weights"),
])
def test_bad_train_request_names_the_field(env, payload, field):
    with pytest.raises(ConfigError) as info:
        train_handler.handle(FakeEvent("POST", payload), None)
    assert info.value.field == field


def test_train_for_an_unknown_job_or_worker(env):
    with pytest.raises(JobNotFound):
        train_handler.handle(FakeEvent("POST", {"job_id": "jmissing", "worker_id": 0}), None)
    _, body = start()
    env["gateway"].take()
    with pytest.raises(ConfigError) as info:
        train_handler.handle(FakeEvent("POST", {"job_id": body["job_id"], "worker_id": 2}), None)
    assert info.value.field == "worker_id"


def test_fan_out_failure_records_a_failed_job(env, monkeypatch):
    FakeGateway(fail_after=1).install(monkeypatch)  # the second async call finds the gateway gone
    with pytest.raises(GatewayError) as info:
        start()
    assert info.value.http_status == 502
    job_ids = {k.split(":")[1] for k in space_keys(env["url"])}
    (job_id,) = job_ids
    final = status(job_id)
    assert final["state"] == "failed" and "after 1 of 2 workers" in final["result"]["error"]


def test_any_error_stopping_the_fan_out_records_a_failed_job_naming_it(env, monkeypatch):
    FakeGateway().install(monkeypatch)
    real, made = GatewayClient.invoke_async, []

    def second_call_breaks(self, function, payload=None, callback_url=None, headers=None):
        made.append(function)
        if payload["worker_id"] == 1:
            raise MemoryError("cannot allocate the call's body")
        return real(self, function, payload, callback_url, headers)

    monkeypatch.setattr(GatewayClient, "invoke_async", second_call_breaks)
    with pytest.raises(MemoryError):
        start()
    (job_id,) = {k.split(":")[1] for k in space_keys(env["url"])}
    final = status(job_id)
    assert final["state"] == "failed"
    assert final["result"]["error"] == "fan-out stopped after 1 of 2 workers: MemoryError: cannot allocate the call's body"


def test_a_replica_lets_a_jobs_data_go_when_its_worker_ends(env):
    _, body = start({"number_of_workers": 1})
    (call,) = env["gateway"].take()
    assert deliver(train_handler, call)[1]["state"] == "finished"
    assert replica_cache.load_shard.cache_info().currsize == 0  # nothing kept for a job that has ended
