#!/usr/bin/env python
"""The platform shim of the python3-http-faasgd template: Flask served by waitress behind of-watchdog.

of-watchdog (mode=http) forwards every request to `upstream_url`; this app hands it to
`function.handler.handle(event, context)` for any method on any path. What it adds to OpenFaaS's
python3-http template, and why (OPENFAAS.md 1.8; of-watchdog's executor/http_runner.go):
* Readiness. The watchdog answers before the function listens (an empty 500 in between). So the socket
  comes first: inherited from bootstrap.py (fd 3, LISTEN_FDS=1: bound before the watchdog started),
  else bound here before anything heavy; calls wait in its backlog while the handler's imports load.
  The function owns the readiness lock (`/tmp/.lock`: the stack sets suppress_lock=true, and faas-netes
  probes `cat /tmp/.lock` or `/_/health`, which checks it): written once the handler is imported,
  removed on SIGTERM. `/_/ready` (the stack's ready_path) answers the same.
* Deadlines. A call must answer within min(exec_timeout, write_timeout, X-Timeout) of its start. The
  handler sees `context.deadline` (time.monotonic, 1.5 s before that) and `context.draining()`; if it
  has not answered 0.5 s before the deadline, this answers a JSON 504 (the watchdog's would be empty)
  while the handler goes on to its next safe point.
* SIGTERM. The watchdog forwards it at once. Readiness goes, `context.draining()` turns True (faasgd
  hands its training over at the next push), calls are still served through the watchdog's own
  `healthcheck_interval`, and once none is running this process exits 0 (a non-zero exit would make
  the watchdog exit 1).
* Bodies. event.json(): JSON (application/json, text/plain or no type: `faas-cli invoke` sends
  text/plain), or a form (application/x-www-form-urlencoded; values are strings; a body starting
  with { or [ is JSON whatever its label, since `curl -d` labels JSON a form); anything else 415.
  Invalid or too deeply nested JSON is a 400 on `body`; so is a key given twice (JSON or form: which
  one counts would depend on the parser) or a form field without a name.
* Errors are always JSON: an exception with an integer `http_status` keeps it (with `field`, and
  `Allow` for one with `allow`); anything else is a 500 {"error": "internal error", "call_id"}, the
  traceback on stderr only; Flask's own 404/405/413 too (a method no route serves: 405 naming it),
  and waitress's own answers to requests it cannot parse (bare CR or LF in a header, a bad
  Content-Length or chunk size, a bad start line, Content-Length beside Transfer-Encoding).
  A message quoting an oversize value is cut.
Environment: upstream_url, exec_timeout, write_timeout, healthcheck_interval (the watchdog's, only
read), waitress_threads (4), max_request_bytes (1 MiB), log_level (INFO).
"""

import contextlib
import importlib
import json
import logging
import os
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback
from urllib.parse import parse_qsl, urlsplit

from flask import Flask, Response, jsonify, request
from waitress import create_server
from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser, ParsingError
from waitress.task import ErrorTask
from werkzeug.exceptions import HTTPException

# The function's log lines (e.g. a worker's epochs) go to stderr: the container's log.
logging.basicConfig(level=os.getenv("log_level", "INFO"), stream=sys.stderr,
                    format="%(asctime)s %(levelname)s %(name)s: %(message)s")

METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
MAX_REQUEST_BYTES = int(os.getenv("max_request_bytes", "1048576"))
LOCK = os.path.join(tempfile.gettempdir(), ".lock")  # where of-watchdog and faas-netes look
JSON_TYPES = ("", "application/json", "text/plain")
FORM_TYPE = "application/x-www-form-urlencoded"
MAX_MESSAGE = 1000  # characters of an error message; the rest (an oversize value it quotes) is cut

