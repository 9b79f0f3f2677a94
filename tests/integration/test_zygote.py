"""The runtime's zygote (local/replicas/zygote.py) and netns.py `enter` handing it the function: a real zygote process, a real
`enter` (as the watchdog runs it), a small script as the function."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from faasgd.local.replicas import zygote
from faasgd.local.replicas.watchdog import LAUNCHER

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(os.geteuid() != 0, reason="`enter` joins a network namespace: root")]
FUNCTION = """\
import json, os, signal, sys, time
def report(**extra):
    with open(os.environ["REPORT"], "w") as f:
        json.dump({"env": dict(os.environ), "cwd": os.getcwd(), "argv": sys.argv, "orig_argv": sys.orig_argv,
                   "pid": os.getpid(), "ppid": os.getppid(), "main": __name__, "file": __file__,
                   "path0": sys.path[0], "sched": [os.sched_getscheduler(0), os.getpriority(os.PRIO_PROCESS, 0)],
                   **extra}, f)
if sys.argv[1:] == ["exit"]:
    report()
    sys.exit(7)
def on_term(*_):
    report(term=True)
    sys.exit(3)
signal.signal(signal.SIGTERM, on_term)
report()
time.sleep(60)
"""


@pytest.fixture
def forks(tmp_path):
    """A zygote of a runtime folder in tmp_path (started as the daemon starts it), stopped after."""
    (tmp_path / "logs").mkdir()
    popen, path = zygote.start(tmp_path, os.environ)
    assert zygote.wait_listening(popen, path)
    zygote.hurry(popen)  # as the daemon does before the replicas start
    yield popen, path
    popen.kill()
    popen.wait(10)


# What index.py does first (faasgd.cpu_limit), in a function whose replica's environment names its BLAS threads
BLAS_FUNCTION = """\
import json, os, sys
preloaded = "numpy" in sys.modules
from faasgd import cpu_limit
threads = cpu_limit.limit_threads()
with open(os.environ["REPORT"], "w") as f:
    json.dump({"pid": os.getpid(), "preloaded": preloaded, "count": threads.count, "pools": cpu_limit.loaded_pools(),
               "env": {name: os.environ.get(name) for name in cpu_limit.VARIABLES}}, f)
"""


def enter(tmp_path: Path, path: str, *argv: str, function: str = FUNCTION,
          env: dict | None = None) -> tuple[subprocess.Popen, dict]:
    """`netns.py enter` as the watchdog starts it (fprocess), in a build folder, with a replica's environment."""
    build = tmp_path / "build" / "fn"
    build.mkdir(parents=True, exist_ok=True)
    (build / "index.py").write_text(function)
    env = {"PATH": os.environ["PATH"], "HOSTNAME": "fn-replica-1", "REPORT": str(tmp_path / "report.json"),
           zygote.ENV: path, zygote.PID_FILE_ENV: str(tmp_path / "function.pid"), **(env or {})}
    command = [sys.executable, "-S", str(LAUNCHER), "enter", f"/proc/{os.getpid()}/ns/net", sys.executable,
               "index.py", *argv]
    return subprocess.Popen(command, cwd=build, env=env), env


def reported(tmp_path: Path, timeout_s: float = 30.0, key: str = "pid") -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            report = json.loads((tmp_path / "report.json").read_text())
            if key in report:
                return report
        except (OSError, ValueError):
            pass
        time.sleep(0.02)
    raise AssertionError("the function never reported")


def test_the_function_forks_from_the_zygote_as_exec_would_have_started_it(tmp_path, forks):
    popen, path = forks
    executed, _ = enter(tmp_path, str(tmp_path / "no-such.sock"), "exit")  # no zygote there: `enter` execs, as before
    assert executed.wait(30) == 7
    exec_report = reported(tmp_path)
    (tmp_path / "report.json").unlink()
    client, _ = enter(tmp_path, path, "exit")
    assert client.wait(30) == 7  # its exit status is the stand-in's
    report = reported(tmp_path)
    assert report["ppid"] == popen.pid and report["pid"] != client.pid
    # orig_argv: what a renewal execs again; sched: the policy and niceness (the zygote imports at SCHED_IDLE)
    same = ("env", "cwd", "argv", "orig_argv", "main", "file", "path0", "sched")
    assert {k: report[k] for k in same} == {k: exec_report[k] for k in same}
    assert report["cwd"] == str(tmp_path / "build" / "fn") and report["argv"] == ["index.py", "exit"]
    assert zygote.ENV not in report["env"] and zygote.PID_FILE_ENV not in report["env"]
    assert int((tmp_path / "function.pid").read_text().split()[0]) == report["pid"]


