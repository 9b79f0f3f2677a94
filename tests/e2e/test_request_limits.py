"""Every door of a real `faasgd up` has a budget (docs/reference/limits.md): the gateway answers a URL, headers
or a body past its limits, and a body that stops coming, with its 4xx as JSON in time; emnist-setup starts no job
from an empty body, a query string or a UTF-16 body; stacking-driver refuses a dataset no call could hold; and
`faasgd train --dry-run` refuses a network the workers could not hold. After each, no key was written and every
process of the runtime is alive with its replicas never restarted.
"""

import time

import pytest

from support.hostile_runtime import faasgd, raw, request, runtime_up

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120), pytest.mark.usefixtures("nothing_written_nothing_died")]
SETUP, DRIVER = "/function/emnist-setup", "/function/stacking-driver"
JSON = {"Content-Type": "application/json"}
IDLE_S = 10.0  # the gateway's body_idle_timeout_s


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    with runtime_up(tmp_path_factory.mktemp("request-limits") / ".faasgd") as runtime:
        assert runtime.keys() == 0
        yield runtime


def head(path: str, headers: dict[str, str]) -> bytes:
    return (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
            + "\r\n").encode("latin-1")


HEADS = {  # (request, status, words)
    "a 100,000-character job id": (head(f"{SETUP}?job_id=j" + "0" * 100_000, {}), 414, "URL"),
    "200 header fields": (head(f"{SETUP}?job_id=jmissing", {f"X-H{i}": "v" for i in range(200)}), 431, "header"),
    "one 70 KB header": (head(f"{SETUP}?job_id=jmissing", {"X-Big": "v" * 70_000}), 431, "header"),
}


@pytest.mark.parametrize("case", list(HEADS))
def test_a_url_or_headers_past_their_limits_are_a_414_or_431(runtime, case):
    data, status, words = HEADS[case]
    answer = raw(runtime.port, data)
    assert answer.status == status and words in answer.json()["error"], (answer.status, answer.body[:300])


def test_a_100_gb_content_length_is_a_413_at_once(runtime):
    started = time.monotonic()
    answer = raw(runtime.port, request("POST", SETUP, b"{}", {**JSON, "Content-Length": str(100 << 30)}))
    assert answer.status == 413 and "nothing was read" in answer.json()["error"], answer.body[:300]
    assert time.monotonic() - started < IDLE_S / 2


def test_a_body_cut_short_is_a_408_not_silence(runtime):
    started = time.monotonic()
    answer = raw(runtime.port, request("POST", SETUP, b'{"number_of_workers": 1', {**JSON, "Content-Length": "100"}),
                 timeout_s=IDLE_S + 20)
    assert answer.status == 408 and "no byte came" in answer.json()["error"], answer.body[:300]
    assert IDLE_S <= time.monotonic() - started < IDLE_S + 15


BODIES = {  # (path with query, body, status, field, words)
    "an empty POST with a status query": (f"{SETUP}?job_id=j0123456789abcde&model=npz", b"", 400, "job_id",
                                          "never by a POST"),
    "an empty POST": (SETUP, b"", 400, "body", "send {} for every default"),
    "a UTF-16 body": (SETUP, '{"number_of_workers": 1}'.encode("utf-16"), 400, "body", "got UTF-16"),
    "a UTF-16 body without its byte order mark": (SETUP, '{"number_of_workers": 1}'.encode("utf-16-le"), 400,
                                                  "body", "UTF-16"),
    "a stacking dataset no call could hold": (DRIVER, b'{"n_samples": 100000, "n_features": 100000}', 413,
                                              "n_samples", "memory_limit=1Gi"),
    "an empty stacking POST": (DRIVER, b"", 400, "body", "a job needs a JSON object body"),
}


@pytest.mark.parametrize("case", list(BODIES))
def test_a_function_starts_no_job_from_a_body_it_cannot_take(runtime, case):
    path, body, status, field, words = BODIES[case]
    answer = raw(runtime.port, request("POST", path, body, JSON))
    error = answer.json()
    assert (answer.status, error.get("field")) == (status, field) and words in error["error"], error


def test_train_dry_run_refuses_a_network_the_workers_could_not_hold(runtime):
    done = faasgd("train", "--dry-run", "--hidden-sizes", "65536,65536,65536")
    assert done.returncode == 2 and "hidden_sizes: " in done.stderr and "memory_limit" in done.stderr, done.stderr