app = Flask(__name__)
app.config["MAX_CONTENT_LENGTH"] = MAX_REQUEST_BYTES  # werkzeug raises 413 on reading a larger body
state = {"handler": None, "ready": threading.Event(), "draining": threading.Event(), "running": 0,
         "lock": threading.Lock(), "sigterm_at": None,
         "traced": lambda headers: contextlib.nullcontext(), "end_tracing": lambda: None}  # start_tracing sets these


class BadRequest(ValueError):
    """Raised when the request body cannot be read as the handler asked."""

    def __init__(self, message, status=400, field="body"):
        super().__init__(message)
        self.http_status, self.field = status, field


def seconds(value, default=30.0):
    """A watchdog duration: an integer (seconds) or a Go duration like 600s, 1m30s, 500ms."""
    if value is None or str(value).strip() == "":
        return default
    text = str(value).strip()
    if text.isdigit():
        return float(text)
    total, number = 0.0, ""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    rest = text
    while rest:
        number = ""
        while rest and (rest[0].isdigit() or rest[0] == "."):
            number, rest = number + rest[0], rest[1:]
        unit = next((u for u in sorted(units, key=len, reverse=True) if rest.startswith(u)), None)
        if not number or unit is None:
            return default
        total, rest = total + float(number) * units[unit], rest[len(unit):]
    return total


def call_limit(headers):
    """Seconds this call may take: min(exec_timeout, write_timeout, X-Timeout if not above exec_timeout)."""
    exec_timeout, write_timeout = seconds(os.getenv("exec_timeout")), seconds(os.getenv("write_timeout"))
    limit = min(exec_timeout, write_timeout)
    asked = headers.get("X-Timeout")
    if asked and not asked.strip().isdigit():  # the watchdog takes only Go durations here
        wanted = seconds(asked, None)
        if wanted is not None and wanted <= exec_timeout:
            limit = min(limit, wanted)
    return limit


class Event:
    """The request as the handler sees it."""

    def __init__(self):
        self.body = request.get_data()  # bytes
        self.headers = request.headers  # case-insensitive
        self.method = request.method
        self.query = request.args  # multi-dict of the query string
        self.path = request.path
        self.content_type = (request.mimetype or "").lower()

    def json(self):
        """The body as an object: JSON or a form; {} for an empty body; 400/415 when it is neither."""
        if not self.body.strip():
            return {}
        if self.content_type == FORM_TYPE:
            if not self.body.lstrip().startswith((b"{", b"[")):  # curl -d and urllib label JSON a form too
                return form(self.body)
        elif self.content_type not in JSON_TYPES and not self.content_type.endswith("+json"):
            raise BadRequest(f"Content-Type: {self.content_type} is not served (send JSON or {FORM_TYPE})",
                             415, "Content-Type")
        try:
            return json.loads(self.body, object_pairs_hook=unique_keys)
        except RecursionError:
            raise BadRequest("body: JSON nested too deeply") from None
        except BadRequest:
            raise
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
            raise BadRequest(f"body: invalid JSON ({exc})") from None


def unique_keys(pairs):
    """A JSON object's pairs as a dict; a key given twice is a 400 naming it (parsers differ on which wins)."""
    values = {}
    for key, value in pairs:
        if key in values:
            raise BadRequest(f"{key}: given twice in the body", field=key)
        values[key] = value
    return values


def form(body):
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=True)
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadRequest(f"body: invalid form ({exc})") from None
    if any(not key for key, _ in pairs):
        raise BadRequest("body: a form field has no name")
    values = {}
    for key, value in pairs:
        if key in values:
            raise BadRequest(f"{key}: given twice in the form", field=key)
        values[key] = value
    return values


class Context:
    """Where and how long the handler runs."""

    def __init__(self, deadline):
        self.hostname = os.getenv("HOSTNAME", "localhost")
        self.deadline = deadline  # time.monotonic() by which the handler should have answered
        self.call_id = request.headers.get("X-Call-Id")

    @staticmethod
    def draining():
        return state["draining"].is_set()


