"""The local queue-worker: async calls kept by a broker (nats-server's JetStream in the runtime) and
delivered through the gateway under the rules of faasgd.local.queue.rules (`ce` or `pro`).

One `QueueWorkers` serves every broker, so the delivery rules exist once; a `Broker` only stores
messages and hands them out again (JetStream: queue/jetstream.py; in-process unit tests:
tests/support/fake_broker.py, a fake of JetStream's semantics). What a broker must do:
* keep every published call until it is acked, across restarts of its owner;
* hand a message out again when it was not acked within ack_wait (same content, same X-Call-Id),
  or after the delay of a nak; count each hand-out (`attempt`), at most `max_attempts` of them;
* on `open`, hand out again at once what a previous owner left unacked;
* store a message once per MESSAGE_ID header (the call id) within a window (a resent call is not run twice);
* answer `problem()`: None while it can take calls, else why not (/healthz says it).

The queue pulls a message only when a queue worker is free: `workers` (one per call the replicas run at
once, replicas x waitress threads, unless fixed) x the mode's calls in flight per worker. A call's
body lives in the broker; this process holds it only while delivering it. `deliveries(call_id)` keeps the records (no bodies) of the last
HISTORY calls. Where CE's queue-worker differs: it forwards every call as a POST (we keep the
method), measures X-Duration-Seconds from the message's receipt (we time the function's call).
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Coroutine, Protocol

import httpx

from faasgd.local.clock import Clock, RealClock
from faasgd.local.queue.errors import QueueError
from faasgd.local.queue.messages import AsyncCall, Broker, Message, Reply
from faasgd.local.queue.rules import DeliveryPolicy, decide
from faasgd.openfaas import CHAOS_SLOW_HEADER

log = logging.getLogger(__name__)

NO_RESPONSE = 503  # X-Function-Status when a delivery raised without any status (as CE's queue-worker)
USER_AGENT = "faasgd-local/queue-worker"  # on deliveries and callbacks
CALLBACK_TIMEOUT_S = 30.0  # one try; callback failures are logged, never retried
HISTORY = 1000  # calls whose delivery records `deliveries(call_id)` keeps
RESIZE_S = 0.5  # how often the queue-worker count (and the broker's message count) is re-read
BROKER_RETRY_S = 1.0  # wait after the broker failed to hand out a message
_SET_ON_CALLBACK = {"x-call-id", "x-function-status", "x-function-name", "x-duration-seconds", "user-agent",
                    "content-length", "host", "traceparent", "tracestate"}
TRACE_HEADERS = ("traceparent", "tracestate")  # the call's W3C trace context, passed on to its callback too


class CallQueue(Protocol):
    """The gateway's async queue: accept calls, deliver them in the background, report on them."""

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    async def put(self, call: AsyncCall) -> None: ...  # raises QueueError
    async def problem(self) -> str | None: ...  # the broker's: None while it can take calls
    def stats(self) -> dict: ...  # queued, in_flight, accepted, delivered, redelivered, retried, failed, workers
    def deliveries(self, call_id: str) -> list[dict]: ...  # kind, worker, status, seconds ... per delivery


Deliver = Callable[[AsyncCall], Awaitable[Reply]]


@dataclass
class _History:
    deliveries: list[dict] = field(default_factory=list)
    answered: bool = False  # a delivery ended the call (acked)
    retrying: bool = False  # nak'ed: its next hand-out is a retry


