#!/usr/bin/env python
"""The platform shim of the python3-http-faasgd template: Flask served by waitress behind of-watchdog (mode=http).

The shape of OpenFaaS's python3-http template: an Event and a Context, a Flask app handing every method on
every path to `function.handler.handle(event, context)`. What it adds comes from the faasgd core, tested
there: faasgd.functions.replica_life (readiness, each call's deadline, draining after SIGTERM; the socket
bound before the handler imports) and faasgd.functions.http_call (bodies as JSON or forms, errors as JSON).
The handler sees `context.deadline` (a time.monotonic value) and `context.draining()`; a call still running
near its limit gets a JSON 504 while the handler goes on to its next safe point. A process asked to renew
itself (faasgd.functions.replica_renewal: a worker that loaded TensorFlow ended here) execs a fresh interpreter
in place at its first quiet moment, keeping its pid, its listening socket, its open connections and its readiness. Waitress's own answers to
requests it cannot parse are JSON too. Environment: upstream_url, exec_timeout, write_timeout,
healthcheck_interval (the watchdog's, only read), waitress_threads (4), max_request_bytes (1 MiB), log_level;
OPENBLAS_NUM_THREADS, OMP_NUM_THREADS, MKL_NUM_THREADS (unset: the replica's usable CPUs, faasgd.cpu_limit; its
log says how many the handler's BLAS runs once the handler is imported).
"""

import importlib
import logging
import os
import signal
import sys
import threading
import traceback

from faasgd import cpu_limit  # the standard library alone: nothing has loaded numpy yet

# As many BLAS/OpenMP threads as the replica's CPUs (its cgroup quota, its affinity), or the user's own
# OPENBLAS_NUM_THREADS / OMP_NUM_THREADS: set before the handler loads numpy (and on numpy already loaded, in a
# process forked from the local runtime's zygote)
threads = cpu_limit.limit_threads()

# httpx's command-line client (httpx._main: rich, click, pygments; ~30 ms of every replica's start) is never run
# here; httpx imports it inside `try: ... except ImportError`, and None in sys.modules makes that import fail at once
sys.modules.setdefault("httpx._main", None)

from flask import Flask, jsonify, make_response, request
from waitress import create_server
from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser, ParsingError
from waitress.task import ErrorTask
from werkzeug.exceptions import HTTPException

from faasgd.functions import http_call, replica_renewal
from faasgd.functions.replica_life import ReplicaLife, listening_socket
from faasgd.store.url import mask_urls

logging.basicConfig(level=os.getenv("log_level", "INFO"), stream=sys.stderr,  # the container's log
                    format="%(asctime)s %(levelname)s %(name)s: %(message)s")

METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
MAX_REQUEST_BYTES = int(os.getenv("max_request_bytes", "1048576"))

app = Flask(__name__)
app.config["MAX_CONTENT_LENGTH"] = MAX_REQUEST_BYTES  # werkzeug raises 413 on reading a larger body
replica = ReplicaLife(os.environ)
handler = None  # function.handler, imported by load_handler while the socket already takes calls
renewal = None  # replica_renewal.Renewal of the running server (none in tests that drive the app alone)


class Event:
    def __init__(self):
        self.body = request.get_data()
        self.headers = request.headers
        self.method = request.method
        self.query = request.args
        self.path = request.path
        self.content_type = (request.mimetype or "").lower()

    def json(self):
        """The body as an object: JSON or a form; {} for an empty body."""
        return http_call.read_body(self.body, self.content_type)


class Context:
    def __init__(self, deadline):
        self.hostname = os.getenv("HOSTNAME", "localhost")
        self.deadline = deadline  # time.monotonic() by which the handler should have answered
        self.call_id = request.headers.get("X-Call-Id")

    @staticmethod
    def draining():
        return replica.draining.is_set()


def format_response(result):
    """The handler's result: None is an empty 200; a dict's dict or list body is JSON; anything else Flask's."""
    if result is None:
        return "", 200
    if not isinstance(result, dict):
        return result
    body = result.get("body", "")
    if isinstance(body, (dict, list)):
        response = jsonify(body)
    elif isinstance(body, (bytes, bytearray)):
        response = make_response(bytes(body))
        response.mimetype = "application/octet-stream"
    else:
        response = make_response(str(body))
        response.mimetype = "text/plain"
    response.status_code = result.get("statusCode", 200)
    response.headers.update(result.get("headers") or {})
    return response


