"""Fake function replicas, a fake registry and a callback recorder, all small ASGI apps.

Unit tests reach the apps in-process through `RoutingTransport` (an httpx transport that picks the
app by host, so no socket is opened); integration tests serve the same apps on loopback with
`support.asgi_server.serve`. A FakeReplica answers JSON {method, path, query, headers, body,
replica} and can be told to answer a status, to hold calls until released, to hang up, or to be
dead (refusing connections; RoutingTransport only).
"""

from __future__ import annotations

import asyncio
import json
from urllib.parse import urlsplit

import httpx

from faasgd.local.api import clamp_replicas


class HangUp(Exception):
    """Raised by a FakeReplica told to hang up; RoutingTransport turns it into a dropped connection."""


async def _read_body(receive) -> bytes:
    body, more = b"", True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    return body


class FakeReplica:
    """An echo replica; `calls` records what it received (header names lower-cased, as ASGI gives them)."""

    def __init__(self, name: str):
        self.name, self.url = name, f"http://{name}.replicas.test"  # integration tests set the served URL
        self.status, self.hold, self.hang_up, self.dead = 200, False, False, False
        self.calls: list[dict] = []
        self._arrivals = asyncio.Condition()
        self._gate: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def __call__(self, scope, receive, send) -> None:
        body = await _read_body(receive)
        record = {"method": scope["method"], "path": scope["raw_path"].decode(), "body": body.decode(),
                  "query": scope["query_string"].decode(), "replica": self.name,
                  "headers": {k.decode(): v.decode() for k, v in scope["headers"]}}
        self.calls.append(record)
        async with self._arrivals:
            self._arrivals.notify_all()
        if self.hang_up:
            raise HangUp(self.name)
        if self.hold:
            await self._held().wait()
        payload = json.dumps(record).encode()
        await send({"type": "http.response.start", "status": self.status,
                    "headers": [(b"content-type", b"application/json"), (b"x-replica", self.name.encode()),
                                (b"content-length", str(len(payload)).encode())]})
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else payload})

    async def arrived(self, count: int) -> None:
        """Wait until `count` calls have arrived (on the event loop serving this replica)."""
        async with self._arrivals:
            await self._arrivals.wait_for(lambda: len(self.calls) >= count)

    def release(self) -> None:
        """Let held calls answer, and stop holding; callable from any thread."""
        self.hold = False
        if self._gate is not None:
            self._loop.call_soon_threadsafe(self._gate.set)

    def _held(self) -> asyncio.Event:
        if self._gate is None:
            self._gate, self._loop = asyncio.Event(), asyncio.get_running_loop()
        return self._gate


class FakeRegistry:
    """The gateway's Registry over FakeReplicas; `total` overrides call_slots() (one per replica)."""

    def __init__(self, **functions: list[FakeReplica]):
        self.functions = dict(functions)
        self.total: int | None = None
        self.scaled: list[tuple[str, int]] = []

    def function_names(self) -> list[str]:
        return list(self.functions)

    def describe(self, name: str) -> dict | None:
        if name not in self.functions:
            return None
        n = len(self.functions[name])
        return {"name": name, "image": f"{name}:latest", "replicas": n, "availableReplicas": n,
                "labels": {}, "envProcess": "python index.py", "namespace": "openfaas-fn"}

    def replica_urls(self, name: str) -> list[str]:
        return [r.url for r in self.functions.get(name, [])]

    def starting(self, name: str) -> bool:
        return False  # every replica here serves from the start

    def calls_per_replica(self, name: str) -> int:
        return 4  # the template's waitress threads

    def scale(self, name: str, replicas: int) -> int:
        self.scaled.append((name, clamp_replicas(replicas, 5)))
        return self.scaled[-1][1]

    def call_slots(self) -> int:
        return self.total if self.total is not None else sum(len(r) for r in self.functions.values())


class CallbackRecorder:
    """Records POSTed callbacks as (lower-cased headers, body) and answers 200."""

    def __init__(self, url: str = "http://callbacks.test/done"):
        self.url = url
        self.received: list[tuple[dict[str, str], bytes]] = []
        self._taken = 0
        self._arrivals = asyncio.Condition()

    async def __call__(self, scope, receive, send) -> None:
        body = await _read_body(receive)
        self.received.append(({k.decode(): v.decode() for k, v in scope["headers"]}, body))
        async with self._arrivals:
            self._arrivals.notify_all()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})

    async def next(self) -> tuple[dict[str, str], bytes]:
        """The next callback not yet taken, waiting for it (on the event loop serving this recorder)."""
        async with self._arrivals:
            await self._arrivals.wait_for(lambda: len(self.received) > self._taken)
        self._taken += 1
        return self.received[self._taken - 1]


class RoutingTransport(httpx.AsyncBaseTransport):
    """Sends each request to the app whose `url` has its host; an unknown or dead host refuses it."""

    def __init__(self, *apps):
        self.apps = {}
        for app in apps:
            self.add(app)

    def add(self, app) -> None:
        self.apps[urlsplit(app.url).netloc] = app

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        app = self.apps.get(request.url.netloc.decode())
        if app is None or getattr(app, "dead", False):
            raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
        try:
            return await httpx.ASGITransport(app).handle_async_request(request)
        except HangUp:
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)
