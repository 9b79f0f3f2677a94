"""`faasgd up` returns before its replicas serve, and `down` kills idle replicas at once.

A call for a function whose replicas are still starting waits for one (bounded), as OpenFaaS's gateway holds a
call while it scales a function from zero; with none starting it is answered at once. The runtime's stop
drains only the replicas a call was in flight to; idle ones are killed without their healthcheck_interval.
"""

from __future__ import annotations

import time

import anyio

from faasgd.local.gateway.directory import Directory
from support.fake_pods import FakePods, fake_supervisor

URL = "http://replica-1.test:8080"


class StartingRegistry:
    """One function whose replica serves after `ready_after` looks (None: never), or that has none starting."""

    def __init__(self, ready_after: int | None, starting: bool = True):
        self.ready_after, self.is_starting, self.looks = ready_after, starting, 0

    def replica_urls(self, name: str) -> list[str]:
        self.looks += 1
        return [URL] if self.ready_after is not None and self.looks > self.ready_after else []

    def starting(self, name: str) -> bool:
        return self.is_starting


def urls_after(registry: StartingRegistry, wait_s: float) -> tuple[list[str], float]:
    began = time.monotonic()
    urls = anyio.run(Directory(registry, wait_s).replica_urls, "emnist-train")
    return urls, time.monotonic() - began


def test_a_call_waits_for_a_replica_that_is_starting():
    registry = StartingRegistry(ready_after=5)
    urls, _ = urls_after(registry, wait_s=10)
    assert urls == [URL] and registry.looks == 6


def test_with_no_replica_starting_a_call_is_answered_at_once():
    registry = StartingRegistry(ready_after=None, starting=False)
    urls, seconds = urls_after(registry, wait_s=10)
    assert urls == [] and registry.looks == 1 and seconds < 5


def test_the_wait_for_a_starting_replica_is_bounded():
    registry = StartingRegistry(ready_after=None)
    urls, seconds = urls_after(registry, wait_s=0.3)
    assert urls == [] and registry.looks > 1 and 0.3 <= seconds < 5


def test_the_runtime_stop_drains_busy_replicas_and_kills_idle_ones_at_once(tmp_path):
    pods = FakePods()
    supervisor = fake_supervisor(tmp_path, pods)
    busy = next(p for p in pods.made if p.function == "emnist-train")
    supervisor.stop({busy.url})
    assert all(p.stopped for p in pods.made)
    assert busy.drained is True
    assert {p.name for p in pods.made if p.drained is False} == {p.name for p in pods.made} - {busy.name}


def test_without_the_gateway_s_count_every_replica_drains(tmp_path):
    pods = FakePods()
    fake_supervisor(tmp_path, pods).stop()
    assert pods.made and all(p.stopped and p.drained for p in pods.made)


def test_start_without_waiting_returns_with_every_replica_started(tmp_path):
    pods = FakePods()
    supervisor = fake_supervisor(tmp_path, pods)
    supervisor.start(ready_timeout_s=None)
    try:
        assert {p.function for p in pods.made} == set(supervisor.function_names())
        assert not any(supervisor.starting(name) for name in supervisor.function_names())  # fake pods serve at once
    finally:
        supervisor.stop()


def test_a_filter_deploys_only_the_functions_it_matches(tmp_path):
    from support.fake_pods import stack_catalog

    catalog = stack_catalog(tmp_path / "build")
    assert set(catalog.stack_deployments(0.0, "emnist-*")) == {"emnist-setup", "emnist-train"}
    assert len(catalog.stack_deployments(0.0)) == len(catalog.stack) > 2


class SlowPods(FakePods):
    """Fake pods that serve only once `serving` is set (a replica whose imports are still running)."""

    serving = False

    def __call__(self, deployment, name, host):
        pod = super().__call__(deployment, name, host)
        pod.check_health = lambda: setattr(pod, "healthy", pod.alive() and self.serving) or pod.healthy
        return pod


def test_the_runtime_is_told_when_every_replica_has_become_available_and_when_one_no_longer_is(tmp_path):
    pods = SlowPods()
    supervisor = fake_supervisor(tmp_path, pods)
    told = []
    supervisor.on_change = lambda: told.append(supervisor.all_available())
    supervisor.reconcile()
    assert told == []  # nothing changed: still starting
    pods.serving = True
    supervisor.reconcile()
    assert told == [True]  # the same replicas, now all available
    supervisor.reconcile()
    assert told == [True]
    pods.serving = False
    pods.made[0].dead = True
    supervisor.reconcile()  # replaced by one that does not serve yet
    assert told == [True, False]


def test_at_stop_calls_in_flight_get_a_moment_to_end_so_their_replicas_are_killed_not_drained():
    from types import SimpleNamespace

    from faasgd.local.gateway.server import LocalGateway

    def gateway(busy_until: float):
        def busy():
            return {URL} if time.monotonic() < busy_until else set()
        return SimpleNamespace(app=SimpleNamespace(state=SimpleNamespace(balancer=SimpleNamespace(busy=busy))))

    began = time.monotonic()
    assert LocalGateway.busy_replicas(gateway(began + 0.05), 0.5) == set()  # the call ended: idle
    assert time.monotonic() - began < 0.3
    began = time.monotonic()
    assert LocalGateway.busy_replicas(gateway(began + 60), 0.2) == {URL}  # still running: it drains
    assert 0.2 <= time.monotonic() - began < 0.5
    assert LocalGateway.busy_replicas(gateway(time.monotonic() + 60)) == {URL}  # no settling asked: now
