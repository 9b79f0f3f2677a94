"""The queue's broker on nats-server's JetStream, through nats-py (used on the gateway's event loop).

One stream and one durable pull consumer, named as OpenFaaS names its queue (`faas-request`):
* the stream keeps messages on disk (file storage in the runtime's folder) with work-queue
  retention: a message stays until acked, then it is deleted, so finished calls leave nothing;
* the consumer acks explicitly: a message not acked within ack_wait is handed out again (the same
  message, so the same X-Call-Id), a nak with a delay hands it out after the delay, and it is
  handed out `max_attempts` times at most;
* acks wait for the server's confirmation (ack_sync), so a call reported done is gone from disk;
* the stream has no byte limit of its own: nats-server's max_file_store (sized to the disk,
  local/services/broker.py) bounds it, and a call it has no room for is refused (QueueUnavailable: 503);
* a publish has PUBLISH_S to be confirmed; none is tried while the connection is down (nats-py would
  buffer it and send it after reconnecting, so a call answered 503 would still run). Each message
  carries the call's X-Call-Id as its Nats-Msg-Id: a call resent with the same X-Call-Id within
  DUPLICATE_WINDOW_S is stored once, so a client that got no answer, or a 503, resends it safely.

`problem()` is the queue's health as /healthz reports it: connected, JetStream answering, and room for calls.
JetStream does not say how much room is left (the account's limits read unlimited: max_file_store is the
server's), so the broker remembers a call refused for want of room (`Full`: its size, and the stream's bytes
then) and reports the queue full until a call is stored again or the stream has shrunk below those bytes
(calls delivered and acked leave it): room has come back, and /healthz says 200 without a call trying first.

Where this departs from OpenFaaS Pro's JetStream queue-worker, and why: each `open` replaces the
consumer. A runtime owns its nats-server and is the queue's only owner, so whatever is unacked
when it starts was left in flight by a dead predecessor (kill -9, a crash): a fresh consumer hands
all of it out at once instead of after ack_wait, and takes this run's ack_wait and attempts. The
price: an attempt count restarts at 1 with the new owner.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

import nats
import nats.errors
import nats.js.errors
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, DiscardPolicy, RetentionPolicy, StorageType
from nats.js.api import StreamConfig

from faasgd.local.queue.errors import QueueCallTooLarge, QueueError, QueueUnavailable

log = logging.getLogger(__name__)

STREAM = "faas-request"  # OpenFaaS's queue name (CE's NATS Streaming channel, Pro's stream)
SUBJECT = "faas-request"
DURABLE = "faas-workers"
FETCH_S = 5.0  # how long one pull waits for a message before next() returns None
REQUEST_S = 5.0  # JetStream API calls and acks
PUBLISH_S = 3.0  # a call not confirmed stored by then is answered 503
HEALTH_S = 1.0  # /healthz's JetStream question
CONNECT_S = 5.0
DUPLICATE_WINDOW_S = 600.0  # a call resent with the same X-Call-Id within this is stored once
_ERRORS = (nats.errors.Error, OSError, asyncio.TimeoutError)


class _Message:
    def __init__(self, msg):
        self._msg = msg
        self.headers, self.data = dict(msg.headers or {}), msg.data
        self.attempt = msg.metadata.num_delivered

    async def ack(self) -> None:
        try:
            await self._msg.ack_sync(timeout=REQUEST_S)
        except _ERRORS as exc:
            raise QueueError(f"ack of stream message {self._msg.metadata.sequence.stream}: {exc!r}") from exc

    async def nak(self, delay_s: float) -> None:
        try:
            await self._msg.nak(delay=delay_s)
        except _ERRORS as exc:
            raise QueueError(f"nak of stream message {self._msg.metadata.sequence.stream}: {exc!r}") from exc


@dataclass(frozen=True)
class Full:
    """A call JetStream refused for want of room: its size, when (time.monotonic), the stream's bytes then."""

    call_bytes: int
    at: float
    stream_bytes: int | None  # None when the stream could not be read then


