"""The container's entrypoint: bind the function's listening socket, then become of-watchdog.

of-watchdog forks the function (fprocess) and answers calls at once; a call that arrives before the
function listens gets an empty 500 (of-watchdog executor/http_runner.go), and OpenFaaS CE's queue-worker
never retries it. Binding `upstream_url`'s socket here, before the watchdog exists, closes that window:
connections wait in the kernel's backlog until index.py, which inherits the socket as fd 3
(systemd's LISTEN_FDS convention), accepts them. Standard library only, so it starts in milliseconds
(`python -S`). The watchdog is found on PATH as `fwatchdog` (the image's /usr/bin/fwatchdog).
"""

import os
import socket
import sys
from urllib.parse import urlsplit

LISTEN_FD = 3  # the first fd systemd-style socket activation passes


def bind(upstream_url: str) -> socket.socket:
    address = urlsplit(upstream_url or "http://127.0.0.1:5000")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((address.hostname or "127.0.0.1", address.port or 5000))
    sock.listen(1024)
    return sock


def main() -> None:
    sock = bind(os.environ.get("upstream_url", ""))
    fd = sock.detach()  # the bare descriptor: nothing closes it when the socket object goes
    if fd != LISTEN_FD:
        os.dup2(fd, LISTEN_FD)
        os.close(fd)
    os.set_inheritable(LISTEN_FD, True)  # Python opens sockets close-on-exec (PEP 446): this one must survive exec
    os.environ["LISTEN_FDS"] = "1"
    watchdog = sys.argv[1:] or ["fwatchdog"]
    os.execvp(watchdog[0], watchdog)


if __name__ == "__main__":
    main()
