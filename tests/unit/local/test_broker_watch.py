"""The broker's limit sized to its disk, and the watch that starts nats-server again (fakes for the server and
the clock of `jetstream_serves`; a real nats-server in integration/test_queue_faults.py)."""

from collections import namedtuple
from dataclasses import dataclass

import pytest

from faasgd.local.services import broker, broker_watch
from faasgd.local.services.broker import DEFAULT_STORE_BYTES, MIN_STORE_BYTES, QueueDiskTooSmall, store_limit
from faasgd.local.services.broker_watch import BrokerWatch

Usage = namedtuple("Usage", "total used free")


@pytest.mark.parametrize("free, held, limit", [
    (100 << 30, 0, DEFAULT_STORE_BYTES),  # a big disk: the default
    (60 << 20, 4 << 20, int((64 << 20) * 0.9)),  # a 64 MiB disk: 90% of its room, the queue's own files counted
])
def test_the_limit_is_the_default_or_what_the_disk_has_room_for(tmp_path, monkeypatch, free, held, limit):
    monkeypatch.setattr(broker.shutil, "disk_usage", lambda path: Usage(free * 2, free, free))
    (tmp_path / "1.blk").write_bytes(b"\0" * held)
    assert store_limit(tmp_path) == limit


def test_a_disk_without_room_is_refused_naming_the_directory_the_space_and_the_flag(tmp_path, monkeypatch):
    monkeypatch.setattr(broker.shutil, "disk_usage", lambda path: Usage(1 << 30, 1 << 30, 1 << 20))
    with pytest.raises(QueueDiskTooSmall) as refused:
        store_limit(tmp_path)
    assert str(tmp_path) in str(refused.value) and "0.9 MiB of room" in str(refused.value)
    assert f"at least {MIN_STORE_BYTES / (1 << 20):.1f} MiB" in str(refused.value) and "--dir" in str(refused.value)


@dataclass
class FakeServer:
    port: int = 4222
    workdir: str = "/queue"
    url: str = "nats://127.0.0.1:4222"
    pid: int = 1
    running: bool = True
    stopped: bool = False

    def alive(self) -> bool:
        return self.running

    def stop(self, timeout: float = 5.0) -> None:
        self.running, self.stopped = False, True


@pytest.fixture
def answering(monkeypatch):
    answers = {"ok": True}
    monkeypatch.setattr(broker_watch, "jetstream_serves", lambda port, timeout: answers["ok"])
    return answers


def test_a_dead_broker_is_started_again_on_its_port_and_store(answering):
    started, told = [], []
    first = FakeServer()

    def start(workdir, port):
        started.append((workdir, port))
        return FakeServer(pid=2)

    watch = BrokerWatch(first, on_restart=told.append, start=start)
    watch.check()
    assert started == [] and watch.problem is None
    first.running = False
    watch.check()
    assert started == [("/queue", 4222)] and watch.server.pid == 2 and told == [watch.server] and watch.restarts == 1
    watch.stop()
    assert watch.server.stopped and watch.problem is None  # the one the watch started is its own to stop


def test_a_silent_broker_is_restarted_only_after_stuck_s(answering, monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(broker_watch.time, "monotonic", lambda: clock[0])
    first, started = FakeServer(), []
    watch = BrokerWatch(first, stuck_s=10, start=lambda workdir, port: started.append(port) or FakeServer(pid=3))
    answering["ok"] = False
    watch.check()
    clock[0] += 9
    watch.check()
    assert not started and not first.stopped and "has not answered JetStream for 9s" in watch.problem
    clock[0] += 1
    watch.check()
    assert first.stopped and started == [4222] and watch.problem is None


def test_a_broker_that_cannot_start_again_is_the_problem_until_it_can(answering):
    first, outcomes = FakeServer(running=False), [QueueDiskTooSmall("no room on /queue"), FakeServer(pid=4)]

    def start(workdir, port):
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    watch = BrokerWatch(first, start=start)
    watch.check()
    assert watch.problem == "no room on /queue" and watch.server is first
    watch.check()
    assert watch.problem is None and watch.server.pid == 4
