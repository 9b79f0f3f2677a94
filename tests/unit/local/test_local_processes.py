"""Process identity (pid + create time) and stopping, against a fake process table: in-process, no signals sent."""

import json
import signal

import pytest

from faasgd.local import processes
from faasgd.local.processes import ProcessRef

STARTED = 1_700_000_000.25


def test_identity_survives_the_state_file_round_trip():
    ref = ProcessRef(4242, STARTED)
    entry = json.loads(json.dumps({"url": "redis://127.0.0.1:1/0", **ref.to_json()}))
    assert entry == {"url": "redis://127.0.0.1:1/0", "pid": 4242, "create_time": STARTED}
    assert ProcessRef.from_json(entry) == ref
    assert ProcessRef.from_json({"pid": 7, "create_time": 3}) == ProcessRef(7, 3.0)


@pytest.mark.parametrize("entry", [None, [], {"pid": 7}, {"create_time": STARTED},
                                   {"pid": "7", "create_time": STARTED}, {"pid": True, "create_time": STARTED},
                                   {"pid": 0, "create_time": STARTED}, {"pid": 7, "create_time": "now"},
                                   {"pid": 7, "create_time": None}], ids=str)
def test_an_entry_without_a_whole_identity_names_no_process(entry):
    assert ProcessRef.from_json(entry) is None


def test_ref_of_a_pid_reads_its_create_time(table):
    table.add(31, STARTED)
    assert ProcessRef.of(31) == ProcessRef(31, STARTED)


def test_a_pid_whose_create_time_differs_is_not_ours(table):
    stranger = table.add(31, STARTED + 3600)  # the pid was reused an hour later
    ref = ProcessRef(31, STARTED)
    assert not processes.alive(ref) and processes.find(ref) is None
    assert processes.stop(ref) is False
    assert stranger.signals == [] and 31 in table.processes


def test_create_time_within_the_boot_clock_slack_is_the_same_process(table):
    table.add(31, STARTED + 0.9)  # /proc/stat's btime stepped while the process ran
    assert processes.alive(ProcessRef(31, STARTED))
    table.add(32, STARTED + 1.2)
    assert not processes.alive(ProcessRef(32, STARTED))


def test_gone_and_zombie_processes_are_dead(table):
    assert not processes.alive(ProcessRef(31, STARTED))
    zombie = table.add(32, STARTED)
    zombie.zombie = True
    assert not processes.alive(ProcessRef(32, STARTED))
    assert processes.stop(ProcessRef(32, STARTED)) is False and zombie.signals == []


def test_stop_sends_sigterm_and_no_more_when_the_process_honours_it(table):
    ours = table.add(31, STARTED)
    assert processes.stop(ProcessRef(31, STARTED), timeout=5) is True
    assert ours.signals == [signal.SIGTERM] and table.clock.now == 0
    assert processes.stop(ProcessRef(31, STARTED)) is False  # a second stop does nothing


def test_stop_sends_sigkill_once_the_timeout_passes(table):
    stubborn = table.add(31, STARTED, ignores_term=True)
    assert processes.stop(ProcessRef(31, STARTED), timeout=3) is True
    assert stubborn.signals == [signal.SIGTERM, signal.SIGKILL]
    assert 3 <= table.clock.now < 3 + 2 * processes.POLL_S



def test_stop_all_waits_once_for_all_of_them_and_skips_what_is_not_ours(table):
    stubborn = [table.add(pid, STARTED, ignores_term=True) for pid in (41, 42, 43)]
    polite = table.add(44, STARTED)
    reused = table.add(45, STARTED + 999)
    refs = [ProcessRef(pid, STARTED) for pid in (41, 42, 43, 44, 45, 46)]
    assert [ref.pid for ref in processes.stop_all(refs, timeout=3)] == [41, 42, 43, 44]
    assert [p.signals for p in stubborn] == [[signal.SIGTERM, signal.SIGKILL]] * 3
    assert polite.signals == [signal.SIGTERM] and reused.signals == []
    assert 3 <= table.clock.now < 3 + 2 * processes.POLL_S  # one shared wait, not three in a row


def test_kill_sends_sigkill_alone_and_waits_for_no_grace(table):
    ours = table.add(31, STARTED)
    reused = table.add(32, STARTED + 999)
    assert processes.kill(ProcessRef(31, STARTED)) is True
    assert ours.signals == [signal.SIGKILL] and table.clock.now < 2 * processes.POLL_S
    assert processes.kill(ProcessRef(32, STARTED)) is False and reused.signals == []


def test_kill_of_a_child_reaps_it_and_a_dead_one_is_left_alone():
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
                                                    "signal.SIG_IGN); time.sleep(60)"])
    assert processes.kill(child) is True
    assert child.returncode == -signal.SIGKILL  # reaped, by SIGKILL (its SIGTERM handler never ran)
    assert processes.kill(child) is False


def test_waits_poll_from_two_milliseconds_doubling_up_to_the_longest_sleep():
    sleeps = processes.backoff(0.002, 0.05)
    assert [round(next(sleeps), 3) for _ in range(7)] == [0.002, 0.004, 0.008, 0.016, 0.032, 0.05, 0.05]
