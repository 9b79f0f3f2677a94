#!/usr/bin/env python
"""The platform shim of the python3-http-faasgd template: Flask served by waitress.

of-watchdog (mode=http) forwards every request to 127.0.0.1:5000; this app hands it to
`function.handler.handle(event, context)` for any method on any path. Failures are always
JSON, never an HTML page:
  * an exception with an integer `http_status` (4xx/5xx) -> that status,
    {"error": str(exc), "field": exc.field} ("field" only when the exception has one);
  * any other exception -> 500 {"error": "internal error", "call_id": X-Call-Id or null},
    with the traceback on stderr only;
  * HTTP errors of Flask itself (404, 405, 413 above max_request_bytes) -> JSON too.
Environment: upstream_url (where of-watchdog forwards calls: this app listens on its host and port,
127.0.0.1:5000 as the Dockerfile sets it; `port` is the watchdog's own listener, never read here),
waitress_threads (4), max_request_bytes (1 MiB), log_level (INFO: the function's log lines on stderr).
"""

import json
import logging
import os
import sys
import traceback
from urllib.parse import urlsplit

from flask import Flask, Response, jsonify, request
from waitress import serve
from werkzeug.exceptions import HTTPException

from function import handler

# The function's own log lines (e.g. a worker's epochs) go to stderr: the container's log, which
# `faas-cli logs` / `kubectl logs` (and `faasgd logs` locally) show.
logging.basicConfig(level=os.getenv("log_level", "INFO"), stream=sys.stderr,
                    format="%(asctime)s %(levelname)s %(name)s: %(message)s")

METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
MAX_REQUEST_BYTES = int(os.getenv("max_request_bytes", "1048576"))

app = Flask(__name__)
app.config["MAX_CONTENT_LENGTH"] = MAX_REQUEST_BYTES  # werkzeug raises 413 on reading a larger body


class InvalidBody(ValueError):
    """Raised when the request body is not valid JSON but the handler asked for JSON."""

    http_status = 400
    field = "body"


class Event:
    """The request as the handler sees it."""

    def __init__(self):
        self.body = request.get_data()  # bytes
        self.headers = request.headers  # case-insensitive
        self.method = request.method
        self.query = request.args  # multi-dict of the query string
        self.path = request.path

    def json(self):
        """The body parsed as JSON; {} for an empty body; InvalidBody (400) when malformed."""
        if not self.body.strip():
            return {}
        try:
            return json.loads(self.body)
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
            raise InvalidBody(f"body: invalid JSON ({exc})") from None


class Context:
    """Where the handler runs."""

    def __init__(self):
        self.hostname = os.getenv("HOSTNAME", "localhost")


def to_response(result):
    """The handler's result as a Flask response: dict/list bodies become JSON."""
    if result is None:
        return Response(b"", 200)
    if not isinstance(result, dict):
        return result  # str, bytes, tuple or Response: Flask's own rules
    status = result.get("statusCode", 200)
    body = result.get("body", "")
    if isinstance(body, (dict, list)):
        response = jsonify(body)
    elif isinstance(body, (bytes, bytearray)):
        response = Response(bytes(body), mimetype="application/octet-stream")
    else:
        response = Response(str(body), mimetype="text/plain")
    response.status_code = status
    headers = result.get("headers") or {}
    for key, value in headers.items() if isinstance(headers, dict) else headers:
        response.headers[key] = value
    return response


def error_response(status, payload):
    response = jsonify(payload)
    response.status_code = status
    return response


def log_exception(exc):
    call_id = request.headers.get("X-Call-Id", "none")
    print(f"{request.method} {request.path} [{call_id}] failed:", file=sys.stderr)
    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    sys.stderr.flush()


@app.errorhandler(Exception)
def on_error(exc):
    if isinstance(exc, HTTPException):
        if exc.code == 413:
            message = f"body: request body larger than max_request_bytes={MAX_REQUEST_BYTES}"
            return error_response(413, {"error": message, "field": "body"})
        response = error_response(exc.code, {"error": f"{exc.name}: {exc.description}"})
        if getattr(exc, "valid_methods", None):  # 405 names the allowed methods
            response.headers["Allow"] = ", ".join(exc.valid_methods)
        return response
    status = getattr(exc, "http_status", None)
    if isinstance(status, int) and not isinstance(status, bool) and 400 <= status <= 599:
        if status >= 500:
            log_exception(exc)
        payload = {"error": str(exc)}
        if getattr(exc, "field", None) is not None:
            payload["field"] = exc.field
        return error_response(status, payload)
    log_exception(exc)
    return error_response(500, {"error": "internal error", "call_id": request.headers.get("X-Call-Id")})


@app.route("/", defaults={"path": ""}, methods=METHODS)
@app.route("/<path:path>", methods=METHODS)
def call_handler(path):
    return to_response(handler.handle(Event(), Context()))


if __name__ == "__main__":
    upstream = urlsplit(os.getenv("upstream_url") or "http://127.0.0.1:5000")
    serve(
        app,
        host=upstream.hostname or "127.0.0.1",  # only the watchdog, beside us in the pod, calls us
        port=upstream.port or 5000,
        threads=int(os.getenv("waitress_threads", "4")),
    )