class QueueWorkers:
    """A CallQueue over a Broker; stats() and deliveries() may be read from any thread."""

    def __init__(self, broker: Broker, deliver: Deliver, workers_wanted: Callable[[], Awaitable[int]],
                 client: httpx.AsyncClient, policy: DeliveryPolicy, ack_wait_s: float, clock: Clock | None = None):
        self.broker, self.policy, self.ack_wait_s = broker, policy, ack_wait_s
        self._deliver, self._workers_wanted, self._client = deliver, workers_wanted, client
        self._clock = clock or RealClock()
        self._counts = dict.fromkeys(("accepted", "delivered", "redelivered", "retried", "failed", "dropped",
                                      "duplicated", "slowed"), 0)
        self._history: OrderedDict[str, _History] = OrderedDict()
        self._running: dict[int, tuple[int, int]] = {}  # delivery -> (slot, body bytes)
        self._room: asyncio.Condition | None = None
        self._tasks: set[asyncio.Task] = set()
        self._seq = itertools.count()
        self._workers, self._stored = 0, 0
        self._drops = dict(policy.chaos.drop)  # deliveries still to drop, per function (--chaos)
        self._slow = dict(policy.chaos.slow)  # function -> the X-Chaos-Slow value its deliveries carry (--chaos)

    # -- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        """Open the broker (calls left by a previous owner come back), then pull and deliver."""
        self._room = asyncio.Condition()
        await self.broker.open(self.ack_wait_s, self.policy.max_attempts)
        await self._resize()
        self._spawn(self._keep_resizing())
        self._spawn(self._pull())

    async def stop(self) -> None:
        """Stop pulling and cut off deliveries in flight (unacked, so the broker keeps them). Idempotent."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.broker.close()

    # -- CallQueue -------------------------------------------------------------------------------
    async def put(self, call: AsyncCall) -> None:
        """Hand a call to the broker; returns once the broker has stored it."""
        await self.broker.publish(*call.to_message())
        self._counts["accepted"] += 1
        await self._count_stored()

    async def problem(self) -> str | None:
        return await self.broker.problem()

    def stats(self) -> dict:
        running = list(self._running.values())  # one atomic copy: other threads may read stats
        return {"delivery": self.policy.mode, "queued": max(0, self._stored - len(running)),
                "in_flight": len(running), "stored": self._stored, **self._counts, "workers": self._workers,
                "capacity": self._capacity(), "held_bytes": sum(size for _, size in running)}

    def deliveries(self, call_id: str) -> list[dict]:
        """The delivery records of a recent call (empty if unknown): kind, worker, status, seconds ..."""
        history = self._history.get(call_id)
        return [dict(record) for record in list(history.deliveries)] if history else []

    # -- pulling ---------------------------------------------------------------------------------
    def _capacity(self) -> int:
        return self._workers * self.policy.max_inflight

    async def _wait_for_room(self) -> None:
        async with self._room:
            await self._room.wait_for(lambda: len(self._running) < self._capacity())

    async def _pull(self) -> None:
        while True:
            await self._wait_for_room()
            try:
                message = await self.broker.next()
            except Exception as exc:  # QueueError, or a bug: the puller must go on
                log.warning("the queue cannot pull a call (retrying in %gs): %r", BROKER_RETRY_S, exc)
                await self._clock.sleep(BROKER_RETRY_S)
                continue
            if message is not None:
                await self._wait_for_room()  # the worker count may have dropped meanwhile
                self._spawn(self._handle(message, self._free_slot()))

    def _free_slot(self) -> int:
        busy = {slot for slot, _ in self._running.values()}
        return next(slot for slot in itertools.count() if slot not in busy)

    # -- one delivery ----------------------------------------------------------------------------
    async def _handle(self, message: Message, slot: int) -> None:
        try:
            call = AsyncCall.from_message(message.headers, message.data)
        except (ValueError, KeyError, TypeError) as exc:  # CE's queue-worker drops what it cannot unmarshal
            log.error("dropping a message that is not an async call: %s", exc)
            await self._settle(message, None)
            return
        history = self._remember(call.call_id)
        if history.answered:  # a copy handed out before the ack landed: the call is done
            await self._settle(message, None)
            return
        kind = "first" if message.attempt == 1 else "retry" if history.retrying else "redelivery"
        self._counts["redelivered"] += kind == "redelivery"
        history.retrying = False
        worker = f"queue-worker-{slot // self.policy.max_inflight}"
        record = {"attempt": message.attempt, "kind": kind, "worker": worker, "started_at": time.time(),
                  "status": None, "seconds": None, "replica": None}
        history.deliveries.append(record)
        key = next(self._seq)
        self._running[key] = (slot, len(call.body))
        try:
            reply = await self._deliver_through_chaos(call, history)
        except Exception as exc:  # a bug must not kill the queue; report it like a lost response
            log.exception("delivery of %s to %s failed", call.call_id, call.name)
            reply = Reply(NO_RESPONSE, [], b"", error=f"{type(exc).__name__}: {exc}")
        finally:
            del self._running[key]
            async with self._room:
                self._room.notify_all()
        self._counts["delivered"] += 1
        record.update(status=reply.status, seconds=reply.seconds, replica=reply.replica, error=reply.error)
        log.info("invoked %s [%d] in %.3fs: call %s, %s attempt %d, %s%s", call.name, reply.status, reply.seconds,
                 call.call_id, kind, message.attempt, worker, f" ({reply.error})" if reply.error else "")
        outcome = decide(self.policy, reply.status, message.attempt, history.answered)
        if outcome.retry_in_s is not None:
            history.retrying = True
            record["retry_in_s"] = outcome.retry_in_s
            self._counts["retried"] += 1
            await self._settle(message, outcome.retry_in_s)
            return
        history.answered = True
        self._counts["failed"] += outcome.failed
        await self._settle(message, None)
        if outcome.callback and call.callback_url:
            record["callback_status"] = await post_callback(self._client, call, reply)

    async def _deliver_through_chaos(self, call: AsyncCall, history: _History) -> Reply:
        """Deliver `call`, unless --chaos drops it (502 unsent); it may add X-Chaos-Slow to it or send a copy alongside."""
        if self._drops.get(call.name, 0) > 0:
            self._drops[call.name] -= 1
            self._counts["dropped"] += 1
            return Reply(502, [], b"dropped by --chaos\n", error="dropped by --chaos")
        if call.name in self._slow:  # the function decides whom the header slows (the runtime knows no workers)
            self._counts["slowed"] += 1
            call = dataclasses.replace(call, headers=[*call.headers, (CHAOS_SLOW_HEADER, self._slow[call.name])])
        if call.name in self.policy.chaos.duplicate:
            self._counts["duplicated"] += 1
            self._spawn(self._deliver_copy(call, history))
        return await self._deliver(call)

    async def _deliver_copy(self, call: AsyncCall, history: _History) -> None:
        record = {"attempt": None, "kind": "duplicate", "worker": None, "started_at": time.time(), "status": None,
                  "seconds": None, "replica": None}
        history.deliveries.append(record)
        try:
            reply = await self._deliver(call)
        except Exception as exc:
            reply = Reply(NO_RESPONSE, [], b"", error=f"{type(exc).__name__}: {exc}")
        record.update(status=reply.status, seconds=reply.seconds, replica=reply.replica, error=reply.error)
        log.info("invoked %s [%d] in %.3fs: call %s, duplicate (--chaos)", call.name, reply.status, reply.seconds,
                 call.call_id)

    async def _settle(self, message: Message, retry_in_s: float | None) -> None:
        """Ack (None) or nak for a retry; a broker error leaves the message to be redelivered."""
        try:
            await (message.ack() if retry_in_s is None else message.nak(retry_in_s))
        except QueueError as exc:
            log.warning("the queue could not settle a message (it will come again): %s", exc)
        await self._count_stored()

    def _remember(self, call_id: str) -> _History:
        history = self._history.setdefault(call_id, _History())
        self._history.move_to_end(call_id)
        while len(self._history) > HISTORY:
            self._history.popitem(last=False)
        return history

    # -- worker count ----------------------------------------------------------------------------
    async def _keep_resizing(self) -> None:
        """Every RESIZE_S: the wanted worker count and the stored count. A round that fails in a way nobody foresaw
        is logged and the next one comes: this loop is the queue's only way to follow scaling for the runtime's life."""
        while True:
            await self._clock.sleep(RESIZE_S)
            try:
                await self._resize()
                await self._count_stored()
            except Exception:
                log.exception("a round of the queue-worker count failed; the next comes in %.0f s", RESIZE_S)

    async def _resize(self) -> None:
        try:
            self._workers = max(1, int(await self._workers_wanted()))
        except Exception:
            log.exception("cannot read the wanted queue-worker count; keeping %d", self._workers)
            self._workers = max(1, self._workers)
        async with self._room:
            self._room.notify_all()

    async def _count_stored(self) -> None:
        try:
            self._stored = await self.broker.stored()
        except QueueError as exc:
            log.warning("cannot count the broker's messages: %s", exc)

    def _spawn(self, coroutine: Coroutine) -> asyncio.Task:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task


async def post_callback(client: httpx.AsyncClient, call: AsyncCall, reply: Reply) -> int | None:
    """POST a delivery's answer to the call's X-Callback-Url as CE's queue-worker does; the status, or None."""
    headers = [(k, v) for k, v in reply.headers if k.lower() not in _SET_ON_CALLBACK]
    headers += [("X-Call-Id", call.call_id), ("X-Function-Status", str(reply.status)),
                ("X-Function-Name", call.name), ("X-Duration-Seconds", f"{reply.seconds:.6f}"),
                ("User-Agent", USER_AGENT)]
    headers += [(k, v) for k, v in call.headers if k.lower() in TRACE_HEADERS]
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
