"""A call's CPU-seconds: the process's clock while the call has the process to itself, its own threads' once another
call shared it, summed over calls in the worker's record with the clock named; the threads' last readings kept."""

from __future__ import annotations

import threading
import time

import pytest

from faasgd.config import load_config
from faasgd.downpour import comm
from faasgd.profile.sampler import Sampler
from faasgd.worker.call_clock import CallClock
from faasgd.call_cpu import MIXED, PROCESS, THREADS, CallCpu, InFlight, joined
from faasgd.worker.progress import WorkerProgress


class Clocks:
    """The process's CPU clock and each thread's, moved by hand (a thread clock of None: the thread has ended)."""

    def __init__(self):
        self.process_s = 100.0
        self.threads: dict[int, float | None] = {threading.get_ident(): 10.0}

    def process(self) -> float:
        return self.process_s

    def thread(self) -> float:
        return self.threads[threading.get_ident()]

    def thread_of(self, ident: int) -> float | None:
        return self.threads.get(ident)

    def spend(self, seconds: float, ident: int | None = None) -> None:
        """`seconds` of CPU on a thread (this one by default): the process's clock moves with it."""
        ident = threading.get_ident() if ident is None else ident
        self.threads[ident] = (self.threads.get(ident) or 0.0) + seconds
        self.process_s += seconds

    def call(self, in_flight: InFlight) -> CallCpu:
        return CallCpu.begin(self.process, self.thread, self.thread_of, in_flight)


class Source:
    """A thread source the call started (its communication thread): its CPU-seconds, set by the test."""

    def __init__(self, seconds: float = 0.0):
        self.seconds = seconds

    def thread_cpu_s(self) -> float:
        return self.seconds


def test_a_call_alone_in_its_process_counts_the_process_clock_from_its_entry():
    clocks, in_flight = Clocks(), InFlight()
    clocks.spend(5.0)  # before the call: not its own
    cpu = clocks.call(in_flight)
    cpu.enter()
    clocks.spend(0.5)  # its training thread
    clocks.process_s += 0.25  # BLAS threads, the garbage collector, the communication thread: the process's
    cpu.watch(Source(0.1))
    assert cpu.used() == (pytest.approx(0.75), PROCESS)
    cpu.leave()
    assert in_flight.running == 0


def test_another_call_during_this_one_turns_its_count_to_its_own_threads_from_the_entry():
    clocks, in_flight = Clocks(), InFlight()
    cpu = clocks.call(in_flight)
    cpu.enter()
    comms = Source()
    cpu.watch(comms)
    clocks.spend(1.0)
    clocks.process_s += 0.4  # not on any of its threads (a BLAS pool)
    assert cpu.used() == (pytest.approx(1.4), PROCESS)
    other = clocks.call(in_flight)
    other.enter()  # a second worker's call in the same replica
    clocks.spend(3.0, ident=12345)  # the other call's thread: in the process's clock, not this call's
    comms.seconds = 0.2
    clocks.spend(0.5)
    assert cpu.used() == (pytest.approx(1.5 + 0.2), THREADS)
    other.leave()
    clocks.spend(0.25)
    assert cpu.used() == (pytest.approx(1.75 + 0.2), THREADS)  # once shared, its threads' to its end
    assert other.used()[1] == THREADS  # it entered while this call trained


def test_a_call_entering_while_another_trains_counts_its_threads_and_a_later_alone_call_the_process():
    clocks, in_flight = Clocks(), InFlight()
    first = clocks.call(in_flight)
    first.enter()
    second = clocks.call(in_flight)
    second.enter()
    clocks.spend(0.3)
    assert second.used() == (pytest.approx(0.3), THREADS)
    first.leave()
    second.leave()
    third = clocks.call(in_flight)
    third.enter()
    clocks.process_s += 0.6
    assert third.used() == (pytest.approx(0.6), PROCESS)


def test_its_entry_thread_is_read_on_its_clock_from_another_thread_and_last_reading_kept_when_it_ends():
    clocks, in_flight = Clocks(), InFlight()
    cpu = clocks.call(in_flight)
    cpu.enter()
    clocks.call(in_flight).enter()  # shared: the threads' clock
    clocks.spend(2.0)
    seen: list = []
    reader = threading.Thread(target=lambda: seen.append(cpu.used()))
    reader.start()
    reader.join()
    assert seen == [(pytest.approx(2.0), THREADS)]
    clocks.threads[cpu.ident] = None  # the entry thread has ended: its last reading stands
    reader = threading.Thread(target=lambda: seen.append(cpu.used()))
    reader.start()
    reader.join()
    assert seen[-1] == (pytest.approx(2.0), THREADS)


