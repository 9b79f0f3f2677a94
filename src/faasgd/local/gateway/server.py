"""LocalGateway: the gateway app served by uvicorn on its own event loop in a background thread."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time

import h11
import httpx
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from faasgd.errors import FaasgdError
from faasgd.local.gateway.app import create_app
from faasgd.local.gateway.limits import MAX_HEAD_BYTES, MAX_URL_BYTES
from faasgd.local.gateway.options import GatewayOptions, Registry
from faasgd.local.processes import backoff
from faasgd.local.queue.messages import Broker
from faasgd.local.queue.workers import CallQueue

log = logging.getLogger(__name__)

START_TIMEOUT_S = 10.0
KEEP_ALIVE_S = 120  # idle client connections are held this long (longer than httpx's 5 s, so clients close first)
STOP_GRACE_S = 0.1  # calls in flight at stop() get this long, then are cancelled


class LocalGateway:
    """The gateway and its queue-workers; `start()` serves in a background thread until `stop()`."""

    def __init__(self, registry: Registry, options: GatewayOptions = GatewayOptions(),
                 transport: httpx.AsyncBaseTransport | None = None, *, broker: Broker):
        self.registry, self.options = registry, options
        self.app = create_app(registry, options, transport, broker=broker)
        self._socket: socket.socket | None = None
        self._also: tuple[socket.socket, ...] = ()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stopped = False

    @property
    def url(self) -> str:
        port = self._socket.getsockname()[1] if self._socket else self.options.port
        return f"http://{self.options.host}:{port}"

    @property
    def queue(self) -> CallQueue:
        """The async queue (its stats() and deliveries() may be read from any thread)."""
        return self.app.state.queue

    def start(self, listener: socket.socket | None = None, also: tuple[socket.socket, ...] = ()) -> None:
        """Bind (or take `listener`, a socket already listening on the options' address), then serve in a
        daemon thread, on `also` too (more listening sockets, e.g. on a container network's gateway
        address); returns once listening and the queue-workers run."""
        with self._lock:
            if self._server is not None or self._stopped:
                raise RuntimeError("a LocalGateway starts once")
            self._socket = listener or listen(self.options.host, self.options.port, self.options.backlog)
            self._also = tuple(also)
            # h11, not httptools: it hands unknown methods (BREW) to the app, which answers 405 JSON; and what
            # h11 cannot parse gets a JSON 400 too (JsonErrorsH11).
            config = uvicorn.Config(self.app, http=JsonErrorsH11, ws="none", lifespan="on", log_config=None,
                                    access_log=False, server_header=False, date_header=False,
                                    backlog=self.options.backlog, timeout_keep_alive=KEEP_ALIVE_S,
                                    h11_max_incomplete_event_size=MAX_HEAD_BYTES,
                                    timeout_graceful_shutdown=STOP_GRACE_S)
            self._server = uvicorn.Server(config)
            self._thread = threading.Thread(target=self._serve, name="faasgd-gateway", daemon=True)
            self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise FaasgdError(f"the gateway did not start on {self.url}; see the log above")
            time.sleep(0.01)

    def busy_replicas(self, settle_s: float = 0.0) -> set[str]:
        """The replica URLs a call is in flight to (the runtime's stop drains only those): now, or once none is or
        `settle_s` has passed (looked at from 2 ms apart, doubling up to 50 ms)."""
        deadline = time.monotonic() + settle_s
        for sleep_s in backoff():
            busy = self.app.state.balancer.busy()
            if not busy or time.monotonic() >= deadline:
                return busy
            time.sleep(min(sleep_s, max(0.0, deadline - time.monotonic())))
        return busy

    def stop(self) -> None:
        """Stop serving and the queue-workers; calls in flight are cut off, not awaited. Idempotent."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5.0)
            if self._thread.is_alive():
                log.warning("the gateway's thread did not end within 5 s")
        for sock in (self._socket, *self._also):
            if sock is not None:
                sock.close()

    def _serve(self) -> None:
        asyncio.run(self._server.serve(sockets=[self._socket, *self._also]))


class HeadConnection(h11.Connection):
    """h11's server side, remembering why it refused a request and whether that request's line had ended."""

    def __init__(self, max_head_bytes: int):
        super().__init__(h11.SERVER, max_head_bytes)
        self.refused: h11.RemoteProtocolError | None = None
        self.line_ended = False

    def receive_data(self, data: bytes) -> None:
        if self.their_state is h11.IDLE and b"\n" in data:
            self.line_ended = True
        super().receive_data(data)

    def start_next_cycle(self) -> None:
        super().start_next_cycle()
        self.line_ended = False

    def next_event(self):
        try:
            return super().next_event()
        except h11.RemoteProtocolError as exc:
            self.refused = exc
            raise


class JsonErrorsH11(H11Protocol):
    """uvicorn's h11 protocol, answering a request h11 cannot parse (a bare CR or LF or a NUL in a header, a bad
    request line, conflicting Content-Lengths, a bad chunk) with a JSON 400 like every other error of the
    gateway; uvicorn's own is plain text. A head still incomplete past MAX_HEAD_BYTES (sent in pieces) is a 414
    while its request line has not ended, a 431 after. The app never sees such a request, so this is the only place."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.conn = HeadConnection(MAX_HEAD_BYTES)

    def send_400_response(self, msg: str) -> None:
        status, reason, message = 400, b"Bad Request", ("request: not valid HTTP/1.1 (its request line, a header or "
                                                        "its body's framing); nothing was done")
        refused = self.conn.refused if isinstance(self.conn, HeadConnection) else None
        if refused is not None and refused.error_status_hint == 431:
            if self.conn.line_ended:
                status, reason = 431, b"Request Header Fields Too Large"
                message = f"request: its request line and headers pass {MAX_HEAD_BYTES} bytes; nothing was done"
            else:
                status, reason = 414, b"URI Too Long"
                message = f"request: its URL passes {MAX_URL_BYTES} bytes; nothing was done"
        body = json.dumps({"error": message}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                   (b"connection", b"close")]
        try:
            for event in (h11.Response(status_code=status, headers=headers, reason=reason), h11.Data(data=body),
                          h11.EndOfMessage()):
                self.transport.write(self.conn.send(event))
        except h11.LocalProtocolError:  # an answer had already started: only closing is left
            pass
        self.transport.close()


def listen(host: str, port: int, backlog: int = GatewayOptions.backlog) -> socket.socket:
    """A listening socket (SO_REUSEADDR), so the port is known and a clash raises at once: in start(), or in
    daemon.main, which takes the runtime's gateway port before anything else of the runtime picks one."""
    return socket.create_server((host, port), backlog=backlog)
