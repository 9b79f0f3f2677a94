"""What every queue broker must do (faasgd.local.queue.messages.Broker), as one suite of checks run
over the FakeBroker in unit tests and over JetStream on a real nats-server in integration tests.

Each check takes a `Harness`: `make()` a broker on the same store (a new owner), and `elapse(s)`
to let time pass (the fake advances its FakeClock; the real broker's next() simply waits).
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable, Protocol

import pytest

from faasgd.local.queue.errors import QueueError

HEADERS = {"Faasgd-Call": '{"call_id": "c1"}'}
NOTHING_S = 0.3  # how long "no further hand-out" is watched for


class Harness(Protocol):
    make: Callable[[], object]
    elapse: Callable[[float], Awaitable[None]]
    max_payload: int


async def nothing_comes(broker, harness) -> bool:
    waiting = asyncio.ensure_future(broker.next())
    await harness.elapse(NOTHING_S)
    done = waiting.done() and waiting.result() is not None
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    return not done


async def check_a_message_is_kept_until_acked(harness) -> None:
    broker = harness.make()
    await broker.open(ack_wait_s=30, max_attempts=3)
    try:
        await broker.publish(HEADERS, b"body")
        assert await broker.stored() == 1
        message = await broker.next()
        assert (message.headers["Faasgd-Call"], message.data, message.attempt) == (HEADERS["Faasgd-Call"], b"body", 1)
        assert await broker.stored() == 1  # handed out is not done
        await message.ack()
        assert await broker.stored() == 0
    finally:
        await broker.close()


async def check_an_unacked_message_comes_again_after_ack_wait_until_max_attempts(harness) -> None:
    broker = harness.make()
    await broker.open(ack_wait_s=1, max_attempts=2)
    try:
        await broker.publish(HEADERS, b"slow")
        first = await broker.next()
        await harness.elapse(1)
        again = await broker.next()
        assert (again.data, again.attempt, again.headers) == (b"slow", 2, first.headers)
        await harness.elapse(1)
        assert await nothing_comes(broker, harness)  # max_attempts reached
        await first.ack()  # the earlier hand-out's ack settles the message
        assert await broker.stored() == 0
        await again.ack()  # and a late ack of the copy is harmless
    finally:
        await broker.close()


async def check_a_nak_hands_the_message_out_after_its_delay(harness) -> None:
    broker = harness.make()
    await broker.open(ack_wait_s=30, max_attempts=5)
    try:
        await broker.publish(HEADERS, b"retry me")
        first = await broker.next()
        await first.nak(0.5)
        await harness.elapse(0.5)
        second = await broker.next()
        assert (second.data, second.attempt) == (b"retry me", 2)
        await second.ack()
        assert await broker.stored() == 0
    finally:
        await broker.close()


async def check_a_new_owner_gets_what_was_queued_and_in_flight_at_once(harness) -> None:
    old = harness.make()
    await old.open(ack_wait_s=30, max_attempts=3)
    for body in (b"in flight", b"queued"):
        await old.publish(HEADERS, body)
    assert (await old.next()).data == b"in flight"  # never acked: its owner dies
    await old.close()
    new = harness.make()
    await new.open(ack_wait_s=30, max_attempts=3)
    try:
        got = [await asyncio.wait_for(new.next(), 10) for _ in range(2)]
        assert [(m.data, m.attempt) for m in got] == [(b"in flight", 1), (b"queued", 1)]
        for message in got:
            await message.ack()
        assert await new.stored() == 0
    finally:
        await new.close()


async def check_a_message_over_the_payload_limit_is_refused(harness) -> None:
    broker = harness.make()
    await broker.open(ack_wait_s=30, max_attempts=1)
    try:
        await broker.publish(HEADERS, b"x" * (1 << 20))  # the async body limit fits, headers and all
        with pytest.raises(QueueError, match="payload"):
            await broker.publish(HEADERS, b"x" * harness.max_payload)
        assert await broker.stored() == 1
    finally:
        await broker.close()


async def check_a_message_id_is_stored_once(harness) -> None:
    broker = harness.make()
    await broker.open(ack_wait_s=30, max_attempts=1)
    try:
        for body in (b"first", b"resent"):  # a client that got no answer sends the call again, same id
            await broker.publish({**HEADERS, "Nats-Msg-Id": "call-1"}, body)
        await broker.publish({**HEADERS, "Nats-Msg-Id": "call-2"}, b"other")
        assert await broker.stored() == 2
        got = [await asyncio.wait_for(broker.next(), 10) for _ in range(2)]
        assert [m.data for m in got] == [b"first", b"other"]
        for message in got:
            await message.ack()
    finally:
        await broker.close()


async def check_problem_is_none_while_the_broker_takes_calls(harness) -> None:
    broker = harness.make()
    await broker.open(ack_wait_s=30, max_attempts=1)
    try:
        assert await broker.problem() is None
    finally:
        await broker.close()


CHECKS = [check_a_message_is_kept_until_acked,
          check_an_unacked_message_comes_again_after_ack_wait_until_max_attempts,
          check_a_nak_hands_the_message_out_after_its_delay,
          check_a_new_owner_gets_what_was_queued_and_in_flight_at_once,
          check_a_message_over_the_payload_limit_is_refused,
          check_a_message_id_is_stored_once,
          check_problem_is_none_while_the_broker_takes_calls]
