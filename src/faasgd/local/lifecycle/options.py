"""What `faasgd up` asks of a runtime, as one value from the command line to the daemon.

    options = UpOptions("stack.yml", port=0, wait=True)   # the CLI's flags, or start_runtime's arguments
    state, started = control.up(options)                  # checked once, given to the daemon as its flags

`faasgd up`'s flags and faasgd.api.start_runtime's arguments build it once; control.up checks it and starts the
daemon with `to_argv()`; the daemon reads it back once (`from_args`) and hands it down whole. A setting is added
here, in to_argv and in from_args, and nowhere else on the way.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from pathlib import Path

from faasgd.checks import whole_number
from faasgd.errors import ConfigError
from faasgd.local.nodes import network, placement
from faasgd.local.queue import rules
from faasgd.local.queue.rules import DeliveryPolicy
from faasgd.local.services import optional_stores
from faasgd.local.services.stack_groups import GroupSizes

DEFAULT_DIR = ".faasgd"
BACKENDS = ("process", "docker")  # how replicas run: host processes, or containers of their images


@dataclass(frozen=True)
class UpOptions:
    """One runtime's settings, as `faasgd up` takes them; stores is normalised ("pool,s3" -> ("pool", "s3"))."""

    stack: str | os.PathLike = "stack.yml"  # the stack file (faas-cli's -f)
    port: int = 8080  # the gateway's port on 127.0.0.1; 0: a free one (state["gateway_url"] has it)
    directory: str | os.PathLike = DEFAULT_DIR  # state.json, logs, build folders, secrets
    ack_wait_s: float = 300.0  # an async delivery not acked after this is delivered again (queue-worker's ack_wait)
    upstream_timeout_s: float = 300.0  # a call taking longer answers 504 (the gateway's upstream_timeout)
    queue_workers: int | None = None  # None: one per call the replicas run at once
    delivery: DeliveryPolicy = DeliveryPolicy()  # the async queue's rules: ce or pro (faasgd.local.queue.rules)
    backend: str = "process"  # replicas as host processes, or as containers of their images ("docker")
    watchdog: str = "auto"  # the process backend's: auto, off or fwatchdog's path (faasgd.local.replicas.watchdog)
    wait: bool = False  # `up` returns once every replica serves, not once the gateway does
    only: str = "*"  # deploy the stack's functions matching this wildcard (`faas-cli deploy --filter`)
    groups: GroupSizes = GroupSizes()  # a Redis Cluster's and a memcached pool's sizes, when started
    stores: tuple[str, ...] | str = field(default=())  # optional stores for every function: cluster, pool, s3
    nodes: int = 1  # emulated nodes (faasgd.local.nodes); 1: none, everything on the host as before
    node_link: str | None = None  # each node's link rate, tc's form ("100mbit"); None: unshaped
    placement: str = "affinity"  # affinity | spread: honour the manifests' pod affinity, or not (nodes.placement)

    def __post_init__(self) -> None:
        object.__setattr__(self, "stores", optional_stores.parse(self.stores))

    def check(self) -> UpOptions:
        """ConfigError naming the flag when an option is out of range (nothing is started); self."""
        check_options(self.port, self.ack_wait_s, self.queue_workers, self.upstream_timeout_s)
        if self.backend not in BACKENDS:
            raise ConfigError("--backend", f"must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        self.groups.check()
        network.check_nodes(self.nodes)
        placement.check_policy(self.placement)
        if self.node_link is not None:
            network.parse_rate(self.node_link)
        if self.nodes > 1 and self.stores:
            raise ConfigError("--nodes", f"emulated nodes run the single-server stores only, not --stores "
                                         f"{','.join(self.stores)}")
        if self.nodes == 1 and (self.node_link is not None or self.placement != "affinity"):
            raise ConfigError("--node-link" if self.node_link is not None else "--placement",
                              "shapes and places among emulated nodes: give --nodes 2 or more")
        return self

    def to_argv(self) -> list[str]:
        """The daemon's flags for these options (`python -m faasgd.local.lifecycle.daemon`), stack and folder
        resolved."""
        argv = ["--stack", str(Path(self.stack).resolve()), "--dir", str(Path(self.directory).resolve()),
                "--port", str(self.port), "--ack-wait", str(self.ack_wait_s),
                "--upstream-timeout", str(self.upstream_timeout_s), "--backend", self.backend,
                "--watchdog", self.watchdog, "--filter", self.only, *self.groups.to_argv(),
                *(["--stores", ",".join(self.stores)] if self.stores else []),
                *(["--nodes", str(self.nodes), "--placement", self.placement] if self.nodes > 1 else []),
                *(["--node-link", self.node_link] if self.node_link else [])]
        if self.queue_workers:
            argv += ["--queue-workers", str(self.queue_workers)]
        return argv + self.delivery.to_argv()

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> UpOptions:
        """The options the daemon's flags (`to_argv`, parsed by daemon.parse_args) give."""
        return cls(args.stack, args.port, args.dir, args.ack_wait, args.upstream_timeout, args.queue_workers,
                   rules.from_flags(args), args.backend, args.watchdog, only=args.filter,
                   groups=GroupSizes(args.redis_cluster_masters, args.redis_cluster_replicas,
                                     args.memcached_pool_servers),
                   stores=args.stores, nodes=args.nodes, node_link=args.node_link, placement=args.placement)


def check_options(port: int, ack_wait_s: float = 300.0, queue_workers: int | None = None,
                  upstream_timeout_s: float = 300.0) -> None:
    """ConfigError naming the flag when a runtime option is out of range (nothing is started)."""
    whole_number(port, "--port", low=0, high=65535, must="an integer in [0, 65535] (0: a free port)")
    for flag, seconds in (("--ack-wait", ack_wait_s), ("--upstream-timeout", upstream_timeout_s)):
        if not seconds > 0:  # also refuses NaN
            raise ConfigError(flag, f"must be > 0 seconds, got {seconds!r}")
    if queue_workers is not None and queue_workers < 1:
        raise ConfigError("--queue-workers", f"must be >= 1 (leave it out for one per call the replicas run at once), got {queue_workers!r}")
