"""The gateway's settings and the registry it reads replicas from (its clock: faasgd.local.clock)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from faasgd.checks import whole_number
from faasgd.errors import ConfigError
from faasgd.local.api import FunctionDeployment
from faasgd.local.queue.rules import DeliveryPolicy


@dataclass(frozen=True)
class GatewayOptions:
    host: str = "127.0.0.1"  # loopback only
    port: int = 8080  # 0 lets the OS pick (then read LocalGateway.url after start)
    upstream_timeout_s: float = 300.0  # a call taking longer -> 504 (the whole call, body included)
    ack_wait_s: float = 300.0  # an async delivery not finished after this is delivered again
    queue_workers: int | None = None  # None: one per call the replicas run at once (registry.call_slots(), re-read every 0.5 s)
    delivery: DeliveryPolicy = DeliveryPolicy()  # async calls: ce (no retries) or pro (retries), queue/rules.py
    version: str = "0.1.0"  # in X-Served-By and /system/info
    sha: str = "unknown"  # /system/info's version.sha (the OpenAPI spec requires one): the source's git commit
    # /system/* asks for this (user, password) with HTTP basic auth, as OpenFaaS's basic_auth=true does;
    # None leaves it open (in-process tests). Never shown in repr.
    basic_auth: tuple[str, str] | None = field(default=None, repr=False)
    secrets_dir: str | None = None  # where /system/secrets keeps function secrets (None: no such route)
    max_async_body_bytes: int = 1 << 20  # NATS message limit; larger async bodies -> 413
    # Sync bodies are read whole before forwarding (the replica gets a Content-Length), so this bounds
    # the memory one call can pin. CE sets no limit; faasgd's calls carry small JSON (weights travel
    # through the store), and 32 MiB leaves room for files sent with `faas-cli invoke`.
    max_sync_body_bytes: int = 32 << 20
    body_idle_timeout_s: float = 10.0  # a request body with no byte for this long -> 408 (gateway/limits.py)
    backlog: int = 2048  # listen backlog; http.server's 5 reset a third of 50 concurrent connections
    # A call for a function with no healthy replica waits this long for one that is starting (gateway/directory.py)
    replica_wait_s: float = 60.0

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ConfigError("port", f"must be in [0, 65535], got {self.port!r}")
        for name in ("upstream_timeout_s", "ack_wait_s", "body_idle_timeout_s", "replica_wait_s"):
            if not getattr(self, name) > 0:
                raise ConfigError(name, f"must be > 0 seconds, got {getattr(self, name)!r}")
        if not isinstance(self.delivery, DeliveryPolicy):
            raise ConfigError("delivery", f"must be a DeliveryPolicy (queue/rules.py), got {self.delivery!r}")
        if self.queue_workers is not None and self.queue_workers < 1:
            raise ConfigError("queue_workers", f"must be None (one per call the replicas run at once) or >= 1, got {self.queue_workers!r}")
        if self.basic_auth is not None and not (len(self.basic_auth) == 2 and all(self.basic_auth)):
            raise ConfigError("basic_auth", "must be None or a (user, password) pair, both non-empty")
        for name in ("max_async_body_bytes", "max_sync_body_bytes", "backlog"):
            whole_number(getattr(self, name), name, low=1)


class Registry(Protocol):
    """What the gateway needs of the replica supervisor (faasgd.local.replicas.supervisor.Supervisor). deploy,
    remove and scale raise faasgd.local.api.Refused carrying the status to answer."""

    def function_names(self) -> list[str]: ...
    def describe(self, name: str) -> dict | None: ...
    def replica_urls(self, name: str) -> list[str]: ...
    def starting(self, name: str) -> bool: ...  # a replica is alive but not healthy yet: a call may wait for it
    def calls_per_replica(self, name: str) -> int: ...  # calls one replica runs at once; more wait inside it
    def scale(self, name: str, replicas: int) -> int: ...  # returns the count set (clamped)
    def call_slots(self) -> int: ...  # calls all replicas run at once: one queue worker each
    def deploy(self, request: FunctionDeployment, update: bool) -> None: ...
    def remove(self, name: str) -> None: ...
    def log_sources(self, name: str) -> list[tuple[str, Path]] | None: ...  # (replica, log file); None: unknown
