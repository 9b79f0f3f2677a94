"""Status reads answer from the store while supervision runs beside them: a re-invocation that hangs (the
gateway's queue is down) never holds a read, and a job whose re-invocations the queue refuses fails naming it."""

import threading
import time
import uuid

import pytest

from faasgd import job
from faasgd.config import load_config
from faasgd.errors import GatewayError
from faasgd.functions import emnist_setup, replica_cache
from faasgd.functions.supervise import SupervisionBeside
from faasgd.store import open_store

READ_BOUND_S = 1.0


@pytest.fixture
def lost_job(monkeypatch):
    """A job of 2 workers whose calls never started (start_timeout_s long past), in a memory store."""
    url = f"memory://beside{uuid.uuid4().hex[:8]}"
    store = open_store(url)
    replica_cache.keep_store(url, store)
    monkeypatch.setattr(emnist_setup, "BESIDE", SupervisionBeside())
    config = load_config({}, {"dataset": "synthetic", "train_samples": 600, "number_of_workers": 2, "store_url": url,
                              "start_timeout_s": 0.2, "max_reinvocations": 1})
    job_id = job.create_job(store, config)
    time.sleep(0.3)
    yield job_id, {"store_url": url, "gateway_url": "http://127.0.0.1:9"}
    replica_cache.forget()


def timed_read(job_id: str, env: dict) -> tuple[float, dict]:
    started = time.monotonic()
    code, status = emnist_setup.job_status({"job_id": job_id}, env)
    assert code == 200
    return time.monotonic() - started, status


def test_reads_answer_within_the_bound_while_a_re_invocation_hangs(lost_job, monkeypatch):
    job_id, env = lost_job
    release, relaunched = threading.Event(), []

    def hanging(request):  # the gateway's async route, stuck on a dead queue
        relaunched.append(request.worker_id)
        release.wait(30)
        return "call"

    monkeypatch.setattr(emnist_setup, "relaunch_through_gateway", lambda settings, **_: hanging)
    for _ in range(20):
        seconds, status = timed_read(job_id, env)
        assert seconds < READ_BOUND_S and status["state"] == "running"
        assert status["supervision"] == []  # the one look under way has not finished
    deadline = time.monotonic() + 10  # the look runs in a thread of its own: on a loaded machine it may not be there yet
    while not relaunched and time.monotonic() < deadline:
        time.sleep(0.02)
    assert relaunched == [0]  # one supervision at a time per job, however many reads come
    release.set()
    deadline = time.monotonic() + 5
    while emnist_setup.BESIDE.running(job_id) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert timed_read(job_id, env)[1]["supervision"] == ["re-invoked worker 0 (1 of 1)", "re-invoked worker 1 (1 of 1)"]


def test_a_job_whose_re_invocations_the_queue_refuses_fails_naming_the_queue(lost_job, monkeypatch):
    job_id, env = lost_job

    def refused(request):
        raise GatewayError("http://gateway:8080", 'async emnist-train: HTTP 503 {"error":"queue: nats-server '
                                                  'at nats://127.0.0.1:4222 is not connected"}')

    monkeypatch.setattr(emnist_setup, "relaunch_through_gateway", lambda settings, **_: refused)
    deadline, status = time.monotonic() + 10, {"state": "running"}
    while status["state"] == "running" and time.monotonic() < deadline:
        seconds, status = timed_read(job_id, env)
        assert seconds < READ_BOUND_S
        time.sleep(0.1)
    assert status["state"] == "failed", status
    error = status["result"]["error"]
    assert "worker 0 lost 2 time(s)" in error and "re-invocation was refused" in error and "queue: nats-server" in error


def test_a_supervision_that_raises_is_reported_and_the_next_read_starts_another():
    beside, ran = SupervisionBeside(spawn=lambda target: target()), []

    def broken():
        ran.append(1)
        raise OSError("store gone")

    assert beside.look_after("j1", broken) is None
    assert beside.look_after("j1", broken)["error"] == "OSError: store gone"
    assert len(ran) == 2 and not beside.running("j1")


# -- the queue's report of a call that ended unanswered ---------------------------------------------------
def test_a_worker_whose_call_the_queue_reports_unanswered_is_re_invoked_without_start_timeout_s():
    from faasgd.functions import supervise

    url = f"memory://report{uuid.uuid4().hex[:8]}"
    store = open_store(url)
    config = load_config({}, {"dataset": "synthetic", "train_samples": 600, "number_of_workers": 2, "store_url": url,
                              "start_timeout_s": 100})
    job_id = job.create_job(store, config)
    _, meta = job.read_job(store, job_id)
    relaunched = []
    watch = lambda: supervise.supervise(store, job_id, config, meta, relaunched.append)  # noqa: E731
    assert watch() == []  # launched moments ago: their calls may be on their way
    assert not supervise.note_delivery(store, job_id, 0, 200, "c-0")  # answered: nothing to do
    assert supervise.note_delivery(store, job_id, 1, 502, "c-1")  # dropped: the function never answered
    assert watch() == ["re-invoked worker 1 (1 of 3)"] and [r.worker_id for r in relaunched] == [1]
    store.delete_record(job_id, "supervising:1")  # the claim expired
    assert watch() == []  # the report predates the re-invocation: its call has start_timeout_s again


def test_the_report_url_goes_to_emnist_setup_with_the_worker_and_its_store():
    from faasgd.functions.supervise import report_url
    from faasgd.functions.train_request import TrainRequest

    assert report_url("http://gateway.openfaas:8080/", TrainRequest("j1", 3, 0, "fast")) == \
        "http://gateway.openfaas:8080/function/emnist-setup?job_id=j1&worker=3&delivery=1&store=fast"


def test_a_delivery_report_notes_an_unanswered_call_and_supervises_beside(lost_job, monkeypatch):
    job_id, env = lost_job
    relaunched = []
    monkeypatch.setattr(emnist_setup, "relaunch_through_gateway",
                        lambda settings, **_: lambda request: relaunched.append(request.worker_id))
    query = {"job_id": job_id, "worker": "1", "delivery": "1"}
    assert emnist_setup.delivery_report(query, {"X-Function-Status": "200"}, env)[1]["noted"] is False
    assert relaunched == []
    assert emnist_setup.delivery_report(query, {"X-Function-Status": "502", "X-Call-Id": "c"}, env)[1]["noted"]
    deadline = time.monotonic() + 5
    while emnist_setup.BESIDE.running(job_id) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert sorted(relaunched) == [0, 1]  # the look it started finds both (worker 0 is past start_timeout_s too)


@pytest.mark.parametrize("query, headers, field", [
    ({"worker": "x"}, {"X-Function-Status": "502"}, "worker"),
    ({"worker": "1"}, {"X-Function-Status": "bad"}, "X-Function-Status"),
    ({"worker": "1"}, {}, "X-Function-Status"),
])
def test_a_bad_delivery_report_is_refused_naming_the_field(lost_job, query, headers, field):
    from faasgd.errors import ConfigError

    job_id, env = lost_job
    with pytest.raises(ConfigError) as refused:
        emnist_setup.delivery_report({"job_id": job_id, "delivery": "1", **query}, headers, env)
    assert refused.value.field == field
