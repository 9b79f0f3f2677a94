"""The faults a fault study injects into a running `faasgd up` from outside: signals to replicas and the
runtime, stores paused or restarted empty, the replicas' memory capped, a crash loop (fault_matrix.run_matrix
takes any of them).

Each is called with the runtime and the status queries of the jobs it strikes and returns a note for the
table (or None); `pause_store(seconds)` builds one.
"""

from __future__ import annotations

import os
import resource
import signal
import threading
import time

import psutil

from faasgd.errors import FaasgdError
from faasgd.local import start_memcached, start_redis
from faasgd.testing.fault_matrix import Inject, Runtime, wait_until

CUT = "invoked emnist-train [502]"  # the runtime's log line for a delivery whose replica died under it


def kill_replica(runtime: Runtime, queries: list[dict]) -> str:
    """SIGKILL an emnist-train replica (a node lost, an OOM kill) until one kill cuts a call in flight
    (a replica between per-iteration calls may be idle): that call dies without an answer."""
    for kills in range(1, 6):
        before = runtime.log().count(CUT)
        victim = next(pid for pid in runtime.replica_pids() if psutil.pid_exists(pid))
        os.kill(victim, signal.SIGKILL)
        try:
            wait_until(lambda: runtime.log().count(CUT) > before, 2, "no call was cut")
            return f"{kills} replica(s) killed; the last cut a call"
        except TimeoutError:
            wait_until(lambda: victim not in runtime.replica_pids(), 10, "the killed replica was not replaced")
    return "5 replicas killed; none cut a call"


def term_replica(runtime: Runtime, queries: list[dict]) -> str:
    """SIGTERM one emnist-train replica (scale-down, a rolling update, node drain): it drains and hands off."""
    victim = runtime.replica_pids()[0]
    os.kill(victim, signal.SIGTERM)
    return f"terminated replica pid {victim}"


def kill_runtime(runtime: Runtime, queries: list[dict]) -> str:
    """SIGKILL the runtime's daemon (gateway and queue-worker gone at once), then `faasgd up` again."""
    os.kill(runtime.state["pid"], signal.SIGKILL)
    wait_until(lambda: not psutil.pid_exists(runtime.state["pid"]) or
               psutil.Process(runtime.state["pid"]).status() == psutil.STATUS_ZOMBIE, 10, "the daemon did not die")
    runtime.up()
    return "runtime killed and started again"


class CrashLoop:
    """Kills every emnist-train replica as soon as it is seen, until stopped (an OOM-kill crash loop)."""

    def __init__(self, runtime: Runtime):
        self.runtime, self.killed, self._stop = runtime, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:  # the first sweep at once, then every 0.05 s
            self._sweep()
            if self._stop.wait(0.05):
                return

    def _sweep(self) -> None:
        try:
            pids = self.runtime.replica_pids()
        except (FaasgdError, OSError, KeyError, ValueError):
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                self.killed += 1
            except ProcessLookupError:
                pass

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def crash_loop(runtime: Runtime, queries: list[dict]) -> str:
    """From now on every emnist-train replica is SIGKILLed as it starts: no re-invocation can make progress."""
    runtime.extra.insert(0, CrashLoop(runtime))
    return "every emnist-train replica killed as it starts"


def _stores(queries: list[dict]) -> list[str]:
    return sorted({query["store"] for query in queries})


def pause_store(seconds: float) -> Inject:
    """SIGSTOP the jobs' stores for `seconds`, then SIGCONT (a stalled node, a long GC, a network partition)."""
    def inject(runtime: Runtime, queries: list[dict]) -> str:
        pids = [runtime.store_pid(name) for name in _stores(queries)]
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(seconds)
        finally:
            for pid in pids:
                os.kill(pid, signal.SIGCONT)
        return f"{' and '.join(_stores(queries))} paused {seconds:g}s"
    return inject


def restart_store_empty(runtime: Runtime, queries: list[dict]) -> str:
    """Kill the jobs' stores and start empty ones on the same ports (a store pod rescheduled without a volume)."""
    for name in _stores(queries):
        entry = runtime.state["stores"][name]
        port = int(entry["url"].rsplit(":", 1)[1].split("/")[0])
        os.kill(entry["pid"], signal.SIGKILL)
        wait_until(lambda: not psutil.pid_exists(entry["pid"]) or
                   psutil.Process(entry["pid"]).status() == psutil.STATUS_ZOMBIE, 10, "the store did not die")
        start = start_redis if name == "redis" else start_memcached
        for attempt in range(20):  # the killed server's socket may hold the port a moment (a zombie not yet reaped)
            try:
                runtime.extra.append(start(port=port))
                break
            except FaasgdError as error:
                if "Address already in use" not in str(error) or attempt == 19:
                    raise
                time.sleep(0.25)
    return f"{' and '.join(_stores(queries))} restarted empty"


def cap_memory(runtime: Runtime, queries: list[dict]) -> str:
    """Cap every emnist-train replica's address space near its current size: its next big allocation fails.
    Each process of the replica is capped (under of-watchdog the function is the watchdog's child, or the zygote's:
    local/replicas/zygote.py), as a container's memory limit covers all of its processes."""
    functions = runtime.gateway.request("GET", "/system/function/emnist-train").json().get("function_pids", [])
    processes = [p for pid in runtime.replica_pids() for p in [psutil.Process(pid), *psutil.Process(pid).children(True)]]
    for process in processes + [psutil.Process(pid) for pid in functions]:
        size = process.memory_info().vms
        resource.prlimit(process.pid, resource.RLIMIT_AS, (size + (64 << 20), resource.RLIM_INFINITY))
    return "replicas' address space capped"


def nothing(runtime: Runtime, queries: list[dict]) -> None:
    return None
