"""setup -> fan-out -> train through the fake gateway, on a real redis-server and memcached.

The fake gateway (support/fake_gateway.py) answers POST /async-function/<name> like OpenFaaS:
answers 202 with X-Call-Id and queues the call; queue-worker threads deliver each call to the
train handler (in this process), and with `duplicates=True` deliver every call a second time,
as NATS redelivery would.
"""

import pytest

from faasgd.functions import replica_cache
from support.fake_gateway import FakeGateway
from support.handlers import FakeEvent, deliver, load_handler

pytestmark = pytest.mark.integration

setup_handler = load_handler("emnist-setup")
train_handler = load_handler("emnist-train")


def run_job(monkeypatch, store_url, mode, duplicates):
    env = {"store_url": store_url, "dataset": "synthetic", "train_samples": "3000", "test_samples": "500",
           "hidden_sizes": "32", "max_epochs": "4", "target_accuracy": "1.0", "number_of_workers": "2",
           "n_fetch": "5", "n_push": "5", "invocation_mode": mode}
    gateway = FakeGateway(lambda call: deliver(train_handler, call)[1], queue_workers=2,
                          duplicates=duplicates).install(monkeypatch)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    try:
        answer = setup_handler.handle(FakeEvent("POST", b"{}"), None)
        assert answer["statusCode"] == 202
        job_id = answer["body"]["job_id"]
        gateway.wait_idle()  # every delivery, duplicates included, has answered
        status = setup_handler.handle(FakeEvent("GET", b"", query={"job_id": job_id}), None)["body"]
        return status, gateway.answers
    finally:
        gateway.close()
        replica_cache.forget()


@pytest.mark.parametrize("mode", ["loop", "per-iteration"])
@pytest.mark.parametrize("backend", ["redis", "memcached"])
def test_setup_fans_out_and_workers_train_once_despite_duplicates(backend, mode, monkeypatch, redis_server,
                                                                  memcached_server):
    url = redis_server.url if backend == "redis" else memcached_server.url
    status, answers = run_job(monkeypatch, url, mode, duplicates=True)
    assert status["state"] == "done", status
    result = status["result"]
    assert result["samples"] == 4 * 2700  # 4 epochs over 2 shards (300 rows held out): nothing trained twice
    assert [w["epoch"] for w in status["workers"]] == [4, 4]
    trained = [a for a in answers if not a["duplicate"]]
    duplicate = [a for a in answers if a["duplicate"]]
    expected = 2 if mode == "loop" else 2 * 4
    assert len(trained) == expected and len(duplicate) == expected
    assert result["final_test_accuracy"] > 0.5 and result["pushes"] > 0
