"""A replica's function process, as its pid file names it (local/replicas/pods.py function_ref, written by netns.py `enter`
under the zygote): a pid is taken for it only while its start matches; and the zygote's check that a requester
still waits (local/replicas/zygote_server.py gone)."""

from __future__ import annotations

import os
import selectors
import socket

from faasgd.local.replicas import pods, zygote, zygote_server
from faasgd.local.replicas.netns import start_ticks


def test_the_pid_file_names_a_process_only_while_its_start_matches(tmp_path):
    assert pods.function_ref(tmp_path) is None  # no zygote forked one
    (tmp_path / zygote.PID_FILE).write_text(f"{os.getpid()} {start_ticks(os.getpid())}")
    assert pods.function_ref(tmp_path).pid == os.getpid()
    wrong = int(start_ticks(os.getpid())) + 1
    (tmp_path / zygote.PID_FILE).write_text(f"{os.getpid()} {wrong}")  # the pid, taken again by another process
    assert pods.function_ref(tmp_path) is None
    (tmp_path / zygote.PID_FILE).write_text(str(os.getpid()))  # no start written: not trusted
    assert pods.function_ref(tmp_path) is None


def test_a_requester_that_closed_its_end_is_gone():
    waiting, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with waiting, zygote_end:
        waiting.send(b"request")
        assert not zygote_server.gone(zygote_end)
        waiting.close()
        assert zygote_server.gone(zygote_end)  # its request is still queued: fork nothing for it


def test_a_requester_whose_connection_was_closed_in_the_same_round_is_passed_over():
    """A function's end and its requester's in one round of events (Replica.stop_now kills both): the end is reaped
    first, closing the connection; the requester's event that follows must not end the zygote."""
    forks = zygote_server.Zygote.__new__(zygote_server.Zygote)  # its loop's state only: no listener, no signal handlers
    forks.selector, forks.children = selectors.DefaultSelector(), {}
    requester, connection = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with requester:
        forks.selector.register(connection, selectors.EVENT_READ, 4242)
        forks.selector.unregister(connection)  # what reap() does with the ended function's connection
        connection.close()
        forks.abandoned(connection, 4242)  # raised ValueError (a closed socket) and ended the zygote
    forks.selector.close()
