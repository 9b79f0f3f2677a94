"""The local queue-worker: async calls held in memory and delivered by asyncio tasks.

Semantics follow OpenFaaS CE's nats-queue-worker over NATS Streaming (openfaas/nats-queue-worker
`main.go`), with these choices of ours:
* One call at a time per worker (CE fixes max_inflight at 1); the worker count follows a callable,
  by default the registry's total replicas, re-read every `resize_every_s`.
* At-least-once: a delivery not finished after `ack_wait_s` is put back on the queue with the same
  call id and delivered again by another worker while the first goes on, as NATS Streaming
  redelivers an unacked message. Every delivery that ends with a function answer posts its own
  callback, as CE's does; callers de-duplicate on X-Call-Id.
* Retries: a delivery ending 502/503/504 (no replica, replica died, upstream timeout) is delivered
  again after 0.2 s, 0.4 s, 0.8 s ... up to `max_retry_wait_s` (OpenFaaS Pro's JetStream
  queue-worker retries its httpRetryCodes; CE drops the call and its callback reports the failure).
  `max_attempts` caps all deliveries of a call, redeliveries included (NATS Streaming would
  redeliver forever).
* A finished call keeps its delivery records for `deliveries()` but not its body.
`CallQueue` is what the gateway uses, so a NATS JetStream queue can replace MemoryQueue.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Coroutine, Protocol

import httpx
from tenacity import RetryCallState, wait_exponential

from faasgd.local.gateway.options import Clock, RealClock
from faasgd.local.gateway.proxy import RETRYABLE, Reply

log = logging.getLogger(__name__)

NO_RESPONSE = 503  # X-Function-Status when a delivery raised without any status (as CE's queue-worker)
USER_AGENT = "faasgd-local/queue-worker"  # on deliveries and callbacks
CALLBACK_TIMEOUT_S = 30.0  # one try; callback failures are logged, never retried
HISTORY = 1000  # finished calls kept for `deliveries(call_id)`
_SET_ON_CALLBACK = {"x-call-id", "x-function-status", "x-function-name", "x-duration-seconds", "user-agent",
                    "content-length", "host"}


@dataclass
class AsyncCall:
    """One accepted /async-function request and the record of its deliveries."""

    name: str
    method: str
    path: str  # suffix after /async-function/NAME, "" or "/..."
    query: str
    headers: list[tuple[str, str]]
    body: bytes  # emptied once the call is done
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
    max_retry_wait_s: float = 120.0  # backoff cap (OpenFaaS Pro's maxRetryWait)
    resize_every_s: float = 0.5  # how often the worker count is re-read


class CallQueue(Protocol):
    """The gateway's async queue: accept calls, deliver them in the background, report on them."""

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    async def put(self, call: AsyncCall) -> None: ...
    def stats(self) -> dict: ...  # queued, in_flight, accepted, delivered, redelivered, retried, failed, workers
    def deliveries(self, call_id: str) -> list[dict]: ...  # kind, worker, status, seconds ... per delivery


Deliver = Callable[[AsyncCall], Awaitable[Reply]]


