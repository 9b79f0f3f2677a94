"""The local queue-worker: async calls held in memory and delivered by worker threads.

Semantics follow OpenFaaS CE's nats-queue-worker over NATS Streaming (openfaas/nats-queue-worker
`main.go`), with these choices of ours:
* One call at a time per worker (CE fixes max_inflight at 1); the worker count follows a callable,
  by default the registry's total replicas, re-read every `resize_every_s`.
* At-least-once: a delivery not finished after `ack_wait_s` is put back on the queue with the same
  call id and delivered again by another worker while the first goes on, as NATS Streaming
  redelivers an unacked message. Every delivery that ends with a function answer posts its own
  callback, as CE's does; callers de-duplicate on X-Call-Id.
* Retries: a delivery ending 502/503/504 (no replica, replica died, upstream timeout) is delivered
  again after 0.2 s, 0.4 s, 0.8 s ... (OpenFaaS Pro's JetStream queue-worker retries its
  httpRetryCodes; CE drops the call and its callback reports the failure). `max_attempts` caps all
  deliveries of a call, redeliveries included (NATS Streaming would redeliver forever).
"""

from __future__ import annotations

import heapq
import http.client
import itertools
import logging
import math
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Callable
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

RETRY_CODES = frozenset({502, 503, 504})  # no replica / replica died / upstream timeout
NO_RESPONSE = 503  # X-Function-Status when a delivery raised without any status (as CE's queue-worker)
USER_AGENT = "faasgd-local/queue-worker"  # on deliveries and callbacks
CALLBACK_TIMEOUT_S = 30.0  # one try; callback failures are logged, never retried
HISTORY = 1000  # finished calls kept for `deliveries(call_id)`
_SET_ON_CALLBACK = {"x-call-id", "x-function-status", "x-function-name", "x-duration-seconds", "user-agent",
                    "content-length", "host"}


@dataclass
class Reply:
    """The outcome of one forwarded call, shared by /function and the queue-worker."""

    status: int
    headers: list[tuple[str, str]]  # the function's response headers, hop-by-hop ones removed
    body: bytes
    error: str | None = None  # set when the gateway answered because the function gave no response
    replica: str | None = None  # base URL of the replica that answered
    seconds: float = 0.0


@dataclass
class AsyncCall:
    """One accepted /async-function request and the record of its deliveries."""

    name: str
    method: str
    path: str  # suffix after /async-function/NAME, "" or "/..."
    query: str
    headers: list[tuple[str, str]]
    body: bytes
    call_id: str
    callback_url: str | None = None
    accepted_at: float = field(default_factory=time.time)
    deliveries: list[dict] = field(default_factory=list)  # one record per delivery, in start order
    done: bool = False  # acked: a delivery ended with a final answer, or the call was given up
    pending: int = 0  # copies waiting (queued, redelivered or scheduled for a retry)
    running: int = 0
    retries: int = 0


@dataclass(frozen=True)
class QueueOptions:
    ack_wait_s: float = 300.0  # a delivery running longer is delivered again (NATS Streaming ack_wait)
    max_attempts: int = 5  # deliveries per call at most, first one included
    retry_wait_s: float = 0.2  # first retry backoff, doubled on each retry
    resize_every_s: float = 0.5  # how often the worker count is re-read


