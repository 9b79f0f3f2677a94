"""emnist-train as a hostile caller meets it: the template's shim (in process) over the real handler, with
a real job already in the function's store (so "nothing written" means the keys did not change, and a
refused call for that job trains nothing). Every row answers its status with a JSON error naming the
field first; the store's keys and the gateway's recorded calls are the same after as before.

Tables: bodies (types, job_id forms, worker and iteration values, store names and locations, unknown keys),
bodies the shim refuses, and methods (only POST trains).
"""

import pytest

from support.hostile import NESTED_ARRAYS, NESTED_OBJECTS, as_json, function_env
from support.shim import load_shim

SHIM = load_shim("emnist-train")
SETUP = load_shim("emnist-setup")


@pytest.fixture
def replica(monkeypatch):
    """The train function's replica, and a 2-worker job `J` made through emnist-setup (its calls taken)."""
    from faasgd.functions import replica_cache

    replica = function_env(monkeypatch, SHIM)
    made = SETUP.client.post("/", data=as_json({"number_of_workers": 2}), content_type="application/json")
    assert made.status_code == 202, made.get_data(as_text=True)
    replica.job_id = made.get_json()["job_id"]
    assert replica.recorded() == 2
    yield replica
    replica_cache.forget()


J = "<the job>"  # stands for the fixture's job id in the table below
BODIES = {
    "null": (None, 400, "body", "must be a JSON object"),
    "array": ([J, 0], 400, "body", "got list"),
    "zero": (0, 400, "body", "got int"),
    "false": (False, 400, "body", "got bool"),
    "empty string": ("", 400, "body", "got str"),
    "empty object": ({}, 400, "job_id", "required string"),
    "no job_id": ({"worker_id": 0}, 400, "job_id", "required string"),
    "job_id empty": ({"job_id": "", "worker_id": 0}, 400, "job_id", "required string"),
    "job_id a number": ({"job_id": 5, "worker_id": 0}, 400, "job_id", "required string"),
    "job_id a list": ({"job_id": [J], "worker_id": 0}, 400, "job_id", "required string"),
    "job_id a path": ({"job_id": "../" + J, "worker_id": 0}, 400, "job_id", "[A-Za-z0-9_.-]"),
    "job_id a colon": ({"job_id": J + ":r:config", "worker_id": 0}, 400, "job_id", "[A-Za-z0-9_.-]"),
    "job_id a glob": ({"job_id": "j*", "worker_id": 0}, 400, "job_id", "[A-Za-z0-9_.-]"),
    "job_id 70 characters": ({"job_id": "j" * 70, "worker_id": 0}, 400, "job_id", "1-64 characters"),
    "job_id unicode": ({"job_id": "ｊ1", "worker_id": 0}, 400, "job_id", "[A-Za-z0-9_.-]"),
    "no such job": ({"job_id": "jmissing", "worker_id": 0}, 404, "job_id", "no job"),
    "no worker_id": ({"job_id": J}, 400, "worker_id", "integer >= 0"),
    "worker -1": ({"job_id": J, "worker_id": -1}, 400, "worker_id", "integer >= 0"),
    "worker a string": ({"job_id": J, "worker_id": "0"}, 400, "worker_id", "integer >= 0"),
    "worker true": ({"job_id": J, "worker_id": True}, 400, "worker_id", "got True"),
    "worker 1.5": ({"job_id": J, "worker_id": 1.5}, 400, "worker_id", "integer >= 0"),
    "worker 1e3": ({"job_id": J, "worker_id": 1e3}, 400, "worker_id", "integer >= 0"),
    "worker null": ({"job_id": J, "worker_id": None}, 400, "worker_id", "integer >= 0"),
    "worker past the job's": ({"job_id": J, "worker_id": 2}, 400, "worker_id", ""),
    "worker 10**30": ({"job_id": J, "worker_id": 10**30}, 400, "worker_id", ""),
    "iteration -1": ({"job_id": J, "worker_id": 0, "iteration": -1}, 400, "iteration", "integer >= 0"),
    "iteration a string": ({"job_id": J, "worker_id": 0, "iteration": "1"}, 400, "iteration", "integer >= 0"),
    "store_url": ({"job_id": J, "worker_id": 0, "store_url": "redis://attacker:6379/0"}, 400, "store_url",
                  "never from a request"),
    "local_store_url": ({"job_id": J, "worker_id": 0, "local_store_url": "memcached://a:11211"}, 400,
                        "local_store_url", "never from a request"),
    "store as a URL": ({"job_id": J, "worker_id": 0, "store": "redis://attacker:6379/0"}, 400, "store",
                       "name of a configured store"),
    "store not configured": ({"job_id": J, "worker_id": 0, "store": "elsewhere"}, 400, "store", "no store named"),
    "store a number": ({"job_id": J, "worker_id": 0, "store": 5}, 400, "store", "got 5"),
    "store where the job is not": ({"job_id": J, "worker_id": 0, "store": "memcached"}, 404, "job_id", "no job"),
    "weights in the body": ({"job_id": J, "worker_id": 0, "weights": [0.0] * 10}, 400, "weights", "unknown key"),
    "a config key": ({"job_id": J, "worker_id": 0, "learning_rate": 100}, 400, "learning_rate", "unknown key"),
    "mode": ({"job_id": J, "worker_id": 0, "mode": "loop"}, 400, "mode", "unknown key"),
}


def with_job(value, job_id):
    if isinstance(value, str):
        return value.replace(J, job_id)
    if isinstance(value, list):
        return [with_job(v, job_id) for v in value]
    if isinstance(value, dict):
        return {k: with_job(v, job_id) for k, v in value.items()}
    return value


@pytest.mark.parametrize("case", list(BODIES))
def test_a_train_body_out_of_bounds_trains_nothing(replica, case):
    body, status, field, words = BODIES[case]
    replica.refuses(status, field, words, body=as_json(with_job(body, replica.job_id)))


RAW_BODIES = {
    "arrays 100k deep": (NESTED_ARRAYS, "nested too deeply"),
    "objects 5000 deep": (NESTED_OBJECTS, "nested too deeply"),
    "invalid JSON": (b'{"job_id": ', "invalid JSON"),
    "invalid UTF-8": (b'{"job_id": "\xff", "worker_id": 0}', "must be encoded as UTF-8"),
    "over max_request_bytes": (b'{"job_id": "' + b"j" * (1 << 20) + b'", "worker_id": 0}', "max_request_bytes"),
}


@pytest.mark.parametrize("case", list(RAW_BODIES))
def test_a_body_the_shim_cannot_take_trains_nothing(replica, case):
    body, words = RAW_BODIES[case]
    status = 413 if "max_request_bytes" in words else 400
    replica.refuses(status, "body", words, body=body)


def test_a_key_given_twice_trains_nothing(replica):
    body = b'{"job_id": "%s", "worker_id": 0, "worker_id": 1}' % replica.job_id.encode()
    replica.refuses(400, "worker_id", "given twice", body=body)


@pytest.mark.parametrize("method", ["GET", "HEAD", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_only_post_trains_and_any_other_method_is_405_with_allow(replica, method):
    body = as_json({"job_id": replica.job_id, "worker_id": 0})
    answer = replica.refuses(405, "method", f"{method} is not served", method=method, body=body)
    assert answer.headers["Allow"] == "POST"
