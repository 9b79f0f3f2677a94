"""The gateway's ASGI plumbing: streamed replica answers, default headers, and errors as JSON."""

from __future__ import annotations

import asyncio
from email.utils import formatdate

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from faasgd.errors import FaasgdError
from faasgd.local.gateway.limits import BODY_IDLE_TIMEOUT_S, MAX_DRAIN_BYTES
from faasgd.local.gateway.proxy import Forwarded, canonical

SERVER = "faasgd-local"


class ProxiedResponse(StreamingResponse):
    """A Forwarded answer streamed to the client; the call is closed (and counted) however it ends."""

    def __init__(self, forwarded: Forwarded):
        super().__init__(forwarded.chunks(), status_code=forwarded.status)
        self.raw_headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in forwarded.headers]
        self.forwarded = forwarded

    async def __call__(self, scope, receive, send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self.forwarded.close()


class WireHeaders:
    """ASGI middleware: header names as Go writes them (X-Call-Id, Content-Type), and Date and Server
    added where the answer has none (a function's own win, as in Go's server)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        async def send_on_the_wire(message) -> None:
            if message["type"] == "http.response.start":
                headers = [(canonical(k.decode("latin-1")).encode("latin-1"), v) for k, v in message.get("headers", [])]
                names = {k for k, _ in headers}
                headers += [] if b"Date" in names else [(b"Date", formatdate(usegmt=True).encode())]
                headers += [] if b"Server" in names else [(b"Server", SERVER.encode())]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_on_the_wire if scope["type"] == "http" else send)


class AnswerWhenCutOff:
    """ASGI middleware: a call cancelled before its answer started (the server is stopping) answers
    503 JSON; uvicorn would log a traceback and send a plain-text 500."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        started = False

        async def send_tracked(message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, send_tracked)
        except asyncio.CancelledError:
            if started or scope["type"] != "http":
                raise
            await error(503, "the gateway is stopping; the call was cut off", {"Connection": "close"})(
                scope, receive, send)


class OneBodyFraming:
    """ASGI middleware: a request carrying both Content-Length and Transfer-Encoding answers 400 JSON. HTTP/1.1
    lets a server take Transfer-Encoding (h11 does) or refuse (RFC 9112 6.1); a proxy in front that took
    Content-Length instead would see another request boundary (request smuggling), so neither is guessed."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        names = {k.lower() for k, _ in scope.get("headers", [])} if scope["type"] == "http" else set()
        if b"content-length" in names and b"transfer-encoding" in names:
            await error(400, "request: Content-Length and Transfer-Encoding given together; send one",
                        {"Connection": "close"})(scope, receive, send)
            return
        await self.app(scope, receive, send)


# -- errors --------------------------------------------------------------------------------------------
async def http_error(request: Request, exc: HTTPException) -> Response:
    """Starlette's 404 and 405 (and any other HTTPException) as JSON; Allow in a fixed order."""
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        headers["Allow"] = ", ".join(sorted(m.strip() for m in headers.get("Allow", "").split(",") if m.strip()))
        return error(405, f"method {request.method} not allowed on {request.url.path}", headers)
    if exc.status_code == 404:
        return error(404, f"not found: {request.url.path}", headers)
    return error(exc.status_code, str(exc.detail), headers)


async def client_gone(request: Request, exc: ClientDisconnect) -> Response:
    return error(400, "request body: the client disconnected before sending all of it")


async def body_refused(request: Request, exc: "BodyRefused") -> Response:
    """The 413 or 408 of a body refused before it was read whole; the connection closes unless uvicorn may drop the
    rest (a declared body of at most MAX_DRAIN_BYTES), so a client still sending it reads the answer."""
    return error(exc.http_status, str(exc), {"Connection": "close"} if exc.close else None)


async def server_error(request: Request, exc: Exception) -> Response:
    """A bug's 500 as JSON (Starlette re-raises the exception afterwards, so the server logs it)."""
    return error(500, f"gateway error: {type(exc).__name__}: {exc}")


def error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse({"error": message}, status, headers)


def too_large(limit: int, what: str) -> Response:
    """413, answered once `limit` bytes are exceeded. The connection stays open: uvicorn reads and
    drops the rest of the body, so a client still sending gets the answer instead of a reset."""
    return error(413, f"request body: at most {limit} bytes for {what}, got more")


class BodyRefused(FaasgdError):
    """Raised when a request's body is refused before it is read whole: its Content-Length is over the route's
    limit (413, nothing read) or no byte of it came for the idle timeout (408)."""

    def __init__(self, status: int, message: str, close: bool = True):
        self.http_status, self.close = status, close
        super().__init__(message)


async def read_body(request: Request, limit: int) -> bytes | None:
    """The request body, or None once it grows past `limit` bytes (the rest is left unread). BodyRefused when its
    Content-Length already says more than `limit`, or when no byte came for the app's body_idle_timeout_s."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyRefused(413, f"request body: at most {limit} bytes here, its Content-Length says {int(declared)}; "
                               f"nothing was read", close=int(declared) > MAX_DRAIN_BYTES)
    idle_s = getattr(request.app.state, "body_idle_timeout_s", BODY_IDLE_TIMEOUT_S)
    body, chunks = bytearray(), request.stream().__aiter__()
    while True:
        try:
            async with asyncio.timeout(idle_s):
                chunk = await chunks.__anext__()
        except StopAsyncIteration:
            return bytes(body)
        except TimeoutError:
            raise BodyRefused(408, f"request body: no byte came for {idle_s:g} s after {len(body)} bytes "
                                   f"(short of its Content-Length?); nothing was done") from None
        body += chunk
        if len(body) > limit:
            return None
