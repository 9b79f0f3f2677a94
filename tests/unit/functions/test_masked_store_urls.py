"""A store URL sent where a function takes none is refused without its password: not in the answer's body, not in
the replica's log. Through the template's shim (index.py in process) to the real handlers of emnist-setup and
emnist-train, over every place a caller can put a URL: the `store` field (as text, inside an object or a list, in
a form), another field's value, a key's name, a status query's `store`, the queue's delivery callback.
"""

import json
import logging

import pytest

from support.hostile import function_env
from support.shim import load_shim

SETUP, TRAIN = load_shim("emnist-setup"), load_shim("emnist-train")
PASSWORD = "Hunter2-s3cret"
URLS = {
    "redis": f"redis://:{PASSWORD}@10.0.0.9:6379/0",
    "redis user": f"redis://bob:{PASSWORD}@store.example/0",
    "memcached": f"memcached://user:{PASSWORD}@cache.example",
    "cluster": f"redis-cluster://:{PASSWORD}@h1:6379,h2:6379",
    "spaces": f"redis://:my {PASSWORD}@h/0",
    "slash": f"redis://:ab/{PASSWORD}@h/0",
}


def setup_requests(url):
    """(name, request) pairs: each a way to hand emnist-setup `url`."""
    return {
        "store": dict(body=json.dumps({"store": url}).encode()),
        "store in an object": dict(body=json.dumps({"store": {"url": url}}).encode()),
        "store in a list": dict(body=json.dumps({"store": [url]}).encode()),
        "store in a form": dict(body=b"store=" + url.replace("%", "%25").replace(" ", "%20").encode(),
                                content_type="application/x-www-form-urlencoded"),
        "store_url": dict(body=json.dumps({"store_url": url}).encode()),
        "dataset": dict(body=json.dumps({"dataset": url}).encode()),
        "a key": dict(body=json.dumps({url: 1}).encode()),
        "status query": dict(method="GET", query={"job_id": "j0123456789abcdef", "store": url}),
        "model query": dict(method="GET", query={"job_id": "j0123456789abcdef", "store": url, "model": "npz"}),
        "delivery": dict(query={"job_id": "j0123456789abcdef", "worker": "0", "delivery": "1", "store": url},
                         headers={"X-Function-Status": "500"}),
        "POST query": dict(body=b"{}", query={"store": url}),
    }


@pytest.fixture
def logs(caplog, capsys):
    """Everything the replica logged or printed during the test."""
    caplog.set_level(logging.DEBUG)

    def read():
        captured = capsys.readouterr()
        return caplog.text + captured.out + captured.err
    return read


def refused_without_password(replica, logs, **request):
    answer = replica.send(**request)
    text = answer.get_data(as_text=True)
    assert 400 <= answer.status_code < 500, text
    assert answer.get_json()["field"], text
    assert PASSWORD not in text and PASSWORD not in logs(), text
    return answer.get_json()


@pytest.mark.parametrize("url", URLS.values(), ids=URLS.keys())
@pytest.mark.parametrize("case", setup_requests("x").keys())
def test_emnist_setup_never_answers_or_logs_a_store_urls_password(monkeypatch, logs, url, case):
    from faasgd.functions import replica_cache

    replica = function_env(monkeypatch, SETUP)
    try:
        refused_without_password(replica, logs, **setup_requests(url)[case])
    finally:
        replica_cache.forget()


@pytest.mark.parametrize("url", URLS.values(), ids=URLS.keys())
def test_emnist_train_never_answers_or_logs_a_store_urls_password(monkeypatch, logs, url):
    from faasgd.functions import replica_cache

    replica = function_env(monkeypatch, TRAIN)
    try:
        body = json.dumps({"job_id": "j0123456789abcdef", "worker_id": 0, "store": url}).encode()
        refused_without_password(replica, logs, body=body)
    finally:
        replica_cache.forget()


def test_the_refusal_still_says_what_was_given_with_the_password_masked(monkeypatch, logs):
    from faasgd.functions import replica_cache

    replica = function_env(monkeypatch, SETUP)
    try:
        error = refused_without_password(replica, logs, body=json.dumps({"store": URLS["redis"]}).encode())
    finally:
        replica_cache.forget()
    assert error["field"] == "store" and "redis://:***@10.0.0.9:6379/0" in error["error"], error


@pytest.mark.parametrize("url", URLS.values(), ids=URLS.keys())
def test_an_unforeseen_failure_quoting_a_store_url_is_logged_without_its_password(monkeypatch, logs, url):
    from faasgd.functions import replica_cache

    class Failing:
        @staticmethod
        def handle(event, context):
            raise RuntimeError(f"could not reach {url!r}")

    replica = function_env(monkeypatch, SETUP)
    monkeypatch.setattr(SETUP.module, "handler", Failing)
    try:
        answer = replica.send(body=b"{}")
    finally:
        replica_cache.forget()
    logged = logs()
    assert answer.status_code == 500 and PASSWORD not in answer.get_data(as_text=True)
    assert "RuntimeError: could not reach" in logged and PASSWORD not in logged, logged


@pytest.mark.parametrize("url", URLS.values(), ids=URLS.keys())
@pytest.mark.parametrize("at", range(-12, 4))
def test_a_message_cut_inside_a_url_shows_no_part_of_its_password(url, at):
    from faasgd.errors import ConfigError
    from faasgd.functions.http_call import MAX_MESSAGE, error_answer

    start = url.index(PASSWORD) + len(PASSWORD) // 2  # the message's limit falls inside the password, or near it
    given = "x" * (MAX_MESSAGE - len("store: got '") - start + at) + url
    _, payload, _ = error_answer(ConfigError("store", f"got {given!r} and more"))
    shown = payload["error"]
    assert "more characters)" in shown
    assert not any(PASSWORD[i:i + 4] in shown for i in range(len(PASSWORD) - 3)), shown[-80:]
