"""Process identity and stopping for the local runtime: the one place that checks or signals a process.

A pid alone does not name a process: once it exits, the kernel hands the number to whatever starts
next. A ProcessRef is a pid plus the process's create time (psutil reads it from /proc/<pid>/stat);
it names a live process only while both agree, so a pid from a stale state.json never receives a
signal meant for a process that is gone. psutil re-checks that identity again right before it
signals. A child the caller holds a Popen for is stopped through the Popen instead (its pid cannot
be reused before it is reaped, and waiting on it reaps it).

A zombie (exited, not yet reaped by its parent) counts as dead everywhere.
"""

from __future__ import annotations

import signal
import subprocess
import time
from dataclasses import dataclass

import psutil

from faasgd.checks import is_real, is_whole

CREATE_TIME_SLACK_S = 1.0  # /proc/stat's boot time is whole seconds and may step by one as the clock is set
KILL_WAIT_S = 2.0  # how long a process gets to vanish after SIGKILL
POLL_S = 0.05  # the longest sleep between checks while waiting for a process to end
FIRST_POLL_S = 0.002  # the first one: a signalled process is usually gone within milliseconds; each sleep doubles


@dataclass(frozen=True)
class ProcessRef:
    """One process for its whole life: its pid and its create time (seconds since the epoch)."""

    pid: int
    create_time: float

    @classmethod
    def of(cls, pid: int) -> ProcessRef:
        """The process that runs as `pid` now; raises psutil.NoSuchProcess when there is none."""
        return cls(pid, psutil.Process(pid).create_time())

    def to_json(self) -> dict:
        """The fields a state-file entry stores: {"pid": ..., "create_time": ...}."""
        return {"pid": self.pid, "create_time": self.create_time}

    @classmethod
    def from_json(cls, entry: object) -> ProcessRef | None:
        """The identity a state-file entry stores, or None when it has none (such a process is never ours)."""
        if not isinstance(entry, dict):
            return None
        pid, created = entry.get("pid"), entry.get("create_time")
        if not is_whole(pid) or pid <= 0 or not is_real(created):
            return None
        return cls(pid, float(created))


Target = ProcessRef | subprocess.Popen  # what alive() and stop() take


def find(ref: ProcessRef) -> psutil.Process | None:
    """The live process `ref` names, or None: gone, a zombie, or its pid now belongs to another process."""
    try:
        process = psutil.Process(ref.pid)
        if abs(process.create_time() - ref.create_time) > CREATE_TIME_SLACK_S:
            return None
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
    except psutil.Error:  # NoSuchProcess, ZombieProcess, AccessDenied: not a process we can call ours
        return None
    return process


def alive(target: Target) -> bool:
    """True while the process runs (a Popen not yet exited, or a ProcessRef that `find` resolves)."""
    if isinstance(target, subprocess.Popen):
        return target.poll() is None
    return find(target) is not None


def stop(target: Target, timeout: float = 5.0) -> bool:
    """SIGTERM, wait up to `timeout` s, then SIGKILL; True when the process was running (and ours).

    Stopping what is already gone, or a ProcessRef whose pid now names another process, signals
    nothing and returns False; calling it twice is harmless.
    """
    if isinstance(target, subprocess.Popen):
        return _stop_child(target, timeout)
    return bool(stop_all([target], timeout))


def kill(target: Target) -> bool:
    """SIGKILL at once (no SIGTERM, no grace), reaping a child; True when it was running (and ours)."""
    if isinstance(target, subprocess.Popen):
        if target.poll() is not None:
            return False
        _kill_child(target)
        return True
    return bool(stop_all([target], term=False))


def stop_all(refs: list[ProcessRef], timeout: float = 5.0, term: bool = True) -> list[ProcessRef]:
    """`stop` for several processes at once: SIGTERM to each, one shared wait of `timeout` s, SIGKILL
    to those still there (`term` False: SIGKILL only). Returns the ones that were running (and ours)."""
    found = [(ref, process) for ref in refs if (process := find(ref)) is not None]
    running = found
    steps = ((signal.SIGTERM, timeout),) if term else ()
    for sig, wait_s in (*steps, (signal.SIGKILL, KILL_WAIT_S)):
        signalled = []
        for ref, process in running:
            try:
                process.send_signal(sig)  # psutil refuses (NoSuchProcess) if the pid was reused meanwhile
                signalled.append((ref, process))
            except psutil.NoSuchProcess:
                pass
        running = _wait_all_gone(signalled, wait_s)
        if not running:
            break
    return [ref for ref, _ in found]


def backoff(first_s: float = FIRST_POLL_S, longest_s: float = POLL_S):
    """Sleep lengths for a poll: `first_s`, doubling up to `longest_s`, then `longest_s` for ever."""
    sleep_s = first_s
    while True:
        yield sleep_s
        sleep_s = min(2 * sleep_s, longest_s)


def _wait_all_gone(pending: list, wait_s: float) -> list:
    """Poll until none of `pending` is alive (empty list) or `wait_s` has passed (those left)."""
    deadline = time.monotonic() + wait_s
    for sleep_s in backoff():
        pending = [entry for entry in pending if alive(entry[0])]
        if not pending or time.monotonic() >= deadline:
            return pending
        time.sleep(min(sleep_s, max(0.0, deadline - time.monotonic())))
    return pending


def _stop_child(popen: subprocess.Popen, timeout: float) -> bool:
    """Terminate a child, wait (reaping it), kill it if it outlives `timeout`."""
    if popen.poll() is not None:
        return False
    popen.terminate()
    try:
        popen.wait(timeout)
    except subprocess.TimeoutExpired:
        _kill_child(popen)
    return True


def _kill_child(popen: subprocess.Popen) -> None:
    """SIGKILL a child and reap it (a child stuck in the kernel, state D, is left: no signal can do more)."""
    popen.kill()
    try:
        popen.wait(KILL_WAIT_S)
    except subprocess.TimeoutExpired:
        pass
