"""What travels through the async queue: the call a broker keeps (AsyncCall, as one broker message), the answer a
delivery gets (Reply), and what the queue needs of a broker (Broker, handing out Messages).

The rules a broker must keep are the queue-worker's (faasgd.local.queue.workers); JetStream is one broker
(queue/jetstream.py), tests/support/fake_broker.py another.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Protocol

CALL_HEADER = "Faasgd-Call"  # the message header holding the call's JSON (its body is the message's data)
MESSAGE_ID = "Nats-Msg-Id"  # the call's id: a broker stores a message once per id (JetStream's de-duplication)


@dataclass
class AsyncCall:
    """One accepted /async-function request: what the broker keeps and the queue delivers."""

    name: str
    method: str
    path: str  # suffix after /async-function/NAME, "" or "/..."
    query: str
    headers: list[tuple[str, str]]
    body: bytes
    call_id: str
    callback_url: str | None = None
    accepted_at: float = field(default_factory=time.time)

    def to_message(self) -> tuple[dict[str, str], bytes]:
        """Headers and data of the broker message: the body travels as the data, unencoded."""
        meta = {"name": self.name, "method": self.method, "path": self.path, "query": self.query,
                "headers": self.headers, "call_id": self.call_id, "callback_url": self.callback_url,
                "accepted_at": self.accepted_at}
        return {CALL_HEADER: json.dumps(meta), MESSAGE_ID: self.call_id}, self.body

    @classmethod
    def from_message(cls, headers: dict[str, str], data: bytes) -> AsyncCall:
        """The call a message holds; raises ValueError or KeyError for a message that is not one."""
        meta = json.loads(headers[CALL_HEADER])
        return cls(meta["name"], meta["method"], meta["path"], meta["query"],
                   [(str(k), str(v)) for k, v in meta["headers"]], data, meta["call_id"], meta["callback_url"],
                   meta["accepted_at"])


class Message(Protocol):
    """One hand-out of a stored call."""

    headers: dict[str, str]
    data: bytes
    attempt: int  # 1 for the first hand-out; redeliveries and retries count on

    async def ack(self) -> None: ...  # done: remove it from the broker (confirmed before returning)
    async def nak(self, delay_s: float) -> None: ...  # hand it out again after delay_s


class Broker(Protocol):
    async def open(self, ack_wait_s: float, max_attempts: int) -> None: ...
    async def close(self) -> None: ...
    async def publish(self, headers: dict[str, str], data: bytes) -> None: ...  # raises QueueError
    async def next(self) -> Message | None: ...  # None: nothing came within the broker's own poll
    async def stored(self) -> int: ...  # messages kept: queued, in flight or waiting for a retry
    async def problem(self) -> str | None: ...  # None while it can take calls; else why not (/healthz)


Headers = list[tuple[str, str]]


@dataclass
class Reply:
    """A call's whole answer, as the queue-worker reads it."""

    status: int
    headers: Headers  # the function's response headers, hop-by-hop ones and Content-Length removed
    body: bytes
    error: str | None = None  # set when the gateway answered because the function gave no response
    replica: str | None = None  # base URL of the replica that answered
    seconds: float = 0.0
