"""The registry as the event loop sees it: every look-up runs in a worker thread.

The registry is synchronous and may hold its lock for seconds (the Supervisor stops a replica, or
starts one, inside its lock), so a call made on the event loop would stall every request in
flight; a thread hop costs tens of microseconds. Names: "NAME.openfaas-fn" means NAME, since the
local runtime has one namespace.

A call for a function none of whose replicas is healthy yet, but one is starting (`faasgd up` returns before
its replicas serve), waits for one up to `wait_s`, as OpenFaaS's gateway holds a call while it scales a
function from zero; with none starting (all dead, or none wanted) it is answered at once.

A call whose function's healthy replicas all run as many calls as they can at once (`waitress_threads`), while
another replica is starting, waits the same way, for a call to end or the new replica to serve, whichever comes
first. A departure from CE, which would queue it inside a full replica: there it waits for one of that replica's
calls to end, and a loop-mode training call ends with its job. That happened when a replica was stopped: its
handed-off calls reached the one replica left, full of loop calls, and waited there past their lease while the
replacement served nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from anyio import to_thread

from faasgd.local.api import NAMESPACE, FunctionDeployment
from faasgd.local.clock import Clock, RealClock
from faasgd.local.gateway.options import Registry

POLL_S = 0.02  # how often a waiting call looks for a replica that has become healthy


class Directory:
    """Async look-ups of functions, replicas and replica counts in a Registry."""

    def __init__(self, registry: Registry, wait_s: float = 0.0, clock: Clock | None = None):
        self.registry, self.wait_s, self.clock = registry, wait_s, clock or RealClock()

    async def route(self, name: str, in_flight: Callable[[str], int] | None = None) -> tuple[str | None, list[str]]:
        """The registry's name for a path's NAME (None if unknown) and its healthy replica URLs (replica_urls)."""
        function = await to_thread.run_sync(self._resolve, name)
        return function, (await self.replica_urls(function, in_flight) if function else [])

    async def replica_urls(self, function: str, in_flight: Callable[[str], int] | None = None) -> list[str]:
        """The function's healthy replica URLs; while there are none, or (given `in_flight`, the calls a URL has in
        flight) each runs all the calls it can at once, and a replica is starting: waited for, up to `wait_s`."""
        deadline, capacity = self.clock.now() + self.wait_s, None
        while True:
            urls, starting = await to_thread.run_sync(self._look, function)
            if urls and in_flight is not None and capacity is None and min(map(in_flight, urls)) > 0:
                capacity = await to_thread.run_sync(self.registry.calls_per_replica, function)
            # decided with no await before the caller's Balancer.acquire: two calls never both take the last thread
            if urls and (in_flight is None or capacity is None or min(map(in_flight, urls)) < capacity):
                return urls
            if not starting or self.clock.now() >= deadline:
                return urls
            await self.clock.sleep(POLL_S)

    def _look(self, function: str) -> tuple[list[str], bool]:
        """(healthy URLs, starting), read in that order's reverse: a replica turning healthy in between is starting
        in the first read and among the URLs in the second, so no call is told there is none while one serves."""
        starting = self.registry.starting(function)
        return self.registry.replica_urls(function), starting

    async def status(self, name: str) -> dict | None:
        """The registry's description of one function (None if unknown)."""
        return await to_thread.run_sync(self._status, name)

    async def statuses(self) -> list[dict]:
        return await to_thread.run_sync(self._statuses)

    async def resolve(self, name: str) -> str | None:
        return await to_thread.run_sync(self._resolve, name)

    async def scale(self, function: str, replicas: int) -> int:
        """Ask for a replica count; returns the count set (the registry clamps it)."""
        return await to_thread.run_sync(self.registry.scale, function, replicas)

    async def deploy(self, request: FunctionDeployment, update: bool) -> None:
        """Create or update a function; raises faasgd.local.api.Refused with the status to answer."""
        await to_thread.run_sync(self.registry.deploy, request, update)

    async def remove(self, name: str) -> None:
        await to_thread.run_sync(self.registry.remove, name)

    async def log_sources(self, name: str) -> list[tuple[str, Path]] | None:
        """(replica, log file) pairs of a function (None if unknown); NAME.openfaas-fn accepted."""
        return await to_thread.run_sync(self._log_sources, name)

    async def call_slots(self) -> int:
        return await to_thread.run_sync(self.registry.call_slots)

    async def available_replicas(self) -> dict[str, int]:
        """Each function's available replicas, for gateway_service_count."""
        return await to_thread.run_sync(self._available)

    def _resolve(self, name: str) -> str | None:
        names = self.registry.function_names()
        if name in names:
            return name
        base, _, namespace = name.rpartition(".")
        return base if namespace == NAMESPACE and base in names else None

    def _log_sources(self, name: str) -> list[tuple[str, Path]] | None:
        function = self._resolve(name)
        return self.registry.log_sources(function) if function else None

    def _status(self, name: str) -> dict | None:
        function = self._resolve(name)
        return self.registry.describe(function) if function else None

    def _statuses(self) -> list[dict]:
        described = [self.registry.describe(name) for name in self.registry.function_names()]
        return [d for d in described if d is not None]

    def _available(self) -> dict[str, int]:
        counts = {}
        for name in self.registry.function_names():
            counts[name] = int((self.registry.describe(name) or {}).get("availableReplicas") or 0)
        return counts