class CallQueue:
    """Thread-safe queue of AsyncCalls delivered through `invoke` by a varying number of workers."""

    def __init__(self, invoke: Callable[[AsyncCall], Reply], workers: Callable[[], int], options: QueueOptions):
        self._invoke, self._workers_wanted, self.options = invoke, workers, options
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)  # workers wait here for calls
        self._tick = threading.Condition(self._lock)  # the manager waits here for deadlines
        self._ready: deque[tuple[AsyncCall, str]] = deque()
        self._scheduled: list[tuple[float, int, AsyncCall]] = []  # retries, a heap by due time
        self._running: dict[int, tuple[AsyncCall, dict, float]] = {}  # delivery -> (call, record, ack deadline)
        self._calls: OrderedDict[str, AsyncCall] = OrderedDict()
        self._counts = dict.fromkeys(("accepted", "delivered", "redelivered", "retried", "failed"), 0)
        self._seq = itertools.count()
        self._threads: dict[str, threading.Thread] = {}
        self._live = self._target = 0
        self._stopping = False
        self._manager: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the workers and the manager thread (deadlines, retries, worker count)."""
        self._resize()
        self._manager = threading.Thread(target=self._manage, name="faasgd-queue-manager", daemon=True)
        self._manager.start()

    def stop(self, timeout: float = 2.0) -> None:
        """Stop delivering; waits for idle workers only, busy ones exit after their call. Idempotent."""
        with self._lock:
            self._stopping = True
            self._work.notify_all()
            self._tick.notify_all()
            busy = {record["worker"] for _, record, _ in self._running.values()}
            threads = [t for name, t in self._threads.items() if name not in busy]
            threads += [self._manager] if self._manager else []
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    # -- API -------------------------------------------------------------------------------------
    def put(self, call: AsyncCall) -> None:
        """Accept a call for delivery."""
        with self._lock:
            self._counts["accepted"] += 1
            self._calls[call.call_id] = call
            self._calls.move_to_end(call.call_id)
            self._push(call, "first")
            self._forget_old()

    def stats(self) -> dict:
        """Counters: queued, in_flight, delivered, redelivered, retried, failed, accepted, workers."""
        with self._lock:
            queued = sum(1 for c, _ in self._ready if not c.done) + sum(1 for *_, c in self._scheduled if not c.done)
            return {"queued": queued, "in_flight": len(self._running), **self._counts, "workers": self._live}

    def deliveries(self, call_id: str) -> list[dict]:
        """The delivery records of a recent call (empty if unknown): kind, worker, status, seconds ..."""
        with self._lock:
            call = self._calls.get(call_id)
            return [dict(record) for record in call.deliveries] if call else []

    @property
    def workers(self) -> int:
        with self._lock:
            return self._live

    # -- workers ---------------------------------------------------------------------------------
    def _work_loop(self, name: str) -> None:
        while True:
            with self._lock:
                item = self._next_call(name)
                if item is None:
                    return
                call, kind = item
                key, record = self._begin(call, kind, name)
            try:
                reply = self._invoke(call)
            except Exception as exc:  # a bug must not kill the worker; report it like a lost response
                log.exception("delivery of %s to %s failed", call.call_id, call.name)
                reply = Reply(NO_RESPONSE, [], b"", error=f"{type(exc).__name__}: {exc}")
            with self._lock:
                post = self._finish(key, call, record, reply)
            if post and call.callback_url:
                self._post_callback(call, reply, record)

    def _next_call(self, name: str) -> tuple[AsyncCall, str] | None:
        """Wait for a call (lock held); None when this worker should exit."""
        while True:
            if self._stopping or self._live > self._target:
                self._live -= 1
                self._threads.pop(name, None)
                return None
            while self._ready:
                call, kind = self._ready.popleft()
                call.pending -= 1
                if not call.done:  # copies of an answered call are dropped, as an ack cancels redelivery
                    return call, kind
            self._work.wait(0.5)

    def _begin(self, call: AsyncCall, kind: str, worker: str) -> tuple[int, dict]:
        record = {"attempt": len(call.deliveries) + 1, "kind": kind, "worker": worker,
                  "started_at": time.time(), "status": None, "seconds": None, "replica": None}
        call.deliveries.append(record)
        call.running += 1
        key = next(self._seq)
        self._running[key] = (call, record, time.monotonic() + self.options.ack_wait_s)
        self._tick.notify()
        return key, record

    def _finish(self, key: int, call: AsyncCall, record: dict, reply: Reply) -> bool:
        """Record the outcome, schedule a retry if due; True if this delivery's callback is to be posted."""
        del self._running[key]
        call.running -= 1
        self._counts["delivered"] += 1
        record.update(status=reply.status, seconds=reply.seconds, replica=reply.replica, error=reply.error)
        if reply.status not in RETRY_CODES:
            call.done = True
            return True
        if call.done:
            return False  # a duplicate failed after another delivery answered
        if len(call.deliveries) + call.pending < self.options.max_attempts:
            delay = self.options.retry_wait_s * 2 ** call.retries
            call.retries += 1
            call.pending += 1
            record["retry_in_s"] = delay
            self._counts["retried"] += 1
            heapq.heappush(self._scheduled, (time.monotonic() + delay, next(self._seq), call))
            self._tick.notify()
            return False
        if call.running == 0 and call.pending == 0:
            call.done = True
            self._counts["failed"] += 1
            return True
        return False  # another delivery of this call is still under way

    def _post_callback(self, call: AsyncCall, reply: Reply, record: dict) -> None:
        headers = [(k, v) for k, v in reply.headers if k.lower() not in _SET_ON_CALLBACK]
        headers += [("X-Call-Id", call.call_id), ("X-Function-Status", str(reply.status)),
                    ("X-Function-Name", call.name), ("X-Duration-Seconds", f"{reply.seconds:.6f}"),
                    ("User-Agent", USER_AGENT)]
        try:
            status = post(call.callback_url, headers, reply.body, CALLBACK_TIMEOUT_S)
            log.info("callback for %s to %s: %d", call.call_id, call.callback_url, status)
        except (OSError, http.client.HTTPException) as exc:
            status = None
            log.warning("callback for %s to %s failed: %s", call.call_id, call.callback_url, exc)
        with self._lock:
            record["callback_status"] = status

    # -- manager: worker count, retries due, ack_wait redeliveries --------------------------------
    def _manage(self) -> None:
        next_resize = time.monotonic() + self.options.resize_every_s
        while True:
            if time.monotonic() >= next_resize:
                self._resize()
                next_resize = time.monotonic() + self.options.resize_every_s
            with self._lock:
                if self._stopping:
                    return
                now = time.monotonic()
                while self._scheduled and self._scheduled[0][0] <= now:
                    _, _, call = heapq.heappop(self._scheduled)
                    self._ready.append((call, "retry"))
                    self._work.notify()
                self._redeliver_expired(now)
                self._tick.wait(max(0.005, self._next_deadline(next_resize) - now))

    def _next_deadline(self, next_resize: float) -> float:
        """The earliest of: the next resize, a retry falling due, a delivery's ack deadline."""
        deadlines = [next_resize] + [deadline for *_, deadline in self._running.values()]
        if self._scheduled:
            deadlines.append(self._scheduled[0][0])
        return min(deadlines)

    def _redeliver_expired(self, now: float) -> None:
        for key, (call, record, deadline) in list(self._running.items()):
            if deadline > now:
                continue
            self._running[key] = (call, record, math.inf)  # one redelivery per delivery
            record["ack_expired"] = True
            if not call.done and len(call.deliveries) + call.pending < self.options.max_attempts:
                self._counts["redelivered"] += 1
                self._push(call, "redelivery")

    def _resize(self) -> None:
        try:
            target = max(1, int(self._workers_wanted()))
        except Exception:
            log.exception("cannot read the wanted queue-worker count; keeping %d", self._target)
            return
        with self._lock:
            if self._stopping:
                return
            self._target = target
            while self._live < target:
                name = f"faasgd-queue-worker-{next(self._seq)}"
                thread = threading.Thread(target=self._work_loop, args=(name,), name=name, daemon=True)
                self._threads[name] = thread
                self._live += 1
                thread.start()
            if self._live > target:
                self._work.notify_all()  # surplus workers exit once idle

    def _push(self, call: AsyncCall, kind: str) -> None:
        call.pending += 1
        self._ready.append((call, kind))
        self._work.notify()

    def _forget_old(self) -> None:
        for call_id in [cid for cid, c in self._calls.items() if c.done][: max(0, len(self._calls) - HISTORY)]:
            del self._calls[call_id]


def post(url: str, headers: list[tuple[str, str]], body: bytes, timeout: float) -> int:
    """POST `body` to an http(s) URL with exactly these headers; return the status."""
    parts = urlsplit(url)
    connection_class = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = connection_class(parts.hostname, parts.port, timeout=timeout)
    try:
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        conn.putrequest("POST", target, skip_accept_encoding=True)
        for key, value in headers + [("Content-Length", str(len(body)))]:
            conn.putheader(key, value)
        conn.endheaders(body)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()
