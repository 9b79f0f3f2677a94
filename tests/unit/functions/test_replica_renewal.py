"""A replica's renewal (faasgd.functions.replica_renewal) without exec: when a worker's end asks for it, when the
server is quiet enough to renew, what the new interpreter is handed (the listening socket at fd 3, the open
connections, the counts), and how it adopts them. Fake waitress objects and an execv that records; the real
exec runs in tests/integration/test_template_renewal.py and, through `faasgd up`, tests/e2e/test_warm_replicas_e2e.py."""

from __future__ import annotations

import os
import socket
import sys
import threading
from types import SimpleNamespace

import pytest

from faasgd.functions import replica_cache, replica_renewal
from faasgd.functions.replica_renewal import (KEPT_FDS_ENV, LISTEN_FD, RENEWALS_ENV, RENEWED_AT_ENV, Renewal,
                                              adopt, between_requests, renewals)


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    """No renewal asked before a test; the variables exec_fresh sets are restored after it."""
    monkeypatch.setattr(replica_renewal, "_asked", type(replica_renewal._asked)())
    monkeypatch.setattr(replica_renewal, "_reasons", [])
    for name in ("LISTEN_FDS", KEPT_FDS_ENV, RENEWALS_ENV, RENEWED_AT_ENV):
        monkeypatch.delenv(name, raising=False)


def channel(requests=(), request=None, outbuf=0, fileno=7, closing=False):
    made = SimpleNamespace(requests=list(requests), request=request, total_outbufs_len=outbuf, will_close=False,
                           close_when_flushed=closing, socket=SimpleNamespace(fileno=lambda: fileno), closed=[])
    made.handle_close = lambda: made.closed.append(True)
    return made


class FakeServer:
    def __init__(self, *channels, listening_fd=LISTEN_FD):
        self.active_channels = {i: c for i, c in enumerate(channels)}
        self.socket = SimpleNamespace(fileno=lambda: listening_fd)
        self.trigger = SimpleNamespace(pull_trigger=lambda thunk: thunk())


class Exec:
    def __init__(self):
        self.calls = []

    def __call__(self, path, argv):
        self.calls.append((path, argv, dict(os.environ)))


def renewal(server, busy=False, draining=False):
    execv, flushed = Exec(), []
    made = Renewal(server, busy=lambda: busy, before_exec=lambda: flushed.append(True),
                   draining=lambda: draining, execv=execv)
    return made, execv, flushed


def test_a_worker_ending_where_tensorflow_is_loaded_asks_for_a_renewal(monkeypatch):
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)  # an earlier test of this process may have loaded it
    monkeypatch.setattr(replica_renewal, "_asked", threading.Event())  # ... and asked for a renewal then
    with replica_cache.training_call() as ended:
        ended["worker"] = True
    assert not replica_renewal.asked()  # no TensorFlow here: nothing to shed
    monkeypatch.setitem(sys.modules, "tensorflow", SimpleNamespace())
    with replica_cache.training_call() as ended:
        ended["worker"] = False  # an epoch of a per-iteration worker: its job goes on here
    assert not replica_renewal.asked()
    with replica_cache.training_call() as ended:
        ended["worker"] = True
    assert replica_renewal.asked()


@pytest.mark.parametrize("busy_channel", [
    channel(requests=["a request queued or running"]), channel(request="a request half read"),
    channel(outbuf=120),  # an answer still being sent
])
def test_no_renewal_while_a_connection_is_inside_a_request(busy_channel):
    made, execv, _ = renewal(FakeServer(channel(fileno=8), busy_channel))
    made.look()
    assert execv.calls == [] and not made.done.is_set()
    assert not between_requests(busy_channel) and between_requests(channel())


@pytest.mark.parametrize("busy, draining", [(True, False), (False, True)])
def test_no_renewal_while_a_handler_runs_or_the_replica_drains(busy, draining):
    made, execv, _ = renewal(FakeServer(channel()), busy=busy, draining=draining)
    made.look()
    assert execv.calls == []


def test_a_quiet_server_execs_the_same_program_with_its_connections_and_counts(monkeypatch):
    set_inheritable = []
    monkeypatch.setattr(os, "set_inheritable", lambda fd, flag: set_inheritable.append((fd, flag)))
    monkeypatch.setattr(sys, "orig_argv", ["python", "index.py"])
    told_to_close = channel(fileno=10, closing=True)  # answered with `Connection: close`
    made, execv, flushed = renewal(FakeServer(channel(fileno=8), told_to_close, channel(fileno=9)))
    made.look()
    made.look()  # once only
    [(path, argv, env)] = execv.calls
    assert (path, argv) == (sys.executable, [sys.executable, "index.py"]) and flushed == [True]
    assert env["LISTEN_FDS"] == "1" and env[KEPT_FDS_ENV] == "8,9" and env[RENEWALS_ENV] == "1"
    assert set_inheritable == [(LISTEN_FD, True), (8, True), (9, True)] and told_to_close.closed == [True]
    assert float(env[RENEWED_AT_ENV]) > 0 and renewals(env) == 1 and renewals({}) == 0


def test_a_listening_socket_bound_elsewhere_moves_to_fd_3_without_clobbering_a_connection_there(monkeypatch):
    moved, set_inheritable = [], []
    monkeypatch.setattr(os, "dup", lambda fd: 11)
    monkeypatch.setattr(os, "dup2", lambda fd, to: moved.append((fd, to)))
    monkeypatch.setattr(os, "set_inheritable", lambda fd, flag: set_inheritable.append(fd))
    monkeypatch.setenv(RENEWALS_ENV, "2")
    execv = Exec()
    replica_renewal.exec_fresh(5, [LISTEN_FD, 8], execv)
    assert moved == [(5, LISTEN_FD)] and set_inheritable == [LISTEN_FD, 11, 8]
    assert execv.calls[0][2][KEPT_FDS_ENV] == "11,8" and execv.calls[0][2][RENEWALS_ENV] == "3"


def test_a_renewed_interpreter_adopts_the_connections_it_was_handed_and_forgets_the_variable(monkeypatch):
    adopted = []
    server = SimpleNamespace(adj="adj", _map={}, set_socket_options=lambda sock: None,
                             channel_class=lambda srv, sock, addr, adj, map: adopted.append((sock, addr, adj)))
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listener.getsockname())
    served, _ = listener.accept()
    monkeypatch.setenv(KEPT_FDS_ENV, f"{served.detach()},x")
    assert adopt(server) == 1 and KEPT_FDS_ENV not in os.environ
    [(sock, address, adj)] = adopted
    assert address == client.getsockname() and adj == "adj"
    client.sendall(b"GET / HTTP/1.1\r\n\r\n")
    assert sock.recv(100).startswith(b"GET /")  # what the client sent meanwhile is there to read
    for item in (sock, client, listener):
        item.close()
    assert adopt(server) == 0


def test_a_failed_exec_leaves_the_server_serving_as_it_is(monkeypatch):
    monkeypatch.setattr(os, "set_inheritable", lambda fd, flag: None)  # the test process's own fds stay as they are
    tried = []

    def refuse(path, argv):
        tried.append(path)
        raise OSError(8, "Exec format error")

    made = Renewal(FakeServer(channel()), busy=lambda: False, before_exec=lambda: None, execv=refuse)
    made.look()  # logged, not raised into waitress's loop
    made.look()
    assert tried == [sys.executable] and made.done.is_set()  # tried once, not again