class MemoryQueue:
    """A CallQueue in this process's memory, delivered by a varying number of worker tasks."""

    def __init__(self, deliver: Deliver, workers_wanted: Callable[[], Awaitable[int]], client: httpx.AsyncClient,
                 options: QueueOptions = QueueOptions(), clock: Clock | None = None):
        self._deliver, self._workers_wanted, self._client = deliver, workers_wanted, client
        self.options, self._clock = options, clock or RealClock()
        self._backoff = wait_exponential(multiplier=options.retry_wait_s, max=options.max_retry_wait_s)
        self._ready: asyncio.Queue[tuple[AsyncCall, str]] = asyncio.Queue()
        self._running: dict[int, tuple[AsyncCall, dict]] = {}  # delivery -> (call, record)
        self._calls: OrderedDict[str, AsyncCall] = OrderedDict()
        self._counts = dict.fromkeys(("accepted", "delivered", "redelivered", "retried", "failed"), 0)
        self._workers: dict[str, asyncio.Task] = {}
        self._idle: set[str] = set()
        self._tasks: set[asyncio.Task] = set()  # timers, retries, the resizer
        self._seq = itertools.count()
        self._target = 0

    # -- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        """Start the workers, and a task that keeps their count."""
        await self._resize()
        self._spawn(self._keep_resizing())

    async def stop(self) -> None:
        """Cancel every worker and timer, busy ones included; queued calls are dropped. Idempotent."""
        tasks = [*self._workers.values(), *self._tasks]
        self._workers.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- CallQueue -------------------------------------------------------------------------------
    async def put(self, call: AsyncCall) -> None:
        """Accept a call for delivery."""
        self._counts["accepted"] += 1
        self._calls[call.call_id] = call
        self._calls.move_to_end(call.call_id)
        self._push(call, "first")
        self._forget_old()

    def stats(self) -> dict:
        """Counters, plus held_bytes: the bodies still held (calls not yet done keep theirs)."""
        calls = list(self._calls.values())  # one atomic copy: other threads may read stats while the loop runs
        return {"queued": sum(c.pending for c in calls if not c.done), "in_flight": len(self._running),
                **self._counts, "workers": len(self._workers), "held_bytes": sum(len(c.body) for c in calls)}

    def deliveries(self, call_id: str) -> list[dict]:
        """The delivery records of a recent call (empty if unknown): kind, worker, status, seconds ..."""
        call = self._calls.get(call_id)
        return [dict(record) for record in list(call.deliveries)] if call else []

    # -- workers ---------------------------------------------------------------------------------
    async def _work(self, name: str) -> None:
        try:
            while len(self._workers) <= self._target:  # a surplus worker exits after its call
                self._idle.add(name)
                call, kind = await self._ready.get()
                self._idle.discard(name)
                call.pending -= 1
                if not call.done:  # copies of an answered call are dropped, as an ack cancels redelivery
                    await self._deliver_once(call, kind, name)
        finally:
            self._idle.discard(name)
            if self._workers.get(name) is asyncio.current_task():
                del self._workers[name]

    async def _deliver_once(self, call: AsyncCall, kind: str, worker: str) -> None:
        record = {"attempt": len(call.deliveries) + 1, "kind": kind, "worker": worker,
                  "started_at": time.time(), "status": None, "seconds": None, "replica": None}
        call.deliveries.append(record)
        call.running += 1
        key = next(self._seq)
        self._running[key] = (call, record)
        timer = self._spawn(self._redeliver_after_ack_wait(key))
        try:
            reply = await self._deliver(call)
        except Exception as exc:  # a bug must not kill the worker; report it like a lost response
            log.exception("delivery of %s to %s failed", call.call_id, call.name)
            reply = Reply(NO_RESPONSE, [], b"", error=f"{type(exc).__name__}: {exc}")
        finally:
            timer.cancel()
            del self._running[key]
            call.running -= 1
        post = self._finish(call, record, reply)
        if call.done:
            call.body = b""
        if post and call.callback_url:
            record["callback_status"] = await post_callback(self._client, call, reply)

    def _finish(self, call: AsyncCall, record: dict, reply: Reply) -> bool:
        """Record the outcome, schedule a retry if due; True if this delivery's callback is to be posted."""
        self._counts["delivered"] += 1
        record.update(status=reply.status, seconds=reply.seconds, replica=reply.replica, error=reply.error)
        if reply.status not in RETRYABLE:
            call.done = True
            return True
        if call.done:
            return False  # a duplicate failed after another delivery answered
        if self._attempts_left(call):
            call.retries += 1
            delay = self._retry_wait(call.retries)
            call.pending += 1
            record["retry_in_s"] = delay
            self._counts["retried"] += 1
            self._spawn(self._retry_later(call, delay))
            return False
        if call.running == 0 and call.pending == 0:
            call.done = True
            self._counts["failed"] += 1
            return True
        return False  # another delivery of this call is still under way

    def _retry_wait(self, retry: int) -> float:
        """Seconds before retry number `retry` (1, 2, ...): tenacity's exponential wait."""
        state = RetryCallState(None, None, (), {})
        state.attempt_number = retry
        return self._backoff(state)

    async def _retry_later(self, call: AsyncCall, delay: float) -> None:
        await self._clock.sleep(delay)
        self._ready.put_nowait((call, "retry"))

    async def _redeliver_after_ack_wait(self, key: int) -> None:
        await self._clock.sleep(self.options.ack_wait_s)
        if key not in self._running:
            return
        call, record = self._running[key]
        record["ack_expired"] = True
        if not call.done and self._attempts_left(call):
            self._counts["redelivered"] += 1
            self._push(call, "redelivery")

    def _attempts_left(self, call: AsyncCall) -> bool:
        return len(call.deliveries) + call.pending < self.options.max_attempts

    # -- worker count ----------------------------------------------------------------------------
    async def _keep_resizing(self) -> None:
        while True:
            await self._clock.sleep(self.options.resize_every_s)
            await self._resize()

    async def _resize(self) -> None:
        try:
            self._target = max(1, int(await self._workers_wanted()))
        except Exception:
            log.exception("cannot read the wanted queue-worker count; keeping %d", self._target)
            return
        while len(self._workers) < self._target:
            name = f"queue-worker-{next(self._seq)}"
            self._workers[name] = asyncio.create_task(self._work(name), name=name)
        for name in list(self._idle)[: max(0, len(self._workers) - self._target)]:
            self._idle.discard(name)
            self._workers.pop(name).cancel()  # busy surplus workers exit after their call

    # -- bookkeeping -----------------------------------------------------------------------------
    def _push(self, call: AsyncCall, kind: str) -> None:
        call.pending += 1
        self._ready.put_nowait((call, kind))

    def _spawn(self, coroutine: Coroutine) -> asyncio.Task:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _forget_old(self) -> None:
        for call_id in [cid for cid, c in self._calls.items() if c.done][: max(0, len(self._calls) - HISTORY)]:
            del self._calls[call_id]


async def post_callback(client: httpx.AsyncClient, call: AsyncCall, reply: Reply) -> int | None:
    """POST a delivery's answer to the call's X-Callback-Url as CE's queue-worker does; the status, or None."""
    headers = [(k, v) for k, v in reply.headers if k.lower() not in _SET_ON_CALLBACK]
    headers += [("X-Call-Id", call.call_id), ("X-Function-Status", str(reply.status)),
                ("X-Function-Name", call.name), ("X-Duration-Seconds", f"{reply.seconds:.6f}"),
                ("User-Agent", USER_AGENT)]
    try:
        request = httpx.Request("POST", call.callback_url, headers=headers, content=reply.body,
                                extensions={"timeout": httpx.Timeout(CALLBACK_TIMEOUT_S).as_dict()})
        response = await client.send(request)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        log.warning("callback for %s to %s failed: %s", call.call_id, call.callback_url, exc)
        return None
    except Exception:  # a bug must not kill the worker
        log.exception("callback for %s to %s failed", call.call_id, call.callback_url)
        return None
    log.info("callback for %s to %s: %d", call.call_id, call.callback_url, response.status_code)
    return response.status_code