class JetStreamBroker:
    """A Broker (queue/workers.py) on the nats-server at `url`."""

    def __init__(self, url: str, stream: str = STREAM, max_bytes: int = -1):
        self.url, self.stream, self.max_bytes = url, stream, max_bytes
        self._nc = self._js = self._sub = None
        self.full: Full | None = None  # the last call refused for room, until room comes back

    async def open(self, ack_wait_s: float, max_attempts: int) -> None:
        """Connect, make or update the stream, replace the consumer and subscribe to it."""
        try:
            self._nc = await nats.connect(self.url, name="faasgd-gateway", connect_timeout=CONNECT_S,
                                          max_reconnect_attempts=-1, reconnect_time_wait=0.5,
                                          error_cb=_log_error, disconnected_cb=_disconnected,
                                          reconnected_cb=_reconnected)
            self._js = self._nc.jetstream(timeout=REQUEST_S)
            await self._ensure_stream()
            await self._replace_consumer(ack_wait_s, max_attempts)
            self._sub = await self._js.pull_subscribe_bind(DURABLE, stream=self.stream)
        except _ERRORS as exc:
            await self.close()
            raise QueueError(f"JetStream at {self.url}: {exc!r}") from exc

    async def close(self) -> None:
        """Disconnect; unacked messages stay in the stream. Idempotent."""
        nc, self._nc = self._nc, None
        if nc is not None and not nc.is_closed:
            try:
                await nc.close()
            except _ERRORS as exc:
                log.warning("closing the connection to %s: %r", self.url, exc)

    async def publish(self, headers: dict[str, str], data: bytes) -> None:
        """Store a message; returns once the stream has it on disk (the server's PubAck)."""
        if self._js is None or self._nc is None:
            raise QueueUnavailable("the queue is not open")
        size = len(data) + len(b"NATS/1.0\r\n\r\n") + sum(len(k) + len(v) + 4 for k, v in headers.items())
        if size > self._nc.max_payload:  # checked here: nats-server drops a client that sends more
            raise QueueCallTooLarge(f"the call is {size} bytes with its headers; "
                                    f"the maximum payload is {self._nc.max_payload}")
        if not self._nc.is_connected:
            raise QueueUnavailable(f"nats-server at {self.url} is not connected (reconnecting)")
        try:
            await asyncio.wait_for(self._js.publish(SUBJECT, data, stream=self.stream, headers=headers,
                                                    timeout=PUBLISH_S), PUBLISH_S + 0.5)
        except nats.js.errors.ServiceUnavailableError as exc:
            self.full = Full(size, time.monotonic(), await self._stream_bytes())
            raise QueueUnavailable(f"JetStream at {self.url} has no room for the call (its max_file_store, "
                                   f"or the disk): {exc.description or exc!r}") from exc
        except _ERRORS as exc:
            raise QueueUnavailable(f"JetStream at {self.url} did not take the call within {PUBLISH_S:g}s: "
                                   f"{exc!r}") from exc
        self.full = None  # stored: there is room

    async def problem(self) -> str | None:
        """None while connected and JetStream answers within HEALTH_S; else what is wrong."""
        if self._js is None or self._nc is None or self._nc.is_closed:
            return "the queue is not open"
        if not self._nc.is_connected:
            return f"nats-server at {self.url} is not connected (reconnecting)"
        try:
            await asyncio.wait_for(self._js.account_info(), HEALTH_S)
        except _ERRORS as exc:
            return f"JetStream at {self.url} does not answer: {exc!r}"
        return await self._room_problem()

    async def _room_problem(self) -> str | None:
        """None unless a call was refused for room and the stream has not shrunk since (`full`)."""
        full = self.full
        if full is None:
            return None
        now = await self._stream_bytes()
        if full.stream_bytes is not None and now is not None and now < full.stream_bytes:
            self.full = None  # calls left the stream: room came back
            return None
        held = "" if now is None else f"; the stream holds {now:,} bytes"
        return (f"JetStream at {self.url} has no room for calls: it refused one of {full.call_bytes:,} bytes "
                f"{time.monotonic() - full.at:.0f}s ago (its max_file_store, or the disk){held}")

    async def _stream_bytes(self) -> int | None:
        """The stream's bytes now, or None when JetStream does not say within HEALTH_S."""
        try:
            return (await asyncio.wait_for(self._js.stream_info(self.stream), HEALTH_S)).state.bytes
        except _ERRORS:
            return None

    async def next(self) -> _Message | None:
        """The next message handed out, or None when none came within FETCH_S."""
        if self._sub is None or self._nc is None:
            raise QueueError("the queue is not open")
        try:
            messages = await self._sub.fetch(1, timeout=FETCH_S)
        except nats.errors.TimeoutError:
            return None
        except _ERRORS as exc:
            raise QueueError(f"JetStream at {self.url}: {exc!r}") from exc
        return _Message(messages[0]) if messages else None

    async def stored(self) -> int:
        if self._js is None or self._nc is None:
            raise QueueError("the queue is not open")
        try:
            return (await self._js.stream_info(self.stream)).state.messages
        except _ERRORS as exc:
            raise QueueError(f"JetStream at {self.url}: {exc!r}") from exc

    async def _ensure_stream(self) -> None:
        config = StreamConfig(name=self.stream, subjects=[SUBJECT], retention=RetentionPolicy.WORK_QUEUE,
                              storage=StorageType.FILE, discard=DiscardPolicy.NEW, max_bytes=self.max_bytes,
                              max_msg_size=-1,  # the server's max_payload bounds a message (broker.py)
                              duplicate_window=DUPLICATE_WINDOW_S)
        try:
            await self._js.stream_info(self.stream)
        except nats.js.errors.NotFoundError:
            await self._js.add_stream(config)
            return
        await self._js.update_stream(config)

    async def _replace_consumer(self, ack_wait_s: float, max_attempts: int) -> None:
        try:
            left = await self._js.consumer_info(self.stream, DURABLE)
            if left.num_ack_pending:
                log.info("%d call(s) left in flight by a previous runtime are delivered again now",
                         left.num_ack_pending)
            await self._js.delete_consumer(self.stream, DURABLE)
        except nats.js.errors.NotFoundError:
            pass
        await self._js.add_consumer(self.stream, ConsumerConfig(
            durable_name=DURABLE, ack_policy=AckPolicy.EXPLICIT, deliver_policy=DeliverPolicy.ALL,
            ack_wait=ack_wait_s, max_deliver=max_attempts, filter_subject=SUBJECT, max_ack_pending=-1))


async def _log_error(exc: Exception) -> None:
    log.warning("NATS: %r", exc)


async def _disconnected() -> None:
    log.info("NATS: disconnected")  # at close, or before a reconnect


async def _reconnected() -> None:
    log.info("NATS: reconnected")
