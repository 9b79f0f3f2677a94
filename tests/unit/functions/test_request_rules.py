"""What a request may ask of the functions: stores by name only, sizes within the function's limits, a sane
callback, and nothing written when it may not. In process, on memory stores installed as the function's."""

import uuid

import pytest

from faasgd.config import load_request
from faasgd.errors import ConfigError, TooLarge
from faasgd.functions import admission, replica_cache
from faasgd.functions.emnist_setup import job_status, start_job
from faasgd.functions.emnist_train import train
from faasgd.functions.settings import FunctionEnv
from faasgd.store import open_store
from support.fake_gateway import FakeGateway

SMALL = {"dataset": "synthetic", "train_samples": "600", "test_samples": "100", "hidden_sizes": "8",
         "batch_size": "50", "max_epochs": "1", "target_accuracy": "1.0"}


@pytest.fixture
def env(monkeypatch):
    """The function's environment: its own store, and a second one it names `memcached` (both in process)."""
    own, other = (f"memory://rules{uuid.uuid4().hex[:8]}" for _ in range(2))
    for url in (own, other):
        replica_cache.keep_store(url, open_store(url))
    FakeGateway().install(monkeypatch)
    yield {**SMALL, "store_url": own, "stores": f"memcached={other}", "gateway_url": "http://gw.test:8080",
           "memory_limit": "1Gi", "store_budget": "64Mi", "_own": own, "_other": other}
    replica_cache.forget()


def keys_in(url):
    return list(open_store(url).client._values)


@pytest.mark.parametrize("key", ["store_url", "local_store_url"])
def test_a_request_never_gives_a_store_location_and_nothing_is_written(env, key):
    with pytest.raises(ConfigError) as error:
        start_job({key: "redis://attacker.example:6379/0"}, env)
    assert error.value.field == key and "never from a request" in str(error.value)
    assert keys_in(env["_own"]) == []
    with pytest.raises(ConfigError) as error:
        train({"job_id": "j1", "worker_id": 0, key: "redis://attacker.example:6379/0"}, env)
    assert error.value.field == key


def test_a_request_names_a_configured_store_and_the_job_lives_there(env):
    code, answer = start_job({"store": "memcached"}, env)
    assert code == 202 and answer["store"] == "memcached" and answer["status_query"]["store"] == "memcached"
    assert keys_in(env["_own"]) == [] and keys_in(env["_other"])
    assert job_status(answer["status_query"], env)[1]["state"] == "running"
    with pytest.raises(ConfigError) as error:
        start_job({"store": "elsewhere"}, env)
    assert error.value.field == "store" and "configured: default, memcached" in str(error.value)
    with pytest.raises(ConfigError) as error:
        job_status({"job_id": answer["job_id"], "store_url": "redis://h:1/0"}, env)
    assert error.value.field == "store_url"


def test_records_and_answers_show_no_password():
    config = load_request({"store_url": "redis://:hunter2@redis:6379/0"}, {})
    assert config.store_url == "redis://:hunter2@redis:6379/0"  # the function's own configuration holds it
    assert config.to_dict()["store_url"] == "redis://:***@redis:6379/0"  # records and answers never do


def test_memory_stores_are_never_opened_for_a_request(env):
    env = {**env, "store_url": "memory://not-installed"}
    with pytest.raises(ConfigError) as error:
        start_job({}, env)
    assert error.value.field == "store_url" and "memory://" in str(error.value)


@pytest.mark.parametrize("body, field, status", [
    ({"train_samples": "5000000", "number_of_workers": "1"}, "number_of_workers", 413),  # a 14 GiB shard
    ({"hidden_sizes": "8000,8000"}, "hidden_sizes", 413),  # 64 M parameters
    ({"batch_size": "60000", "hidden_sizes": "4000", "train_samples": "60000"}, "batch_size", 413),
    ({"number_of_workers": "601"}, "number_of_workers", 400),  # more workers than rows
])
def test_a_job_too_large_for_the_function_is_refused_before_anything_is_written(env, body, field, status):
    with pytest.raises(ConfigError) as error:
        start_job(body, env)
    assert (error.value.field, error.value.http_status) == (field, status), str(error.value)
    assert keys_in(env["_own"]) == []


def test_the_store_budget_counts_memcached_push_copies():
    config = load_request({**SMALL, "hidden_sizes": "1000", "number_of_workers": "8"}, {})
    redis = admission.check_job(config, {"store_budget": "64Mi"}, "redis")
    with pytest.raises(TooLarge) as error:
        admission.check_job(config, {"store_budget": "20Mi"}, "memcached")  # 9 copies of 3.2 MB
    assert redis["store_bytes"] * 9 > 20 << 20 and "store_budget=20Mi" in str(error.value)


def test_a_loop_job_with_more_workers_than_run_at_once_is_refused_before_anything_is_written(env):
    slots = {**env, "worker_slots": "3"}
    with pytest.raises(ConfigError) as error:
        start_job({"number_of_workers": "4"}, slots)
    assert (error.value.field, error.value.http_status) == ("number_of_workers", 400)
    assert "at most 3 run at once" in str(error.value) and keys_in(env["_own"]) == []
    status, answer = start_job({"number_of_workers": "3"}, slots)  # up to the bound: accepted
    per_iteration = load_request({**SMALL, "number_of_workers": "4", "invocation_mode": "per-iteration"}, {})
    admission.check_job(per_iteration, slots, "redis")  # epochs take turns: not refused
    assert status == 202 and answer["number_of_workers"] == 3
    with pytest.raises(ConfigError) as error:
        admission.check_job(per_iteration, {"worker_slots": "many"}, "redis")
    assert error.value.field == "worker_slots"


@pytest.mark.parametrize("text, size", [("1Gi", 1 << 30), ("512Mi", 512 << 20), ("2G", 2 * 10 ** 9), ("100", 100)])
def test_quantities_read_as_kubernetes_writes_them(text, size):
    assert admission.quantity("memory_limit", text) == size


@pytest.mark.parametrize("callback", ["ftp://x/", "http://", "javascript:alert(1)", "http://h/a\r\nX-Evil: 1",
                                      "http://h/" + "a" * 3000])
def test_a_bad_callback_url_is_refused_before_any_job_is_made(env, callback):
    with pytest.raises(ConfigError) as error:
        start_job({}, env, callback_url=callback)
    assert error.value.field == "X-Callback-Url"
    assert keys_in(env["_own"]) == []


@pytest.mark.parametrize("body", [None, [], 0, False, "", "null"])
def test_a_body_that_is_not_an_object_starts_nothing(env, body):
    with pytest.raises(ConfigError) as error:
        start_job(body, env)
    assert error.value.field == "body"
    assert keys_in(env["_own"]) == []


def test_named_stores_are_checked_where_they_are_configured():
    with pytest.raises(ConfigError) as error:
        FunctionEnv.read({"stores": "redis"})
    assert error.value.field == "stores"
    with pytest.raises(ConfigError) as error:
        FunctionEnv.read({"stores": "r=ftp://x"})
    assert error.value.field == "stores" and "ftp" in str(error.value)
