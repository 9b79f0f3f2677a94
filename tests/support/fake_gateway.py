"""The one stand-in for the OpenFaaS gateway in tests: an httpx transport behind a real GatewayClient.

POST /async-function/<name> answers 202 with an X-Call-Id and records the call. The functions talk
to it through the real `faasgd.openfaas.GatewayClient` (so the client's encoding and status
handling run too), installed with `install(monkeypatch)` in place of the replica's gateway client.
- Unit tests deliver recorded calls themselves (`take()`, then `support.handlers.deliver`).
- With `deliver=` and `queue_workers=N`, N threads deliver every call as CE's queue-worker would,
  each call twice with `duplicates=True` (NATS redelivery); `wait_idle()` waits until all are done.
- `fail_after=k` makes the (k+1)-th and later async calls fail at the transport (gateway down).
"""

from __future__ import annotations

import itertools
import json
import queue
import threading
from dataclasses import dataclass
from typing import Callable

import httpx

from faasgd.openfaas import GatewayClient

URL = "http://gateway.test:8080"


@dataclass(frozen=True)
class Call:
    function: str
    payload: dict
    headers: dict[str, str]
    call_id: str


class FakeGateway:
    def __init__(self, deliver: Callable[[Call], dict] | None = None, queue_workers: int = 0,
                 duplicates: bool = False, fail_after: int | None = None):
        self.calls: list[Call] = []
        self.answers: list[dict] = []
        self.deliver, self.duplicates, self.fail_after = deliver, duplicates, fail_after
        self._ids = itertools.count(1)
        self._accepted = 0
        self._lock = threading.Lock()
        self._queue: queue.Queue = queue.Queue()
        self._threads = [threading.Thread(target=self._work, daemon=True) for _ in range(queue_workers)]
        for thread in self._threads:
            thread.start()

    def client(self) -> GatewayClient:
        return GatewayClient(URL, transport=httpx.MockTransport(self._handle))

    def install(self, monkeypatch) -> "FakeGateway":
        """Make every function in this process reach this gateway."""
        from faasgd.functions import replica_cache

        monkeypatch.setattr(replica_cache, "gateway_for", lambda url: self.client())
        return self

    def take(self) -> list[Call]:
        """The calls recorded since the last take (unit tests deliver them themselves)."""
        with self._lock:
            calls, self.calls = self.calls, []
            return calls

    def wait_idle(self) -> None:
        self._queue.join()

    def close(self) -> None:
        for _ in self._threads:
            self._queue.put(None)
        for thread in self._threads:
            thread.join(10)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        prefix = "/async-function/"
        if request.method != "POST" or not request.url.path.startswith(prefix):
            return httpx.Response(404, json={"error": f"not found: {request.url.path}"})
        with self._lock:
            if self.fail_after is not None and self._accepted >= self.fail_after:
                raise httpx.ConnectError("connection refused", request=request)
            self._accepted += 1
            call = Call(request.url.path[len(prefix):], json.loads(request.content),
                        {k: v for k, v in request.headers.items()
                         if k.lower().startswith("x-") or k.lower() in ("traceparent", "tracestate")},
                        f"call-{next(self._ids)}")
            self.calls.append(call)
        if self.deliver is not None:
            self._queue.put(call)
        return httpx.Response(202, headers={"X-Call-Id": call.call_id})

    def _work(self) -> None:
        while True:
            call = self._queue.get()
            try:
                if call is None:
                    return
                for _ in range(2 if self.duplicates else 1):
                    answer = self.deliver(call)
                    with self._lock:
                        self.answers.append(answer)
            finally:
                self._queue.task_done()
