"""The gateway's limits on a request's head and body, each answered with its own 4xx as JSON, never a 500 or silence.

    URL (path and query)        MAX_URL_BYTES       414, before any route
    header fields               MAX_HEADERS         431, before any route
    header bytes (names+values) MAX_HEADER_BYTES    431, before any route
    a head sent in pieces       MAX_HEAD_BYTES      414 (its request line had not ended) or 431 (server.JsonErrorsH11)
    a declared Content-Length   the route's limit   413 at once, nothing read (responses.py); past MAX_DRAIN_BYTES the
                                                    connection closes, below uvicorn drops the rest and it goes on
    a body that stops coming    body_idle_timeout_s 408 once no byte came for that long, the connection closed

Body limits per route are the gateway's options (max_sync_body_bytes, max_async_body_bytes) and /system's own.
Go's server, which CE's gateway runs on, takes up to 1 MB of headers and sets no URL limit of its own; these are
lower because no OpenFaaS client sends more: a job id is 16 characters, a callback URL at most 2048.
"""

from __future__ import annotations

from starlette.responses import JSONResponse

MAX_URL_BYTES = 8192  # path and query string, as sent (percent-encoded)
MAX_HEADERS = 100  # header fields of one request
MAX_HEADER_BYTES = 16384  # every header's name and value, with ": " and CRLF
MAX_HEAD_BYTES = MAX_URL_BYTES + MAX_HEADER_BYTES + 1024  # what h11 buffers of a head still incomplete
MAX_DRAIN_BYTES = 64 << 20  # a refused body declared up to this is read and dropped, so its client reads the 413
BODY_IDLE_TIMEOUT_S = 10.0  # the default of GatewayOptions.body_idle_timeout_s


def head_problem(scope: dict) -> tuple[int, str] | None:
    """(status, message) when the request's URL or headers are over their limits; None when they are within."""
    url = len(scope.get("raw_path") or scope.get("path", "").encode()) + len(scope.get("query_string") or b"")
    if url > MAX_URL_BYTES:
        return 414, f"request: the URL (path and query) is {url} bytes, at most {MAX_URL_BYTES}"
    headers = scope.get("headers") or []
    if len(headers) > MAX_HEADERS:
        return 431, f"request: {len(headers)} header fields, at most {MAX_HEADERS}"
    size = sum(len(name) + len(value) + 4 for name, value in headers)
    if size > MAX_HEADER_BYTES:
        return 431, f"request: the header fields take {size} bytes, at most {MAX_HEADER_BYTES}"
    return None


class HeadLimits:
    """ASGI middleware: a request whose URL or headers are over the limits answers 414 or 431 JSON and closes;
    nothing behind it (auth, routes, replicas) sees the request."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        problem = head_problem(scope) if scope["type"] == "http" else None
        if problem is None:
            await self.app(scope, receive, send)
            return
        status, message = problem
        await JSONResponse({"error": message}, status, {"Connection": "close"})(scope, receive, send)
