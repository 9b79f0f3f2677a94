"""free_port(): a bindable loopback port that outgoing connections cannot take (outside the ephemeral range)."""

import socket

import pytest

from faasgd.local.services import stores


def test_a_free_port_is_outside_the_ephemeral_range_and_bindable():
    low, high = stores.ephemeral_range()
    for _ in range(50):
        port = stores.free_port()
        assert not low <= port <= high and port >= stores.PORT_FLOOR
        with socket.socket() as sock:
            # as every server binds (redis, memcached, uvicorn): a port whose last server left connections in
            # TIME_WAIT (another test's, a moment ago) is free for a listener, and free_port hands it out
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", port))


class Picks:
    """stores' random picks: the first range, then the ports `picks` gives, in turn."""

    def __init__(self, picks):
        self.picks = picks

    def choice(self, ranges):
        return ranges[0]

    def randint(self, a, b):
        return next(self.picks)


def test_the_kernel_range_is_read_from_the_file(tmp_path, monkeypatch):
    (tmp_path / "range").write_text("40000\t50000\n")
    monkeypatch.setattr(stores, "EPHEMERAL_RANGE_FILE", str(tmp_path / "range"))
    assert stores.ephemeral_range() == (40000, 50000)
    assert all(not 40000 <= stores.free_port() <= 50000 for _ in range(50))


def test_a_port_in_use_is_not_handed_out(monkeypatch):
    """The random pick lands on a listening port first: it is skipped, the next pick is returned."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", stores.free_port()))
        taken.listen()
        second = stores.free_port()
        picks = iter([taken.getsockname()[1], second])
        monkeypatch.setattr(stores, "_random", Picks(picks))
        assert stores.free_port() == second


def test_with_no_room_outside_the_range_the_os_picks(tmp_path, monkeypatch):
    (tmp_path / "range").write_text(f"{stores.PORT_FLOOR} 65535\n")
    monkeypatch.setattr(stores, "EPHEMERAL_RANGE_FILE", str(tmp_path / "range"))
    port = stores.free_port()
    assert port > 0
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_a_bound_socket_holds_its_port_and_a_port_taken_after_the_pick_costs_one_more_try(monkeypatch):
    """The race a picked port leaves open: another process listens on it before the bind. bound_socket tries
    again and hands out a socket whose bind it holds (no second bind of that port can succeed)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", stores.free_port()))
        taken.listen()
        picks = iter([taken.getsockname()[1], stores.free_port()])
        monkeypatch.setattr(stores, "_random", Picks(picks))
        held = stores.bound_socket()
        try:
            port = held.getsockname()[1]
            assert port != taken.getsockname()[1]
            with socket.socket() as other, pytest.raises(OSError):
                other.bind(("127.0.0.1", port))
        finally:
            held.close()
