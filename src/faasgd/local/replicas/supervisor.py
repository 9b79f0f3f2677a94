"""Function replicas as processes, kept as faas-netes and Kubernetes keep a cluster's functions.

The Supervisor holds the deployed functions (faasgd.local.replicas.deployments), starts `scale.min` replicas
of each (faasgd.local.replicas.pods), deploys, updates and removes functions and scales them on request
(the gateway's Registry, faasgd.local.gateway.options), and replaces a replica that dies, as a
Deployment would. An update is rolled out as Kubernetes does with maxUnavailable 0: the new
replicas start, and the old ones stop once every new one is healthy. A replica that goes (rolled
out, scaled down, its function removed) leaves the routing at once and is stopped in the background
(it drains on SIGTERM for up to its healthcheck_interval), so no call waits on it; it stays in the
state file until it has stopped.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable

from faasgd.errors import FaasgdError
from faasgd.local.api import FunctionDeployment, MAX_FUNCTIONS, NAMESPACE, Refused
from faasgd.local.replicas.deployments import (Catalog, Deployment, calls_per_replica, deployed_spec, function_status,
                                               replicas_after_update, scaled)
from faasgd.local.replicas.pods import Host, Replica, start_replica

RECONCILE_S = 0.3  # how often dead replicas are replaced and health re-checked
STARTING_S = 0.05  # ... and while a replica is starting, so the gateway routes to it as soon as it serves


def in_a_thread(work: Callable[[], None]) -> threading.Thread:
    """Run `work` in a daemon thread (how replicas that go are stopped)."""
    thread = threading.Thread(target=work, name="faasgd-retire", daemon=True)
    thread.start()
    return thread


class Supervisor:
    """Keeps each deployed function at its desired replica count; implements the gateway's Registry."""

    def __init__(self, deployments: dict[str, Deployment], catalog: Catalog, host: Host,
                 on_change: Callable[[], None] | None = None,
                 spawn: Callable[[Deployment, str, Host], Replica] = start_replica,
                 background: Callable[[Callable[[], None]], object] = in_a_thread,
                 seat: Callable[[Host, str, list[tuple[str, str]]], Host] | None = None):
        self.deployments, self.catalog, self.host, self.on_change = dict(deployments), catalog, host, on_change
        self.spawn = spawn  # starts one replica (tests pass one that starts no process)
        self.background = background  # runs a replica's stop (tests run it at once)
        # with emulated nodes (faasgd.local.nodes.cluster): the Host on the node a new replica of a function goes
        # to, given the (function, node) of the replicas running; None: every replica on the host
        self.seat = seat
        self.retiring: list[Replica] = []  # out of the routing, stopping
        self.desired = {name: d.spec.min_replicas for name, d in self.deployments.items()}
        self.replicas: dict[str, list[Replica]] = {name: [] for name in self.deployments}
        self.restarts = {name: 0 for name in self.deployments}
        self._counter: dict[str, int] = {}  # never reset, so a re-created function's replicas get new names
        self._served: set[str] = set()  # the replicas listed that have been healthy once (starting: one is due)
        self._was_available = False  # all_available at the last reconcile: a change is told to on_change
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, ready_timeout_s: float | None = 60.0) -> None:
        """Start every function's replicas; return once all are healthy, or at once with `ready_timeout_s` None
        (the runtime's way: the gateway holds a call for a function whose replicas are still starting,
        `starting`, as OpenFaaS's gateway holds one while it scales a function from zero)."""
        self.reconcile()
        deadline = time.monotonic() + (ready_timeout_s or 0.0)
        while ready_timeout_s is not None and not self.all_available():
            if time.monotonic() > deadline:
                raise FaasgdError(f"replicas not healthy after {ready_timeout_s:.0f}s; see {self.host.directory}/logs")
            time.sleep(STARTING_S)
            self.reconcile()
        self._thread = threading.Thread(target=self._loop, name="faasgd-supervisor", daemon=True)
        self._thread.start()

    def all_available(self) -> bool:
        """Every function has its desired count of healthy replicas of its current rollout."""
        with self._lock:
            return all(self._available(name) >= self.desired[name] for name in self.deployments)

    def stop(self, busy: set[str] | None = None) -> None:
        """Stop every replica, all at once. With `busy` (the URLs a call was in flight to when the gateway
        stopped), a replica not in it is idle: nothing it could finish remains, so it is killed at once
        (`stop_now`) instead of draining for its healthcheck_interval; busy ones drain. Those already
        retiring are waited for."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            serving = [r for replicas in self.replicas.values() for r in replicas]
            for replicas in self.replicas.values():
                replicas.clear()
            retiring = list(self.retiring)
        idle = [r for r in serving if busy is not None and r.url not in busy]
        stops = [r.stop_now for r in idle] + [r.stop for r in serving + retiring if r not in idle]
        for thread in [in_a_thread(stop) for stop in stops]:
            thread.join()

    def _loop(self) -> None:
        while not self._stopping.wait(RECONCILE_S if self.all_available() else STARTING_S):
            self.reconcile()

    def reconcile(self) -> None:
        """Replace dead replicas, reach the desired counts, re-check health, retire replaced replicas; `on_change`
        when the replicas changed or every function's replicas became available or stopped being so."""
        changed = False
        with self._lock:
            if self._stopping.is_set():
                return
            for name, replicas in self.replicas.items():
                changed |= self._reconcile(name, replicas)
            available = self.all_available()
            changed |= available != self._was_available
            self._was_available = available
        if changed and self.on_change is not None:
            self.on_change()

    def _reconcile(self, name: str, replicas: list[Replica]) -> bool:
        generation, before = self.deployments[name].generation, [r.name for r in replicas]
        for dead in [r for r in replicas if not r.alive()]:
            replicas.remove(dead)
            self._served.discard(dead.name)
            dead.stop()
            self.restarts[name] += dead.generation == generation
        current = [r for r in replicas if r.generation == generation]
        while len(current) < self.desired[name]:
            current.append(self._spawn(name))
            replicas.append(current[-1])
        while len(current) > self.desired[name]:
            surplus = current.pop()  # the newest goes first
            replicas.remove(surplus)
            self._retire(surplus)
        for replica in replicas:
            replica.check_health()
        self._served.update(r.name for r in replicas if r.healthy)
        if all(r.healthy for r in current):  # a rollout ends once the new replicas all serve
            for old in [r for r in replicas if r.generation != generation]:
                replicas.remove(old)
                self._retire(old)
        return [r.name for r in replicas] != before

    def _retire(self, replica: Replica) -> None:
        """Stop a replica that left the routing, in the background; it stays listed until stopped."""
        self.retiring.append(replica)

        def finish() -> None:
            replica.stop()
            with self._lock:
                self.retiring.remove(replica)
            if self.on_change is not None:
                self.on_change()

        self.background(finish)

    def _spawn(self, name: str) -> Replica:
        self._counter[name] = self._counter.get(name, 0) + 1
        host = self.host
        if self.seat is not None:
            host = self.seat(host, name, [(r.function, r.node) for rs in self.replicas.values() for r in rs])
        return self.spawn(self.deployments[name], f"{name}-{self._counter[name]}", host)

    def _available(self, name: str) -> int:
        """Healthy replicas of the current rollout: until an update has rolled out, fewer than desired
        (Kubernetes also counts the old pods still serving; here "available" means "rolled out")."""
        generation = self.deployments[name].generation
        return sum(1 for r in self.replicas[name] if r.healthy and r.generation == generation)

    # -- the gateway's Registry ----------------------------------------------------------------
    def function_names(self) -> list[str]:
        with self._lock:
            return list(self.deployments)

    def describe(self, name: str) -> dict | None:
        with self._lock:
            deployment = self.deployments.get(name)
            if deployment is None:
                return None
            status = function_status(deployment, self.desired[name], self._available(name))
            replicas = self.replicas[name]
            nodes = {r.name: r.node for r in replicas if r.node}  # with emulated nodes only
            return {**status, "restarts": self.restarts[name], "pids": [r.pid for r in replicas],
                    "function_pids": [pid for r in replicas if (pid := r.function_pid()) is not None],
                    **({"replicaNodes": nodes} if nodes else {})}

    def replica_urls(self, name: str) -> list[str]:
        with self._lock:
            return [r.url for r in self.replicas.get(name, []) if r.healthy and r.alive()]

    def starting(self, name: str) -> bool:
        """Whether a replica of the function is alive but not healthy yet (started, or failing its probes), or one that
        served has exited and the next reconcile replaces it. A replica that never served (a crash loop, a container
        that did not start) counts only while alive: a call for a function that cannot start is answered at once."""
        with self._lock:
            return any(not r.healthy if r.alive() else r.name in self._served for r in self.replicas.get(name, []))

    def calls_per_replica(self, name: str) -> int:
        with self._lock:
            deployment = self.deployments.get(name)
        return calls_per_replica(deployment.spec) if deployment is not None else 1

    def scale(self, name: str, replicas: int) -> int:
        """Set the desired count, clamped to [1, scale.max] (faasgd.local.api.clamp_replicas); returns it."""
        with self._lock:
            if name not in self.deployments:
                raise Refused(404, f"function not found: {name}")
            self.desired[name] = scaled(self.deployments[name].spec, replicas)
            count = self.desired[name]
        self.reconcile()
        return count

    def deploy(self, request: FunctionDeployment, update: bool) -> None:
        """Create (`update` False) or update a function from a FunctionDeployment; the rollout follows.

        Refused: 404 updating a function that does not exist (faas-cli then creates it), 400 for an
        image the runtime does not build or a 16th function (CE's cap), 409 creating one that exists
        (CE answers 500 with Kubernetes' "already exists").
        """
        name = request.service
        with self._lock:
            if update and name not in self.deployments:
                raise Refused(404, f"unable update Deployment: {name}.{NAMESPACE}, error: deployments.apps "
                                   f"\"{name}\" not found")
        code = self.catalog.code_for(request.image)  # may pull the image (container backend): outside the lock
        with self._lock:
            existing = self.deployments.get(name)
            if update and existing is None:
                raise Refused(404, f"unable update Deployment: {name}.{NAMESPACE}, error: deployments.apps "
                                   f"\"{name}\" not found")
            if not update and existing is not None:
                raise Refused(409, f"unable create Deployment: deployments.apps \"{name}\" already exists")
            if existing is None and len(self.deployments) >= MAX_FUNCTIONS:
                raise Refused(400, f"unable to create function, maximum: {MAX_FUNCTIONS} (Community Edition)")
            spec = deployed_spec(request, code)
            if existing is None:
                self.deployments[name] = Deployment(spec, code, time.time())
                self.desired[name], self.replicas[name], self.restarts[name] = spec.min_replicas, [], 0
            else:
                self.deployments[name] = Deployment(spec, code, existing.created_at, existing.generation + 1)
                self.desired[name] = replicas_after_update(request, self.desired[name])
        self.reconcile()

    def remove(self, name: str) -> None:
        """Delete a function and stop its replicas; Refused(404) if there is no such function."""
        with self._lock:
            if name not in self.deployments:
                raise Refused(404, f"deployments.apps \"{name}\" not found")
            del self.deployments[name], self.desired[name], self.restarts[name]
            for replica in self.replicas.pop(name):
                self._retire(replica)
        if self.on_change is not None:
            self.on_change()

    def log_sources(self, name: str) -> list[tuple[str, Path]] | None:
        """(replica name, log file) of the function's replicas now, as Kubernetes keeps pods' logs."""
        with self._lock:
            return [(r.name, r.log_path) for r in self.replicas[name]] if name in self.deployments else None

    def call_slots(self) -> int:
        """Calls every function's replicas run at once (desired replicas x calls per replica): the queue's workers."""
        with self._lock:
            return sum(count * calls_per_replica(self.deployments[name].spec) for name, count in self.desired.items())

    def processes(self) -> list[dict]:
        """Every replica process, for the state file (faasgd down stops them by pid)."""
        with self._lock:
            listed = [r for rs in self.replicas.values() for r in rs] + self.retiring
            return [{"function": r.function, "name": r.name, **r.ref.to_json(), "port": r.port,
                     "log": str(r.log_path), **({"node": r.node} if r.node else {})} for r in listed]
