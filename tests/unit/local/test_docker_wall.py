"""The wall's rules and its bookkeeping without iptables (a fake filter table answers its command lines; tests/docker/test_store_wall.py
runs the real one): only the loopback and the network's bridge pass, the rest is refused; taking it down removes every
jump to the runtime's chain and the chain, and nothing of another runtime's; a failed `close` leaves nothing."""

from __future__ import annotations

import subprocess

import pytest

from faasgd.local.lifecycle import credentials
from faasgd.local.services import docker_wall


class FakeIptables:
    """The filter table as a dict of chains of rule strings, driven by the argument lists docker_wall sends."""

    def __init__(self, chains: dict[str, list[str]] | None = None, refuse: str | None = None):
        self.chains = {"INPUT": [], **(chains or {})}
        self.refuse, self.calls = refuse, []

    def __call__(self, argv: list[str], **_) -> subprocess.CompletedProcess:
        """subprocess.run of `iptables -w 5 ARGS...`."""
        args = tuple(argv[3:])
        self.calls.append(args)
        code, out = 0, ""
        verb, chain, rest = args[0], args[1], list(args[2:])
        if self.refuse and self.refuse in args:
            code = 1
        elif verb == "-N":
            self.chains[chain] = []
        elif verb == "-A":
            self.chains[chain].append(" ".join(rest))
        elif verb == "-I":
            self.chains[chain].insert(int(rest[0]) - 1, " ".join(rest[1:]))
        elif verb == "-D":
            code = 0 if " ".join(rest) in self.chains[chain] else 1
            if code == 0:
                self.chains[chain].remove(" ".join(rest))
        elif verb == "-S":
            code = 0 if chain in self.chains else 1
            out = "".join(f"-A {chain} {rule}\n" for rule in self.chains.get(chain, []))
        elif verb == "-F":
            self.chains[chain] = []
        elif verb == "-X":
            del self.chains[chain]
        return subprocess.CompletedProcess(argv, code, out, "iptables: Permission denied" if code else "")


@pytest.fixture
def table(monkeypatch):
    fake = FakeIptables({"FAASGD-other00000": ["-j DROP"]})
    fake.chains["INPUT"].append("-d 172.30.0.1/32 -m comment --comment faasgd-other00000 -j FAASGD-other00000")
    monkeypatch.setattr(docker_wall.subprocess, "run", fake)
    monkeypatch.setattr(docker_wall.shutil, "which", lambda name: f"/usr/sbin/{name}")
    return fake


def test_only_loopback_and_the_bridge_pass_the_rest_is_refused_at_the_runtimes_address(table):
    docker_wall.close("abc1234567", "172.18.0.1", "br-0123456789ab")
    assert table.chains["FAASGD-abc1234567"] == [
        "-i lo -j RETURN", "-i br-0123456789ab -j RETURN", "-p tcp -j REJECT --reject-with tcp-reset", "-j DROP"]
    assert table.chains["INPUT"][0] == "-d 172.18.0.1/32 -m comment --comment faasgd-abc1234567 -j FAASGD-abc1234567"


def test_close_twice_leaves_one_rule_and_open_up_removes_only_this_runtimes(table):
    docker_wall.close("abc1234567", "172.18.0.1", "br-0123456789ab")
    docker_wall.close("abc1234567", "172.19.0.1", "br-ba9876543210")  # a crashed runtime's wall replaced
    jumps = [rule for rule in table.chains["INPUT"] if rule.endswith("-j FAASGD-abc1234567")]
    assert jumps == ["-d 172.19.0.1/32 -m comment --comment faasgd-abc1234567 -j FAASGD-abc1234567"]
    assert docker_wall.open_up("abc1234567") is True
    assert "FAASGD-abc1234567" not in table.chains and not any("abc1234567" in r for r in table.chains["INPUT"])
    assert "FAASGD-other00000" in table.chains and len(table.chains["INPUT"]) == 1  # another runtime's stays
    assert docker_wall.open_up("abc1234567") is False  # nothing there: nothing to do, no error


def test_a_refused_rule_is_an_error_saying_root_and_leaves_no_half_wall(table):
    table.refuse = "INPUT"  # the jump, the last rule, is refused
    with pytest.raises(docker_wall.WallError, match="needs root") as raised:
        docker_wall.close("abc1234567", "172.18.0.1", "br-0123456789ab")
    assert "open to every container" in str(raised.value)
    table.refuse = None
    assert "FAASGD-abc1234567" not in table.chains


def test_without_iptables_the_wall_cannot_go_up_and_there_is_none_to_take_down(monkeypatch):
    monkeypatch.setattr(docker_wall.shutil, "which", lambda name: None)
    with pytest.raises(docker_wall.WallError, match="iptables not found"):
        docker_wall.close("abc1234567", "172.18.0.1", "br-0123456789ab")
    assert docker_wall.open_up("abc1234567") is False


def test_the_bridge_is_the_networks_own_name_or_docker_s_br_id():
    assert docker_wall.bridge_name({"Id": "0123456789abcdef", "Options": {}}) == "br-0123456789ab"
    assert docker_wall.bridge_name({"Id": "0123456789abcdef",
                                    "Options": {"com.docker.network.bridge.name": "faasgd0"}}) == "faasgd0"


def test_the_store_password_is_the_secret_generated_only_when_asked_and_kept(tmp_path):
    secrets = tmp_path / "secrets"
    assert credentials.store_password(secrets, generate=False) is None and not secrets.exists()
    made = credentials.store_password(secrets, generate=True)
    assert len(made) == 48 and made.isalnum() and (secrets / "store-password").stat().st_mode & 0o077 == 0
    assert credentials.store_password(secrets, generate=True) == made == credentials.store_password(secrets, False)
    (secrets / "store-password").write_text("  chosen by the user\n")
    assert credentials.store_password(secrets, generate=True) == "chosen by the user"
