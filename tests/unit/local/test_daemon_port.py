"""The runtime takes its gateway's port before anything of its own picks a port (stores, broker, replicas):
none of them can then pick it, and the gateway's bind cannot fail on the runtime's own choice."""

import signal
import socket
import tempfile

import pytest

from faasgd.local.lifecycle import daemon
from faasgd.local.replicas.deployments import Catalog
from faasgd.local.services.stores import free_port


def test_the_gateway_port_is_taken_before_the_stores_start_and_released_after(tmp_path, monkeypatch):
    port, seen = free_port(), []

    def start_servers(directory, adopt, also_bind=None, groups=None, password=None, net=None):  # what the servers would find when they pick their ports
        seen.append(tempfile.gettempdir() == str(tmp_path / "tmp"))  # their files: the runtime's own folder
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
                seen.append("free")
            except OSError:
                seen.append("taken")
        raise RuntimeError("stop here")

    monkeypatch.setattr(daemon, "start_servers", start_servers)
    monkeypatch.setattr(daemon, "build_catalog", lambda *args: Catalog([]))
    monkeypatch.setattr(signal, "signal", lambda *args: None)  # main installs handlers: not in the test process
    machine_tmp = tempfile.gettempdir()
    with pytest.raises(RuntimeError, match="stop here"):
        daemon.main(["--stack", "stack.yml", "--dir", str(tmp_path), "--port", str(port)])
    assert seen == [True, "taken"]
    assert tempfile.gettempdir() == machine_tmp  # main gave the process its temp folder back
    with socket.socket() as after:  # and given back when the runtime stops
        after.bind(("127.0.0.1", port))
