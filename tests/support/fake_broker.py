"""A fake of the queue's broker (faasgd.local.queue.messages.Broker) for in-process unit tests.

It keeps JetStream's semantics as the runtime uses them (queue/jetstream.py), in memory and
timed by a FakeClock: a work-queue stream (a message stays until acked), one consumer that hands a
message out again after ack_wait or after a nak's delay (at most max_attempts hand-outs), and an
`open` that replaces the consumer (what is unacked is handed out again at once, counts from 1), and one
message per MESSAGE_ID (JetStream's duplicate window, here for ever).
The same contract (support/broker_contract.py) runs over this fake and over a real nats-server.
"""

from __future__ import annotations

import asyncio
import itertools

from faasgd.local.queue.errors import QueueCallTooLarge, QueueUnavailable
from faasgd.local.queue.messages import MESSAGE_ID
from faasgd.local.services.broker import DEFAULT_MAX_PAYLOAD


class FakeMessage:
    def __init__(self, broker: FakeBroker, seq: int, attempt: int):
        self._broker, self.seq, self.attempt = broker, seq, attempt
        self.headers, self.data = broker.messages[seq]

    async def ack(self) -> None:
        self._broker.check_answering("ack")
        self._broker.acked(self.seq)

    async def nak(self, delay_s: float) -> None:
        self._broker.check_answering("nak")
        self._broker.hand_out_later(self.seq, delay_s)


class FakeBroker:
    def __init__(self, clock, max_payload: int = DEFAULT_MAX_PAYLOAD):
        self.clock, self.max_payload = clock, max_payload
        self.messages: dict[int, tuple[dict[str, str], bytes]] = {}  # the stream: sequence -> (headers, data)
        self.refuse: str | None = None  # set to make publish() fail with this reason (QueueUnavailable)
        self.down: str | None = None  # set to make problem() report this
        self.timing_out: str | None = None  # set to make ack, nak and stored() time out (QueueUnavailable) as a
        # JetStream request does when the broker's disk is full or it restarts with requests in flight
        self._ids: set[str] = set()  # the MESSAGE_IDs stored (JetStream keeps them for its duplicate window)
        self.opened = 0
        self._seqs = itertools.count(1)
        self._ready: list[int] = []
        self._handed_out: dict[int, int] = {}  # sequence -> hand-outs by the current consumer
        self._timers: dict[int, asyncio.Task] = {}  # sequence -> its ack_wait or nak timer
        self._arrived = asyncio.Condition()
        self.ack_wait_s, self.max_attempts = 30.0, 1

    async def open(self, ack_wait_s: float, max_attempts: int) -> None:
        self._drop_timers()
        self.ack_wait_s, self.max_attempts = ack_wait_s, max_attempts
        self._handed_out.clear()
        self._ready = sorted(self.messages)  # a fresh consumer: everything unacked, from the start
        self.opened += 1

    async def close(self) -> None:
        self._drop_timers()

    async def publish(self, headers: dict[str, str], data: bytes) -> None:
        size = len(data) + sum(len(k) + len(v) + 4 for k, v in headers.items())
        if self.refuse:
            raise QueueUnavailable(self.refuse)
        if size > self.max_payload:
            raise QueueCallTooLarge("nats: maximum payload exceeded")
        message_id = headers.get(MESSAGE_ID)
        if message_id is not None and message_id in self._ids:
            return  # a duplicate: acknowledged, not stored again
        self._ids.add(message_id)
        seq = next(self._seqs)
        self.messages[seq] = (dict(headers), bytes(data))
        await self._make_ready(seq)

    async def next(self) -> FakeMessage:
        async with self._arrived:
            await self._arrived.wait_for(lambda: self._ready)
            seq = self._ready.pop(0)
        attempt = self._handed_out[seq] = self._handed_out.get(seq, 0) + 1
        self._timer(seq, self.ack_wait_s)
        return FakeMessage(self, seq, attempt)

    async def stored(self) -> int:
        self.check_answering("stored")
        return len(self.messages)

    def check_answering(self, what: str) -> None:
        if self.timing_out:
            raise QueueUnavailable(f"nats: timeout ({what}): {self.timing_out}")

    async def problem(self) -> str | None:
        return self.down

    # -- the consumer's bookkeeping ----------------------------------------------------------------
    def acked(self, seq: int) -> None:
        """Acking any hand-out of a message deletes it (JetStream acks by stream sequence)."""
        self.messages.pop(seq, None)
        self._cancel(seq)

    def hand_out_later(self, seq: int, delay_s: float) -> None:
        if seq in self.messages:
            self._timer(seq, delay_s)

    def _timer(self, seq: int, seconds: float) -> None:
        self._cancel(seq)
        if self._handed_out.get(seq, 0) < self.max_attempts:  # max_deliver: no hand-out past it
            self._timers[seq] = asyncio.create_task(self._after(seq, seconds))

    async def _after(self, seq: int, seconds: float) -> None:
        await self.clock.sleep(seconds)
        self._timers.pop(seq, None)
        if seq in self.messages:
            await self._make_ready(seq)

    async def _make_ready(self, seq: int) -> None:
        async with self._arrived:
            if seq not in self._ready:
                self._ready.append(seq)
            self._arrived.notify_all()

    def _cancel(self, seq: int) -> None:
        timer = self._timers.pop(seq, None)
        if timer is not None and timer is not asyncio.current_task():
            timer.cancel()

    def _drop_timers(self) -> None:
        for seq in list(self._timers):
            self._cancel(seq)
