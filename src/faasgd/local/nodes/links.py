"""Network namespaces joined by shaped veth links to a host bridge: the pieces the runtime's emulated nodes
(faasgd.local.nodes.network) and the store-scaling bench's shaped nodes (faasgd.testing.shaped_net) share.

A link is limited both ways by a token bucket (`tc` tbf) on the egress of both ends of its veth pair. This kernel
has no netem (`tc qdisc add ... netem` answers "Specified qdisc kind is unknown"), so links have a rate and no
added delay. Everything carries a name prefix (at most 10 characters: a Linux link name holds 15) and is removed
by it (`remove_all`): the processes in its namespaces, the namespaces, the links, the bridge and the bridge's
FORWARD rule (frames between two ports of a bridge pass iptables' FORWARD chain, br_netfilter, whose policy Docker
sets to DROP); the container backend's nodes (faasgd.local.nodes.docker_net) also their rules in DOCKER-USER and
nat's POSTROUTING.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from typing import Callable

from faasgd.errors import FaasgdError

BURST_MIN_BYTES = 128 * 1024  # above a veth's largest (GSO) packet, 64 KiB, so no packet exceeds the bucket
BURST_S = 0.01  # the bucket holds 10 ms at the rate (at most that much ahead of the rate, once)
QUEUE_LATENCY = "100ms"  # tbf drops what would wait longer
STOP_WAIT_S = 3.0


class NeedsRoot(FaasgdError):
    """Raised when shaped nodes are asked for without root (namespaces, links and qdiscs need it)."""


def tbf(rate_mbit: float) -> list[str]:
    """tc arguments of a token bucket at `rate_mbit` (Mbit/s = 10^6 bit/s, tc's `mbit`)."""
    burst = max(BURST_MIN_BYTES, int(rate_mbit * 1e6 / 8 * BURST_S))
    return ["tbf", "rate", f"{rate_mbit}mbit", "burst", str(burst), "latency", QUEUE_LATENCY]


def forward_rule(bridge: str) -> list[str]:
    return ["-i", bridge, "-o", bridge, "-j", "ACCEPT", "-m", "comment", "--comment", bridge]


def require_root(what: str = "shaped store nodes") -> None:
    """NeedsRoot naming what is missing: root (network namespaces, veth links and tc qdiscs), or `ip`/`tc`."""
    if os.geteuid() != 0:
        raise NeedsRoot(f"{what} need root: network namespaces, veth links and tc qdiscs are "
                        "created and removed by this process (run as root, e.g. sudo, or in CI)")
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            raise NeedsRoot(f"{what} need `{tool}` (apt-get install -y iproute2)")


def rebuilt(remove: Callable[[], None], make: Callable[[], None]) -> None:
    """Root checked, what a runtime killed in the same folder left removed, then `make`; on any failure, everything
    removed again."""
    require_root("emulated nodes (faasgd up --nodes)")
    remove()
    try:
        make()
    except BaseException:
        remove()
        raise


def add_namespace(netns: str, host_veth: str, ns_veth: str, bridge: str, address: str) -> list[str]:
    """The namespace `netns` on a port of `bridge` through the veth pair host_veth / ns_veth, `address` (CIDR) on its
    end, both ends and its loopback up; `ip -n netns`, to go on inside it."""
    ip("netns", "add", netns)
    ip("link", "add", host_veth, "type", "veth", "peer", "name", ns_veth, "netns", netns)
    ip("link", "set", host_veth, "master", bridge, "up")
    inside = ["ip", "-n", netns]
    run([*inside, "addr", "add", address, "dev", ns_veth])
    run([*inside, "link", "set", ns_veth, "up"])
    run([*inside, "link", "set", "lo", "up"])
    return inside


def ip(*args: str) -> None:
    run(["ip", *args])


def run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise FaasgdError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")


def names(prefix: str) -> tuple[list[str], list[str]]:
    """The namespaces and the host's links whose names start with `prefix`-."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split("\n")
    spaces = [line.split()[0] for line in listed if line.startswith(f"{prefix}-")]
    shown = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout.split("\n")
    links = [line.split(":")[1].strip().split("@")[0] for line in shown if line.count(":") >= 2]
    return spaces, [link for link in links if link.startswith(f"{prefix}-")]


def pids_in(netns: str) -> list[int]:
    listed = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True).stdout.split()
    return [int(pid) for pid in listed if pid.isdigit()]


def stop_processes(spaces: list[str]) -> None:
    """SIGTERM to every process in the namespaces, a shared wait, then SIGKILL to those left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in (pid for space in spaces for pid in pids_in(space)):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + STOP_WAIT_S
        while any(pids_in(space) for space in spaces) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not any(pids_in(space) for space in spaces):
            return


def remove_all(prefix: str) -> None:
    """Stop the processes in, and delete, every namespace and link named `prefix`-*, and the bridge's rule."""
    spaces, links = names(prefix)
    stop_processes(spaces)
    for space in spaces:
        subprocess.run(["ip", "netns", "del", space], capture_output=True)
    for link in names(prefix)[1]:  # a namespace's deletion takes its veth pair along; the bridge is left
        subprocess.run(["ip", "link", "del", link], capture_output=True)
    if shutil.which("iptables"):
        rule = forward_rule(f"{prefix}-br")
        while subprocess.run(["iptables", "-D", "FORWARD", *rule], capture_output=True).returncode == 0:
            pass
        for table, chain in (("filter", "DOCKER-USER"), ("nat", "POSTROUTING")):  # faasgd.local.nodes.docker_net's
            for rule in commented_rules(table, chain, prefix):
                subprocess.run(["iptables", "-w", "5", "-t", table, "-D", chain, *rule], capture_output=True)


def commented_rules(table: str, chain: str, comment: str) -> list[list[str]]:
    """The rules of `chain` in `table` carrying the comment `comment`, as `iptables -D CHAIN` takes them (none when
    there is no such chain)."""
    listed = subprocess.run(["iptables", "-w", "5", "-t", table, "-S", chain], capture_output=True, text=True).stdout
    rules = [line.split()[2:] for line in listed.splitlines() if line.startswith(f"-A {chain} ")]
    return [[word.strip('"') for word in rule] for rule in rules
            if "--comment" in rule[:-1] and rule[rule.index("--comment") + 1].strip('"') == comment]
