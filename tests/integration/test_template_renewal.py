"""A replica's renewal through the template's index.py (faasgd.functions.replica_renewal): a process asked to
renew execs a fresh interpreter in place once no call runs: the same pid, its memory peak (VmHWM) started
again, and no call lost or refused meanwhile, whether index.py bound its socket or inherited it (bootstrap.py).

index.py runs in a subprocess as in the image, with a test handler whose /heavy call holds 200 MiB and asks
for the renewal, as a worker that loaded TensorFlow does.
"""

from __future__ import annotations

import threading
import time

import httpx
import pytest
import test_template_lifecycle as lifecycle

from support.waits import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
BALLAST_MB = 200
HANDLER = f'''
import os
import time

from faasgd.functions import replica_renewal

BALLAST = []


def handle(event, context):
    if event.path == "/heavy":
        BALLAST.append(b"\\1" * ({BALLAST_MB} << 20))  # touched, so resident
        replica_renewal.ask("the test's ballast")
    if event.path == "/slow":
        time.sleep(float(event.query.get("s", "1")))
    return {{"statusCode": 200, "body": {{"pid": os.getpid(), "renewals": replica_renewal.renewals(os.environ)}}}}
'''


def peak_mb(pid: int) -> float:
    """The process's resident peak since it last exec'd (VmHWM), in MiB."""
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmHWM for {pid}")


@pytest.fixture(params=[False, True], ids=["bound-here", "inherited-fd3"])
def served(request, tmp_path, monkeypatch):
    monkeypatch.setattr(lifecycle, "HANDLER", HANDLER)  # the handler lifecycle.start writes beside index.py
    process, url = lifecycle.start(tmp_path, bootstrap=request.param)
    try:
        lifecycle.wait_ready(url)
        yield process, url
    finally:
        process.kill()
        process.wait()


def body(url: str, path: str = "/", **params) -> dict:
    answer = httpx.post(url + path, params=params, json={}, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


@pytest.mark.serial  # its peak memory read in time: beside another test under -n 2 it read the exec'd process too soon
def test_a_process_asked_to_renew_execs_in_place_and_starts_its_memory_again(served):
    process, url = served
    first = body(url)
    assert first == {"pid": process.pid, "renewals": 0}
    body(url, "/heavy")
    assert peak_mb(process.pid) > BALLAST_MB
    wait_until(lambda: body(url)["renewals"] == 1, "the process to renew itself", 20)
    assert body(url)["pid"] == process.pid and process.poll() is None
    assert peak_mb(process.pid) < BALLAST_MB / 2  # a new address space: the ballast is gone, its peak too


def test_a_renewal_waits_for_the_calls_running_and_loses_none_that_come_meanwhile(served):
    process, url = served
    slow = []
    running = threading.Thread(target=lambda: slow.append(body(url, "/slow", s="1.5")))
    running.start()
    time.sleep(0.2)
    body(url, "/heavy")  # the renewal is asked while /slow still runs in this interpreter
    answers, errors, stop = [], [], threading.Event()

    def keep_calling(keep_alive: bool) -> None:
        client = httpx.Client(timeout=30) if keep_alive else None
        while not stop.is_set():
            try:
                answer = (client or httpx).post(url + "/", json={}, timeout=30)
                answers.append((answer.status_code, answer.json()["renewals"]))
            except (httpx.HTTPError, ValueError) as exc:
                errors.append(repr(exc))

    callers = [threading.Thread(target=keep_calling, args=(i % 2 == 0,), daemon=True) for i in range(4)]
    for caller in callers:
        caller.start()
    try:
        running.join()
        assert slow == [{"pid": process.pid, "renewals": 0}]  # it ran to its end in the old interpreter
        wait_until(lambda: any(renewed == 1 for _, renewed in answers), "calls served by the renewed process", 20)
        time.sleep(0.3)
    finally:
        stop.set()
        for caller in callers:
            caller.join(35)
    assert not errors, errors[:3]
    assert {status for status, _ in answers} == {200}
    assert {renewed for _, renewed in answers} <= {0, 1} and process.poll() is None