def to_response(result):
    """The handler's result as a Flask response: dict/list bodies become JSON."""
    if result is None:
        return Response(b"", 200)
    if not isinstance(result, dict):
        return result  # str, bytes, tuple or Response: Flask's own rules
    body = result.get("body", "")
    if isinstance(body, (dict, list)):
        response = jsonify(body)
    elif isinstance(body, (bytes, bytearray)):
        response = Response(bytes(body), mimetype="application/octet-stream")
    else:
        response = Response(str(body), mimetype="text/plain")
    response.status_code = result.get("statusCode", 200)
    headers = result.get("headers") or {}
    for key, value in headers.items() if isinstance(headers, dict) else headers:
        response.headers[key] = value
    return response


def error_response(status, payload, allow=None):
    message = payload.get("error") or ""
    if len(message) > MAX_MESSAGE:
        payload = {**payload, "error": f"{message[:MAX_MESSAGE]}... ({len(message) - MAX_MESSAGE} more characters)"}
    response = jsonify(payload)
    response.status_code = status
    if allow:
        response.headers["Allow"] = ", ".join(allow)
    return response


@app.errorhandler(Exception)
def on_error(exc):
    if isinstance(exc, HTTPException):
        if exc.code == 413:
            message = f"body: request body larger than max_request_bytes={MAX_REQUEST_BYTES}"
            return error_response(413, {"error": message, "field": "body"})
        if exc.code == 405:  # a method no route takes (TRACE, CONNECT, BREW, ...): named, with the methods served
            allowed = sorted(getattr(exc, "valid_methods", None) or METHODS)
            message = f"method: {request.method} is not served here (allowed: {', '.join(allowed)})"
            return error_response(405, {"error": message, "field": "method"}, allowed)
        return error_response(exc.code, {"error": f"{exc.name}: {exc.description}"}, getattr(exc, "valid_methods", None))
    status = getattr(exc, "http_status", None)
    if isinstance(status, int) and not isinstance(status, bool) and 400 <= status <= 599:
        if status >= 500:
            log_exception(exc)
        payload = {"error": str(exc), **({"field": exc.field} if getattr(exc, "field", None) is not None else {})}
        return error_response(status, payload, getattr(exc, "allow", None))
    log_exception(exc)
    return error_response(500, {"error": "internal error", "call_id": request.headers.get("X-Call-Id")})


def log_exception(exc):
    print(f"{request.method} {request.path} [{request.headers.get('X-Call-Id', 'none')}] failed:", file=sys.stderr)
    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    sys.stderr.flush()


@app.route("/_/ready", methods=["GET"])
def ready():
    if state["ready"].is_set() and not state["draining"].is_set():
        return Response(b"OK", 200, mimetype="text/plain")
    return error_response(503, {"error": "draining" if state["draining"].is_set() else "starting"})


@app.route("/", defaults={"path": ""}, methods=METHODS)
@app.route("/<path:path>", methods=METHODS)
def call_handler(path):
    started = time.monotonic()
    answer_by = started + call_limit(request.headers) - 0.5
    event, context = Event(), Context(answer_by - 1.0)
    if not state["ready"].wait(max(0.0, answer_by - time.monotonic())):
        return error_response(503, {"error": "the function is still starting"})
    outcome = {}
    worker = threading.Thread(target=run_handler, args=(event, context, outcome), daemon=True)
    worker.start()
    worker.join(max(0.0, answer_by - time.monotonic()))
    if worker.is_alive():
        return error_response(504, {"error": f"the call ran past its deadline ({answer_by - started + 0.5:.1f} s); "
                                             "its work stops at its next safe point", "call_id": context.call_id})
    if "error" in outcome:
        raise outcome["error"]
    return to_response(outcome["result"])