def test_the_worker_record_adds_each_calls_cpu_to_the_earlier_calls_and_names_the_clocks():
    clocks, in_flight = Clocks(), InFlight()
    progress = WorkerProgress.fresh(0, seed=1)
    first = CallClock.begin(cpu=clocks.call(in_flight))
    progress.begin_call(first)
    first.cpu.enter()
    clocks.spend(1.0)
    record = progress.record(now=progress.now())
    assert record["cpu_s"] == pytest.approx(1.0) and record["cpu_clock"] == PROCESS
    clocks.spend(0.5)
    record = progress.record(now=progress.now())  # the call's last record
    first.cpu.leave()
    assert record["cpu_s"] == pytest.approx(1.5)
    resumed = WorkerProgress.from_record(record)  # the next call resumes from it (per-iteration, a hand-off)
    second = CallClock.begin(cpu=clocks.call(in_flight))
    resumed.begin_call(second)
    second.cpu.enter()
    clocks.call(in_flight).enter()  # another worker's call joins this replica
    clocks.spend(0.25)
    record = resumed.record(now=resumed.now())
    assert record["cpu_s"] == pytest.approx(1.75) and record["cpu_clock"] == MIXED


def test_clocks_join_into_mixed_only_when_calls_differ():
    assert joined("", PROCESS) == PROCESS and joined(PROCESS, PROCESS) == PROCESS
    assert joined(PROCESS, THREADS) == MIXED and joined(MIXED, PROCESS) == MIXED and joined(THREADS, THREADS) == THREADS


def burn(seconds: float) -> float:
    """Spin this thread's CPU for `seconds` of it (no sleep: CPU, not time)."""
    start = time.thread_time()
    while time.thread_time() - start < seconds:
        pass
    return time.thread_time() - start


def test_a_channel_keeps_its_threads_cpu_after_it_ended():
    comms = comm.StoreThread(background=True)
    assert comms.thread_cpu_s() == 0.0  # no thread before its first operation
    comms.submit(lambda: burn(0.02))
    comms.collect()
    live = comms.thread_cpu_s()
    assert live >= 0.02
    comms.close()
    closed = comms.thread_cpu_s()  # its thread has ended: the reading it took last stands
    assert live <= closed < live + 0.01
    comms.close()
    assert comms.thread_cpu_s() == closed
    blocking = comm.StoreThread(background=False)
    blocking.submit(lambda: burn(0.01))  # on the caller's thread: the call's own, not the store thread's
    blocking.close()
    assert blocking.thread_cpu_s() == 0.0


def test_the_samplers_thread_keeps_its_cpu_after_it_stopped():
    sampler = Sampler(1000.0, lambda: [])
    assert sampler.thread_cpu_s() == 0.0
    sampler.start(every=lambda: burn(0.01), every_s=0.0)
    while sampler.thread_cpu_s() < 0.01:  # the sampling thread works through `every`
        pass
    sampler.stop()
    ended = sampler.thread_cpu_s()
    assert ended >= 0.01
    assert sampler.thread_cpu_s() == ended


def test_a_real_worker_call_records_its_cpu_on_the_process_clock():
    from faasgd import job
    from faasgd.functions.workloads import run_worker
    from faasgd.worker.invocation import Call
    from faasgd.store import keys, open_store

    config = load_config({}, {"dataset": "synthetic", "train_samples": 600, "test_samples": 100, "hidden_sizes": [16],
                              "batch_size": 30, "number_of_workers": 1, "max_epochs": 2, "target_accuracy": 1.0,
                              "store_url": "memory://call-cpu-real", "profile_hz": 50})
    store = open_store(config.store_url)
    job_id = job.create_job(store, config)
    in_flight = InFlight()
    started = time.process_time()
    clock = CallClock.begin(cpu=CallCpu.begin(in_flight=in_flight))
    run_worker(Call(config, store, job_id, 0, clock=clock))
    spent = time.process_time() - started
    record = store.worker_record(job_id, 0)  # its final record
    assert record["cpu_clock"] == PROCESS and 0.5 * spent < record["cpu_s"] <= spent
    assert in_flight.running == 0 and in_flight.entered == 1  # entered and left once
    result = store.get_record(job_id, keys.RESULT)
    assert result["cpu_s"] == pytest.approx(record["cpu_s"]) and result["cpu_clock"] == PROCESS