def test_a_forked_function_runs_its_replicas_blas_threads_not_the_zygotes_one(tmp_path, forks):
    popen, path = forks
    client, _ = enter(tmp_path, path, function=BLAS_FUNCTION, env={"OMP_NUM_THREADS": "2"})
    assert client.wait(30) == 0
    report = reported(tmp_path)
    assert report["preloaded"]  # numpy's BLAS started in the zygote, with its one thread
    assert report["count"] == 2 and {count for _, count in report["pools"]} == {2}
    assert report["env"] == {"OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    assert psutil.Process(popen.pid).num_threads() == 1  # the zygote itself still runs none beside its own


def test_signals_reach_the_function_and_a_gone_requester_takes_it_along(tmp_path, forks):
    _, path = forks
    client, _ = enter(tmp_path, path)
    function = psutil.Process(reported(tmp_path)["pid"])
    assert function.name() == "fn-replica-1"  # the replica's name where `python` stood
    client.send_signal(signal.SIGTERM)  # the watchdog's, at a drain
    assert client.wait(30) == 3 and reported(tmp_path, key="term")["term"]
    (tmp_path / "report.json").unlink()
    client, _ = enter(tmp_path, path)
    function = psutil.Process(reported(tmp_path)["pid"])
    client.kill()  # as its parent-death signal when the watchdog is killed
    client.wait(10)
    function.wait(10)  # killed by the zygote (psutil raises TimeoutExpired otherwise)


def test_the_zygote_stops_its_functions_and_they_die_with_it(tmp_path, forks):
    popen, path = forks
    client, _ = enter(tmp_path, path)
    function = psutil.Process(reported(tmp_path)["pid"])
    popen.terminate()  # the runtime's stop
    assert popen.wait(10) == 0
    function.wait(10)
    assert client.wait(10) == -signal.SIGKILL  # its function was killed, and it ends as it did
    assert not Path(path).exists()  # the socket removed
    (tmp_path / "report.json").unlink()
    second, _ = zygote.start(tmp_path, os.environ)
    try:
        assert zygote.wait_listening(second, path)
        zygote.hurry(second)
        client, _ = enter(tmp_path, path)
        function = psutil.Process(reported(tmp_path)["pid"])
        second.kill()  # a zygote killed outright: its functions go with it (their parent-death signal)
        function.wait(10)
        assert client.wait(10) == -signal.SIGKILL
    finally:
        second.kill()
        second.wait(10)


def test_without_a_zygote_the_function_is_executed_in_place(tmp_path):
    client, _ = enter(tmp_path, str(tmp_path / "no-such.sock"), "exit")
    assert client.wait(30) == 7
    report = reported(tmp_path)
    assert report["pid"] == client.pid  # `enter` became the function, as before the zygote
    assert zygote.ENV not in report["env"] and not (tmp_path / "function.pid").exists()


def test_only_the_owner_may_ask_the_zygote(tmp_path, forks):
    _, path = forks
    assert Path(path).stat().st_mode & 0o777 == 0o600
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as sock:  # a request that is no JSON: dropped
        sock.connect(path)
        socket.send_fds(sock, [b"not json"], [0])
        assert sock.recv(64) == b""


def test_no_zygote_when_switched_off():
    assert zygote.wanted({}) and zygote.wanted({zygote.OFF: "0"})
    assert not zygote.wanted({zygote.OFF: "1"})


def test_enter_reads_the_names_the_runtime_sets():  # netns.py runs on the standard library alone: its own copies
    from faasgd.local.replicas import netns

    assert (netns.ZYGOTE_ENV, netns.PID_FILE_ENV) == (zygote.ENV, zygote.PID_FILE_ENV)


def test_functions_and_their_requesters_killed_at_once_leave_the_zygote_serving(tmp_path, forks):
    """Replica.stop_now's order: the watchdog (so `enter`, by its parent-death signal) and the function SIGKILLed
    together; the zygote may see a function's end and its requester's in one round of events, many times over."""
    popen, path = forks
    for round_ in range(6):
        (tmp_path / "report.json").unlink(missing_ok=True)
        client, _ = enter(tmp_path, path)
        function = psutil.Process(reported(tmp_path)["pid"])
        function.kill()
        client.kill()
        client.wait(10)
        function.wait(10)
    assert popen.poll() is None  # still running
    (tmp_path / "report.json").unlink(missing_ok=True)
    client, _ = enter(tmp_path, path, "exit")
    assert client.wait(30) == 7 and reported(tmp_path)["ppid"] == popen.pid  # and still forking


def test_enter_whose_watchdog_died_before_it_looked_runs_nothing(tmp_path, forks):
    """`serve` names the watchdog's pid; an `enter` whose parent is another (the watchdog killed between its fork
    and the first look: it was re-parented) exits at once, where it used to take its new parent for its watchdog
    and run the function on as an orphan (seen once after a `faasgd down` during the replicas' start)."""
    from faasgd.local.replicas import netns

    _, path = forks
    build = tmp_path / "build" / "fn"
    build.mkdir(parents=True)
    (build / "index.py").write_text(FUNCTION)
    env = {"PATH": os.environ["PATH"], "REPORT": str(tmp_path / "report.json"), zygote.ENV: path,
           netns.WATCHDOG_PID_ENV: str(os.getpid() + 1)}  # not its parent (this process is)
    command = [sys.executable, "-S", str(LAUNCHER), "enter", f"/proc/{os.getpid()}/ns/net", sys.executable, "index.py"]
    assert subprocess.run(command, cwd=build, env=env, timeout=30).returncode == 1
    assert not (tmp_path / "report.json").exists()
    env[netns.WATCHDOG_PID_ENV] = str(os.getpid())  # its parent indeed: it runs
    assert subprocess.run(command + ["exit"], cwd=build, env=env, timeout=30).returncode == 7


def wait_until(condition, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "not within the time"
        time.sleep(0.02)


def test_a_killed_zygote_is_reaped_and_started_again_and_functions_fork_from_the_new_one(tmp_path):
    (tmp_path / "logs").mkdir()
    keeper, told = zygote.Keeper(tmp_path, os.environ), []
    keeper.on_restart = told.append
    try:
        assert zygote.wait_listening(keeper.popen, keeper.path)
        keeper.watch(every_s=0.05)
        first = keeper.popen
        first.kill()
        wait_until(lambda: keeper.popen is not first)
        assert first.returncode is not None  # reaped: no zombie left to the daemon
        assert told == [keeper.popen] and keeper.restarts == 1
        assert psutil.Process(keeper.popen.pid).ppid() == os.getpid()
        # it never imports at SCHED_IDLE (replicas may ask at once): read across its imports
        assert all(os.sched_getscheduler(keeper.popen.pid) == os.sched_getscheduler(0) for _ in range(50))
        client, _ = enter(tmp_path, keeper.path, "exit")
        assert client.wait(30) == 7
        assert reported(tmp_path)["ppid"] == keeper.popen.pid  # forked by the new zygote, on the same socket
    finally:
        keeper.stop(5)
    assert keeper.popen.poll() is not None


def test_a_zygote_that_keeps_ending_is_left_ended_after_its_restarts(tmp_path):
    (tmp_path / "logs").mkdir()
    keeper = zygote.Keeper(tmp_path, os.environ)
    keeper.MAX_RESTARTS = 1
    try:
        keeper.watch(every_s=0.05)
        first = keeper.popen
        first.kill()
        wait_until(lambda: keeper.popen is not first)
        second = keeper.popen
        second.kill()
        wait_until(lambda: second.poll() is not None)
        time.sleep(0.5)  # ten looks of the keeper: none starts a third
        assert keeper.popen is second and keeper.restarts == 1 and not keeper._thread.is_alive()
    finally:
        keeper.stop(5)
