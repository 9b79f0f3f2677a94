"""Forwarding calls to function replicas over one pooled httpx.AsyncClient per gateway.

Where this departs from OpenFaaS CE, and why:
* Load balancing: each call goes to the replica with the fewest calls in flight, ties taken
  round-robin, so a long training call never queues behind another (Kubernetes Services pick at
  random). No failover: a replica that refuses the connection gives 502, as in CE.
* The upstream timeout bounds the whole call, as CE's request context does; expiring before the
  response headers answers 504 JSON (CE's gateway answers 502 when its own upstream_timeout fires;
  of-watchdog's exec_timeout gives 504), expiring while the body streams back cuts the connection.
  No healthy replica or a refused/reset connection answers 502 JSON (CE's provider says 503 / 500).
* Request bodies are read whole first and sent with a Content-Length (a chunked request arrives
  de-chunked); responses stream back as they come, with the replica's Content-Length if it sent one.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import AsyncIterator, Callable

import anyio
import httpx

from faasgd.local.clock import Clock
from faasgd.local.gateway.metrics import Metrics
from faasgd.local.queue.messages import Headers, Reply

HOP_BY_HOP = frozenset({"connection", "proxy-connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                        "te", "trailer", "transfer-encoding", "upgrade"})
STAMPS = frozenset({"x-call-id", "x-start-time", "x-served-by", "x-duration-seconds"})  # the gateway sets these
RETRYABLE = frozenset({502, 503, 504})  # no replica / replica died / upstream timeout
# No pool limit: every call in flight needs its own connection (a training call holds one for
# minutes); idle connections expire before a replica's own idle timeout can race a new request.
LIMITS = httpx.Limits(max_connections=None, max_keepalive_connections=64, keepalive_expiry=5.0)



class Balancer:
    """Least calls in flight per replica URL; ties go round-robin, per function. Event loop only."""

    def __init__(self) -> None:
        self._in_flight: Counter[str] = Counter()
        self._turn: Counter[str] = Counter()

    def acquire(self, function: str, urls: list[str]) -> str:
        turn = self._turn[function] % len(urls)
        self._turn[function] += 1
        url = min(urls[turn:] + urls[:turn], key=lambda u: self._in_flight[u])  # first of the least busy
        self._in_flight[url] += 1
        return url

    def release(self, url: str) -> None:
        self._in_flight[url] -= 1
        if self._in_flight[url] <= 0:
            del self._in_flight[url]

    def in_flight(self, url: str) -> int:
        return self._in_flight.get(url, 0)

    def busy(self) -> set[str]:
        """The replica URLs with a call in flight now (a copy: any thread may ask)."""
        return set(dict(self._in_flight))


@dataclass(frozen=True)
class Upstream:
    """A replica's response still streaming back, read within the call's upstream deadline on `clock`."""

    response: httpx.Response
    deadline: float
    clock: Clock


class Forwarded:
    """One call's answer as it streams back: the replica's response (`upstream`), or the gateway's own JSON error
    (`body`).

    `close()` must follow (it frees the replica, closes the connection and counts the call).
    """

    def __init__(self, status: int, headers: Headers, *, body: bytes = b"", upstream: Upstream | None = None,
                 replica: str | None = None, error: str | None = None,
                 on_close: Callable[[int], float] | None = None):
        self.status, self.headers, self.replica, self.error = status, headers, replica, error
        self._body, self._upstream = body, upstream
        self._response = upstream.response if upstream is not None else None
        self._on_close, self.seconds = on_close, None

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body, raw as the replica sent it; raises TimeoutError past the upstream deadline."""
        if self._response is None:
            yield self._body
            return
        stream, clock = self._response.aiter_raw(), self._upstream.clock
        while True:
            async with clock.timeout(max(0.0, self._upstream.deadline - clock.now())):
                chunk = await anext(stream, None)
            if chunk is None:
                return
            yield chunk

    async def close(self) -> float:
        """Free the replica and count the call (once); returns its seconds."""
        if self.seconds is None:
            self.seconds = self._on_close(self.status) if self._on_close else 0.0
            if self._response is not None:
                with anyio.CancelScope(shield=True):
                    await self._response.aclose()
        return self.seconds