def run_handler(event, context, outcome):
    with state["lock"]:
        state["running"] += 1
    try:
        with state["traced"](event.headers):  # the caller's traceparent: the function's spans continue it
            outcome["result"] = state["handler"].handle(event, context)
    except BaseException as exc:  # handed back to the request thread, which answers it
        outcome["error"] = exc
    finally:
        with state["lock"]:
            state["running"] -= 1


def load_handler():
    """Import the handler (the heavy part) while the socket already takes calls; then say ready."""
    start_tracing()
    state["handler"] = importlib.import_module("function.handler")
    with open(LOCK, "w"):
        pass
    state["ready"].set()


def start_tracing():
    """OpenTelemetry for this replica, set up once when the OTEL_* variables ask for an exporter (faasgd.tracing,
    README "Traces"): each call then runs in the context its traceparent carries. A bad setting is logged and
    tracing stays off; the function still serves. Without faasgd installed, nothing changes."""
    try:
        from faasgd import tracing
        from faasgd.tracing import setup
    except ImportError:
        return
    try:
        setup.configure(os.environ)
    except Exception as exc:  # a ConfigError naming the variable
        print(f"tracing is off: {exc}", file=sys.stderr)
    state["traced"], state["end_tracing"] = tracing.incoming, setup.shutdown


def on_sigterm(signum, frame):
    state["draining"].set()
    state["sigterm_at"] = time.monotonic()
    try:
        os.remove(LOCK)
    except OSError:
        pass
    threading.Thread(target=drain, daemon=True).start()


def drain():
    """Exit 0 once the watchdog's healthcheck_interval has passed and no handler runs (at the latest
    after write_timeout more)."""
    write_timeout = seconds(os.getenv("write_timeout"))
    window = seconds(os.getenv("healthcheck_interval"), write_timeout)
    while True:
        waited = time.monotonic() - state["sigterm_at"]
        if (waited >= window and state["running"] == 0) or waited >= window + write_timeout:
            state["end_tracing"]()  # spans still batched are exported (os._exit skips atexit)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
        time.sleep(0.05)


class JsonErrorTask(ErrorTask):
    """waitress's answer to a request it cannot parse, as JSON: {"error": "request: <what waitress found>"}."""

    def execute(self):
        error = self.request.error
        body = json.dumps({"error": f"request: {error.reason}: {error.body}"[:MAX_MESSAGE], "field": "request"})
        self.status = f"{error.code} {error.reason}"
        self.response_headers.append(("Content-Type", "application/json"))
        self.set_close_on_finish()
        self.content_length = len(body.encode())
        self.write(body.encode())


class OneFramingParser(HTTPRequestParser):
    """waitress's request parser, refusing Content-Length beside Transfer-Encoding (waitress takes the latter; a
    proxy taking the former would see another request boundary): a 400 through JsonErrorTask."""

    def parse_header(self, header_plus):
        names = {line.split(b":", 1)[0].strip().lower() for line in header_plus.split(b"\n")[1:]}
        if b"content-length" in names and b"transfer-encoding" in names:
            raise ParsingError("Content-Length and Transfer-Encoding given together; send one")
        return super().parse_header(header_plus)


def listening_socket():
    """The socket bootstrap.py bound (fd 3), else one bound here to upstream_url's host and port."""
    if os.getenv("LISTEN_FDS") == "1":
        return socket.socket(fileno=3)
    upstream = urlsplit(os.getenv("upstream_url") or "http://127.0.0.1:5000")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((upstream.hostname or "127.0.0.1", upstream.port or 5000))  # only the watchdog, beside us, calls
    sock.listen(1024)
    return sock


if __name__ == "__main__":
    HTTPChannel.error_task_class, HTTPChannel.parser_class = JsonErrorTask, OneFramingParser  # our only server
    server = create_server(app, sockets=[listening_socket()], threads=int(os.getenv("waitress_threads", "4")))
    signal.signal(signal.SIGTERM, on_sigterm)
    threading.Thread(target=load_handler, name="load-handler", daemon=True).start()
    server.run()
