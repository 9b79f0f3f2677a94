"""Serve an ASGI app (a fake replica, a callback recorder) with uvicorn on a free loopback port."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from contextlib import contextmanager
from typing import Iterator

import uvicorn


@contextmanager
def serve(app, timeout_s: float = 10.0) -> Iterator[str]:
    """Serve `app` in a daemon thread for the duration of the block; yields its base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, http="h11", ws="none", lifespan="off", log_config=None,
                                           access_log=False, timeout_graceful_shutdown=0))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the ASGI server did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(5)
        sock.close()
