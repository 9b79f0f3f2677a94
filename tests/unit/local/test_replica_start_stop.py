"""`faasgd up` returns before its replicas serve, and `down` kills idle replicas at once.

A call for a function whose replicas are still starting waits for one (bounded), as OpenFaaS's gateway holds a
call while it scales a function from zero; with none starting it is answered at once. So does a call whose
replicas are all full (as many calls in flight as waitress threads) while another starts. The runtime's stop
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


class FullRegistry:
    """One function with a serving replica, URL, and a second one, NEW, that serves after `ready_after` looks."""

    def __init__(self, ready_after: int | None, starting: bool = True, threads: int = 4):
        self.ready_after, self.is_starting, self.threads, self.looks = ready_after, starting, threads, 0

    def replica_urls(self, name: str) -> list[str]:
        self.looks += 1
        return [URL, NEW] if self.ready_after is not None and self.looks > self.ready_after else [URL]

    def starting(self, name: str) -> bool:
        return self.is_starting

    def calls_per_replica(self, name: str) -> int:
        return self.threads


NEW = "http://replica-2.test:8080"


def loaded(calls: int):
    """The balancer's count of calls in flight: `calls` to URL, none elsewhere."""
    return lambda url: calls if url == URL else 0


def urls_after(registry, wait_s: float, in_flight=None) -> tuple[list[str], float]:
    began = time.monotonic()
    urls = anyio.run(Directory(registry, wait_s).replica_urls, "emnist-train", in_flight)
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


class TurningRegistry:
    """One replica that turns healthy right after a look at the URLs (the reconcile ran between two looks)."""

    healthy = False

    def replica_urls(self, name: str) -> list[str]:
        urls, self.healthy = ([URL] if self.healthy else []), True
        return urls

    def starting(self, name: str) -> bool:
        return not self.healthy


def test_a_replica_turning_healthy_between_two_looks_is_never_taken_for_none():
    assert urls_after(TurningRegistry(), wait_s=10)[0] == [URL]


def test_a_call_waits_while_every_replica_is_full_and_one_is_starting():
    registry = FullRegistry(ready_after=5)
    urls, _ = urls_after(registry, wait_s=10, in_flight=loaded(4))
    assert urls == [URL, NEW] and registry.looks == 6


def test_a_full_replica_with_none_starting_takes_the_call_at_once_where_it_waits_inside():
    registry = FullRegistry(ready_after=None, starting=False)
    assert urls_after(registry, wait_s=10, in_flight=loaded(4))[0] == [URL] and registry.looks == 1


def test_a_replica_with_a_thread_free_takes_the_call_at_once():
    for in_flight in (loaded(3), lambda url: 0, None):
        registry = FullRegistry(ready_after=5)
        assert urls_after(registry, wait_s=10, in_flight=in_flight)[0] == [URL] and registry.looks == 1


def test_the_wait_for_a_free_thread_is_bounded_and_then_the_call_waits_inside_a_full_replica():
    registry = FullRegistry(ready_after=None, threads=2)
    urls, seconds = urls_after(registry, wait_s=0.3, in_flight=loaded(2))
    assert urls == [URL] and registry.looks > 1 and 0.3 <= seconds < 5


def test_a_replica_that_served_is_starting_from_its_exit_until_its_replacement_serves_one_that_never_did_is_not(
        tmp_path):
    pods = SlowPods()
    supervisor = fake_supervisor(tmp_path, pods)
    pods.serving = True
    supervisor.reconcile()
    assert not supervisor.starting("emnist-train")
    next(p for p in pods.made if p.function == "emnist-train").dead = True
    assert supervisor.starting("emnist-train")  # exited; the next reconcile replaces it
    supervisor.reconcile()
    assert not supervisor.starting("emnist-train")  # the replacement serves (the fake at once)
    pods.serving = False
    for pod in [p for p in pods.made if p.function == "emnist-train" and not p.dead]:
        pod.dead = True
    supervisor.reconcile()  # replaced by replicas that never serve, and die
    assert supervisor.starting("emnist-train")  # alive, not serving yet: a call waits for them
    for pod in [p for p in pods.made if p.function == "emnist-train" and not p.dead]:
        pod.dead = True
    assert not supervisor.starting("emnist-train")  # dead without ever serving: a call is answered at once
    assert supervisor.calls_per_replica("emnist-train") == int(
        supervisor.deployments["emnist-train"].spec.environment["waitress_threads"])


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
