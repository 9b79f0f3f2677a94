"""setup -> fan-out -> train through an HTTP fake gateway, on a real redis-server and memcached.

The fake gateway speaks the part of OpenFaaS's API the functions use: POST /async-function/<name>
answers 202 with X-Call-Id and queues the call; queue-worker threads deliver each call to the
train handler (in this process), and with `duplicates=True` deliver every call a second time,
as NATS redelivery would.
"""

import http.server
import itertools
import json
import queue
import threading
import time

import pytest

from faasgd.functions import warm
from faasgd.local.stores import free_port
from support.handlers import FakeEvent, load_handler

pytestmark = pytest.mark.integration

setup_handler = load_handler("emnist-setup")
train_handler = load_handler("emnist-train")


class FakeGateway:
    def __init__(self, queue_workers=2, duplicates=False):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.calls: queue.Queue = queue.Queue()
        self.answers: list[dict] = []
        self.duplicates = duplicates
        self._ids = itertools.count(1)
        gateway = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if not self.path.startswith("/async-function/emnist-train"):
                    self.send_response(404)
                    self.end_headers()
                    return
                call_id = f"call-{next(gateway._ids)}"
                gateway.calls.put((json.loads(body), call_id))
                self.send_response(202)
                self.send_header("X-Call-Id", call_id)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.threads = [threading.Thread(target=self.server.serve_forever, daemon=True)]
        self.threads += [threading.Thread(target=self._queue_worker, daemon=True) for _ in range(queue_workers)]
        for thread in self.threads:
            thread.start()

    def _queue_worker(self):
        while True:
            payload, call_id = self.calls.get()
            if payload is None:
                return
            for _ in range(2 if self.duplicates else 1):
                answer = train_handler.handle(FakeEvent("POST", payload, {"X-Call-Id": call_id}), None)
                self.answers.append(answer["body"])

    def close(self):
        for _ in self.threads[1:]:
            self.calls.put((None, None))
        self.server.shutdown()


def run_job(monkeypatch, store_url, mode, duplicates, deadline_s=120):
    env = {"store_url": store_url, "dataset": "synthetic", "train_samples": "3000", "test_samples": "500",
           "hidden_sizes": "32", "max_epochs": "4", "target_accuracy": "1.0", "number_of_workers": "2",
           "n_fetch": "5", "n_push": "5", "mode": mode}
    gateway = FakeGateway(duplicates=duplicates)
    monkeypatch.setenv("gateway_url", gateway.url)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    try:
        answer = setup_handler.handle(FakeEvent("POST", b""), None)
        assert answer["statusCode"] == 202
        job_id = answer["body"]["job_id"]
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            status = setup_handler.handle(FakeEvent("GET", b"", query={"job_id": job_id}), None)["body"]
            if status["state"] != "running":
                break
            time.sleep(0.2)
        time.sleep(0.5)  # let the duplicate deliveries finish
        return status, gateway.answers
    finally:
        gateway.close()
        warm.forget()


@pytest.mark.parametrize("mode", ["loop", "per-iteration"])
@pytest.mark.parametrize("backend", ["redis", "memcached"])
def test_setup_fans_out_and_workers_train_once_despite_duplicates(backend, mode, monkeypatch, redis_server,
                                                                  memcached_server):
    url = redis_server.url if backend == "redis" else memcached_server.url
    status, answers = run_job(monkeypatch, url, mode, duplicates=True)
    assert status["state"] == "done", status
    result = status["result"]
    assert result["samples"] == 4 * 3000  # 4 epochs over 2 shards: nothing trained twice
    assert [w["epoch"] for w in status["workers"]] == [4, 4]
    trained = [a for a in answers if not a["duplicate"]]
    duplicate = [a for a in answers if a["duplicate"]]
    expected = 2 if mode == "loop" else 2 * 4
    assert len(trained) == expected and len(duplicate) == expected
    assert result["final_accuracy"] > 0.5 and result["pushes"] > 0