def json_answer(status, payload, allow=None):
    response = jsonify(payload)
    response.status_code = status
    if allow:
        response.headers["Allow"] = ", ".join(allow)
    return response


@app.errorhandler(Exception)
def on_error(exc):
    if isinstance(exc, HTTPException):
        if exc.code == 413:
            return json_answer(*http_call.too_large(MAX_REQUEST_BYTES))
        if exc.code == 405:  # a method no route takes (TRACE, CONNECT, BREW, ...)
            return json_answer(*http_call.method_not_served(request.method, exc.valid_methods or METHODS))
        return json_answer(exc.code, {"error": f"{exc.name}: {exc.description}"}, getattr(exc, "valid_methods", None))
    answer = http_call.error_answer(exc)
    if answer is None or answer[0] >= 500:
        log_failure(exc)
    return json_answer(*(answer or http_call.internal_error(request.headers.get("X-Call-Id"))))


def log_failure(exc):
    """The traceback, on stderr only (the container's log), with the call's id; every URL's password masked."""
    call = f"{request.method} {request.path} [{request.headers.get('X-Call-Id', 'none')}]"
    print(mask_urls(f"{call} failed:"), file=sys.stderr)
    print(mask_urls("".join(traceback.format_exception(type(exc), exc, exc.__traceback__))), end="", file=sys.stderr)
    sys.stderr.flush()


@app.route("/_/ready", methods=["GET"])
def ready():
    why_not = replica.readiness()
    if why_not:
        return json_answer(503, {"error": why_not})
    return "OK", 200, {"Content-Type": "text/plain; charset=utf-8"}


@app.route("/", defaults={"path": ""}, methods=METHODS)
@app.route("/<path:path>", methods=METHODS)
def call_handler(path):
    times = replica.deadlines(request.headers)
    event, context = Event(), Context(times.handler_by)
    if not replica.ready.wait(replica.left(times.answer_by)):
        return json_answer(503, {"error": "the function is still starting"})
    outcome = replica.run(lambda: traced_handle(event, context), times.answer_by)
    if renewal is not None and replica_renewal.asked():
        renewal.start()  # once this answer and every other call are done
    if outcome.late:
        return json_answer(*http_call.late(times.limit_s, context.call_id))
    if outcome.error is not None:
        raise outcome.error
    return format_response(outcome.result)


def traced_handle(event, context):
    with replica.traced(event.headers):  # the caller's traceparent: the function's spans continue it
        return handler.handle(event, context)


def load_handler():
    """Import the handler (the heavy part) while the socket already takes calls; then say ready."""
    global handler
    replica.start_tracing()
    handler = importlib.import_module("function.handler")
    logging.getLogger("faasgd.cpu_limit").info(cpu_limit.report(threads))
    replica.mark_ready()


def flush():
    replica.end_tracing()  # spans still batched are exported (os._exit and exec skip atexit)
    sys.stdout.flush()
    sys.stderr.flush()


def exit_now():
    flush()
    os._exit(0)


def on_sigterm(signum, frame):
    replica.begin_drain()
    threading.Thread(target=replica.drain, args=(exit_now,), daemon=True).start()


class JsonErrorTask(ErrorTask):
    """waitress's answer to a request it cannot parse, as JSON: {"error": "request: <what waitress found>"}."""

    def execute(self):
        error = self.request.error
        body = http_call.unparsable_request(error.reason, error.body)
        self.status = f"{error.code} {error.reason}"
        self.response_headers.append(("Content-Type", "application/json"))
        self.set_close_on_finish()
        self.content_length = len(body)
        self.write(body)


class OneFramingParser(HTTPRequestParser):
    """waitress's request parser, refusing a body framed two ways (a 400 through JsonErrorTask)."""

    def parse_header(self, header_plus):
        why = http_call.framing_error(header_plus)
        if why:
            raise ParsingError(why)
        return super().parse_header(header_plus)


if __name__ == "__main__":
    HTTPChannel.error_task_class, HTTPChannel.parser_class = JsonErrorTask, OneFramingParser  # our only server
    server = create_server(app, sockets=[listening_socket(os.environ)], threads=int(os.getenv("waitress_threads", "4")))
    replica_renewal.adopt(server)  # after a renewal: the connections the old interpreter had open
    renewal = replica_renewal.Renewal(server, busy=lambda: replica.running > 0, before_exec=flush,
                                      draining=replica.draining.is_set)
    signal.signal(signal.SIGTERM, on_sigterm)
    threading.Thread(target=load_handler, name="load-handler", daemon=True).start()
    server.run()
