"""The wall around the runtime's address on its Docker network: only that network (and the host) reach it.

Under `--backend docker` redis-server, memcached, the store groups, the S3 server and the gateway listen on the
host's address on the runtime's bridge network (its gateway, e.g. 172.18.0.1) besides 127.0.0.1. A packet a
container sends to an address of the host is the host's to deliver (iptables' INPUT chain, never Docker's
FORWARD or DOCKER-USER), whichever Docker network the container is on: without a wall every container on the
machine reaches those ports. So the runtime adds, for as long as it runs, one chain of its own:

    INPUT:          -d <address>/32 -j FAASGD-<id>        (inserted first; comment faasgd-<id>)
    FAASGD-<id>:    -i lo -j RETURN                        the host's own processes (the cluster's nodes meet there)
                    -i <the network's bridge> -j RETURN    the runtime's containers
                    -i <a node's bridge> -j RETURN         with emulated nodes (`admit`), each node's containers
                    -p tcp -j REJECT --reject-with tcp-reset
                    -j DROP                                anything else, from any other interface

A RETURN goes on through INPUT as before (the machine's own rules still apply). The bridge is the network's
Linux interface (`br-<the network id's first 12>` unless the network names its own). Every port on that address is
walled, not a list of the stores' ports: the S3 server and a restarted broker take theirs later, and nothing of the
runtime's there is meant for anyone else.

`close` is idempotent: it first removes what a runtime of the same folder left (a killed daemon has no `finally`),
then adds the chain; `open_up` removes it (the daemon's exit, `faasgd down`, and the next `faasgd up`). iptables
needs root: without it `close` raises WallError saying so, and the runtime does not start (a runtime whose stores
any container reaches is not started quietly).
"""

from __future__ import annotations

import shutil
import subprocess

from faasgd.errors import FaasgdError

CALL_TIMEOUT_S = 20.0
COMMENT_PREFIX = "faasgd-"


class WallError(FaasgdError):
    """Raised when the runtime cannot put up (or take down) its wall: no iptables, no root, a rule refused."""


def chain_name(runtime_id: str) -> str:
    """The runtime's chain (iptables allows 28 characters; an id is 10)."""
    return f"FAASGD-{runtime_id}"


def rules(runtime_id: str, address: str, bridge: str) -> list[list[str]]:
    """The iptables argument lists that put the wall up, in order (the chain is created first)."""
    chain = chain_name(runtime_id)
    return [["-N", chain],
            ["-A", chain, "-i", "lo", "-j", "RETURN"],
            ["-A", chain, "-i", bridge, "-j", "RETURN"],
            ["-A", chain, "-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset"],
            ["-A", chain, "-j", "DROP"],
            ["-I", "INPUT", "1", "-d", f"{address}/32", "-m", "comment", "--comment",
             f"{COMMENT_PREFIX}{runtime_id}", "-j", chain]]


def bridge_name(network: dict) -> str:
    """The Linux bridge of a Docker network as `docker network inspect` describes it."""
    named = (network.get("Options") or {}).get("com.docker.network.bridge.name")
    return named or f"br-{network['Id'][:12]}"


def iptables(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """`iptables -w ARGS` (waiting for the xtables lock Docker also takes); WallError when it fails and `check`."""
    binary = shutil.which("iptables")
    if binary is None:
        raise WallError("backend docker: iptables not found on PATH (Debian: apt-get install iptables); the runtime "
                        "will not start with its stores open to every container on this machine")
    try:
        done = subprocess.run([binary, "-w", "5", *args], capture_output=True, text=True, timeout=CALL_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as error:
        raise WallError(f"iptables {' '.join(args[:2])}: no answer within {CALL_TIMEOUT_S:.0f}s") from error
    if check and done.returncode != 0:
        raise WallError(f"backend docker: iptables {' '.join(args)} failed: {done.stderr.strip()} "
                        f"(it needs root: run `faasgd up --backend docker` as root); the runtime will not start "
                        f"with its stores open to every container on this machine")
    return done


def close(runtime_id: str, address: str, bridge: str) -> None:
    """Put the wall up (anything a runtime of this id left is taken down first); WallError when it cannot."""
    open_up(runtime_id)
    try:
        for rule in rules(runtime_id, address, bridge):
            iptables(*rule)
    except BaseException:
        open_up(runtime_id)
        raise


def admit(runtime_id: str, bridges: list[str]) -> None:
    """Let more bridges through the wall (the emulated nodes' networks, faasgd.local.nodes.docker_net), before its
    REJECT; WallError when it cannot."""
    for bridge in bridges:
        iptables("-I", chain_name(runtime_id), "2", "-i", bridge, "-j", "RETURN")


def open_up(runtime_id: str) -> bool:
    """Take the runtime's wall down: every INPUT rule jumping to its chain, then the chain. Whether there was one.
    Never raises for a wall that is not there (or an iptables that is not: then there is none)."""
    if shutil.which("iptables") is None:
        return False
    chain = chain_name(runtime_id)
    listed = [line.split() for line in iptables("-S", "INPUT", check=False).stdout.splitlines()]
    jumps = [words[2:] for words in listed if words[:2] == ["-A", "INPUT"] and jumps_to(words, chain)]
    for rule in jumps:
        iptables("-D", "INPUT", *unquoted(rule), check=False)
    found = iptables("-S", chain, check=False).returncode == 0
    if found:
        iptables("-F", chain, check=False)
        iptables("-X", chain, check=False)
    return found or bool(jumps)


def jumps_to(words: list[str], chain: str) -> bool:
    return "-j" in words[:-1] and words[words.index("-j") + 1] == chain


def unquoted(words: list[str]) -> list[str]:
    """`iptables -S` quotes a comment with spaces; ours have none, but a quote would make -D miss the rule."""
    return [word.strip('"') for word in words]


def is_up(runtime_id: str) -> bool:
    """The runtime's chain exists (tests, `faasgd status`)."""
    return shutil.which("iptables") is not None and iptables("-S", chain_name(runtime_id), check=False).returncode == 0