class Proxy:
    """Sends calls to the least busy replica and counts them in the metrics."""

    def __init__(self, client: httpx.AsyncClient, metrics: Metrics, clock: Clock, timeout_s: float):
        self.client, self.metrics, self.clock, self.timeout_s = client, metrics, clock, timeout_s
        self.balancer = Balancer()
        self._timeouts = httpx.Timeout(timeout_s).as_dict()

    async def open(self, function: str, urls: list[str], method: str, path: str, query: str, headers: Headers,
                   body: bytes) -> Forwarded:
        """Forward one call and return once the response headers are in (or the call failed)."""
        self.metrics.started(function)
        began = self.clock.now()
        if not urls:
            return self._failed(function, began, 502, f"no healthy replica of function {function}")
        url = self.balancer.acquire(function, urls)
        raw_path = (path or "/") + (f"?{query}" if query else "")  # as received: still percent-encoded
        target = httpx.URL(url).copy_with(raw_path=raw_path.encode("latin-1"))
        request = httpx.Request(method, target, headers=headers, content=body, extensions={"timeout": self._timeouts})
        try:
            async with self.clock.timeout(self.timeout_s):
                response = await self.client.send(request, stream=True)
        except (TimeoutError, httpx.TimeoutException):
            self.balancer.release(url)
            return self._failed(function, began, 504, f"function {function} did not answer within the upstream "
                                                      f"timeout of {self.timeout_s:g}s", url)
        except httpx.TransportError as exc:
            self.balancer.release(url)
            return self._failed(function, began, 502, f"cannot reach function {function} at {url}: "
                                                      f"{type(exc).__name__}: {exc}", url)
        except BaseException:
            self.balancer.release(url)
            raise
        return Forwarded(response.status_code, response_headers(response), replica=url,
                         upstream=Upstream(response, began + self.timeout_s, self.clock),
                         on_close=lambda status: self._count(function, status, began, url))

    async def call(self, function: str, urls: list[str], method: str, path: str, query: str, headers: Headers,
                   body: bytes) -> Reply:
        """Forward one call and read its whole answer within the upstream timeout."""
        forwarded = await self.open(function, urls, method, path, query, headers, body)
        try:
            data = b"".join([chunk async for chunk in forwarded.chunks()])
        except TimeoutError:
            data = self._fail(forwarded, 504, f"function {function} did not finish its answer within the "
                                              f"upstream timeout of {self.timeout_s:g}s")
        except httpx.TransportError as exc:
            data = self._fail(forwarded, 502, f"function {function} broke off its answer: "
                                              f"{type(exc).__name__}: {exc}")
        finally:
            seconds = await forwarded.close()
        kept = [(k, v) for k, v in forwarded.headers if k.lower() != "content-length"]
        return Reply(forwarded.status, kept, data, forwarded.error, forwarded.replica, seconds)

    @staticmethod
    def _fail(forwarded: Forwarded, status: int, error: str) -> bytes:
        failed = error_reply(status, error)
        forwarded.status, forwarded.headers, forwarded.error = status, failed.headers, error
        return failed.body

    def _failed(self, function: str, began: float, status: int, error: str, url: str | None = None) -> Forwarded:
        reply = error_reply(status, error)
        return Forwarded(status, reply.headers, body=reply.body, replica=url, error=error,
                         on_close=lambda code: self._count(function, code, began))

    def _count(self, function: str, status: int, began: float, url: str | None = None) -> float:
        if url is not None:
            self.balancer.release(url)
        seconds = self.clock.now() - began
        self.metrics.completed(function, status, seconds)
        return seconds


def error_reply(status: int, message: str, headers: Headers = ()) -> Reply:
    """The gateway's own answer: JSON {"error": message}."""
    body = json.dumps({"error": message}).encode()
    return Reply(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body))), *headers],
                 body, error=message)


def response_headers(response: httpx.Response) -> Headers:
    """The replica's headers minus hop-by-hop ones and the gateway's stamps."""
    dropped = HOP_BY_HOP | STAMPS | connection_tokens(response.headers.get("connection"))
    return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.headers.raw
            if k.decode("latin-1").lower() not in dropped]


def canonical(name: str) -> str:
    """A header name as Go writes it (textproto.CanonicalMIMEHeaderKey): x-call-id -> X-Call-Id.

    CE's gateway is Go, so clients and functions see these names; some read them case-sensitively.
    """
    return "-".join(part[:1].upper() + part[1:].lower() for part in name.split("-"))


def connection_tokens(value: str | None) -> set[str]:
    """Header names listed in a Connection header (hop-by-hop by declaration)."""
    return {token.strip().lower() for token in (value or "").split(",") if token.strip()}
