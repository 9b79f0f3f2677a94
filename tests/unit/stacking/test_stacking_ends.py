"""Stacking jobs that always end: a lost answer is called again (the calls are idempotent), a function's own
error is not, and a job whose driver stopped is failed by its deadline, once (faasgd.stacking.calls, records)."""

from __future__ import annotations

import uuid

import pytest
from support.stacking_drive import SMALL, in_process

from faasgd.errors import FaasgdError, GatewayError
from faasgd.openfaas import FunctionError
from faasgd.stacking import flow, records
from faasgd.stacking.config import load_stacking
from faasgd.store import open_store


def new_job(**body):
    store = open_store(f"memory://ends{uuid.uuid4().hex[:8]}")
    config = load_stacking({}, {**SMALL, "trainers_num": 3, **body})
    return store, config, records.create_job(store, config)


def flaky(call, failures: dict):
    """`call`, but the first calls of a function (failures[function]: the errors to raise, in order) fail."""
    made = []

    def wrapped(function, body):
        made.append(function)
        pending = failures.get(function) or []
        if pending:
            raise pending.pop(0)
        return call(function, body)
    wrapped.made = made
    return wrapped


@pytest.mark.parametrize("concurrent", [True, False])
def test_a_lost_answer_is_called_again_and_the_job_scores_as_without_it(concurrent):
    store, config, job_id = new_job(concurrent_training=concurrent)
    clean = flow.drive(store, job_id, config, in_process(store, job_id, config), sleep=lambda s: None)
    store, config, job_id = new_job(concurrent_training=concurrent)
    call = flaky(in_process(store, job_id, config), {
        flow.TRAINER: [FunctionError(502, "replica died")],
        flow.REDUCER: [GatewayError("http://gw", "ReadTimeout"), FunctionError(503, "not ready")],
        flow.METATRAINER: [FunctionError(504, "upstream timed out")]})
    result = flow.drive(store, job_id, config, call, sleep=lambda s: None)
    assert result["state"] == "done" and result["call_retries"] == 4
    assert result["base_scores"] == clean["base_scores"] and result["ensemble_score"] == clean["ensemble_score"]
    assert call.made.count(flow.TRAINER) == 4 and call.made.count(flow.REDUCER) == 3
    assert records.read_status(store, job_id)["state"] == "done"


def test_a_functions_own_error_fails_the_job_at_once():
    store, config, job_id = new_job(concurrent_training=False)
    call = flaky(in_process(store, job_id, config), {flow.TRAINER: [FunctionError(422, "models: not npz", "models")]})
    with pytest.raises(FunctionError, match="not npz"):
        flow.drive(store, job_id, config, call, sleep=lambda s: None)
    assert call.made == [flow.TRAINER]
    status = records.read_status(store, job_id)
    assert status["state"] == "failed" and "not npz" in status["error"] and status["call_retries"] == 0


def test_an_answer_lost_every_time_fails_the_job_after_the_attempts():
    store, config, job_id = new_job(concurrent_training=False)
    lost = [FunctionError(502, f"replica died {i}") for i in range(records.CALL_ATTEMPTS + 1)]
    call = flaky(in_process(store, job_id, config), {flow.REDUCER: lost})
    with pytest.raises(FunctionError, match=f"replica died {records.CALL_ATTEMPTS - 1}"):
        flow.drive(store, job_id, config, call, sleep=lambda s: None)
    assert call.made.count(flow.REDUCER) == records.CALL_ATTEMPTS
    assert records.read_status(store, job_id)["state"] == "failed"


def test_the_deadline_covers_every_phases_calls_with_their_attempts():
    one_by_one = load_stacking({}, {"trainers_num": 16, "concurrent_training": False, "call_timeout_s": 10})
    at_once = load_stacking({}, {"trainers_num": 16, "concurrent_training": True, "call_timeout_s": 10})
    assert records.deadline_s(one_by_one) == records.UPLOAD_S + 18 * records.CALL_ATTEMPTS * 10
    assert records.deadline_s(at_once) == records.UPLOAD_S + 3 * records.CALL_ATTEMPTS * 10


def test_a_job_past_its_deadline_is_failed_by_the_next_status_read_and_stays_failed(monkeypatch):
    store, config, job_id = new_job()
    created = records.read_status(store, job_id)
    assert created["state"] == "running" and created["deadline_at"] - created["created_at"] == records.deadline_s(config)
    later = created["deadline_at"] + 1
    monkeypatch.setattr(store, "server_time", lambda: later)
    status = records.read_status(store, job_id)
    assert status["state"] == "failed" and "did not end by its deadline" in status["error"]
    assert "'created'" in status["error"]  # the phase it was stuck in
    assert records.finish(store, job_id, state="done")["state"] == "failed"  # a late driver changes nothing
    assert records.read_status(store, job_id)["state"] == "failed"


def test_a_driver_that_outlives_its_deadline_leaves_the_job_failed(monkeypatch):
    store, config, job_id = new_job(concurrent_training=False)
    deadline = records.read_status(store, job_id)["deadline_at"]
    work = in_process(store, job_id, config)

    def call(function, body):
        if function == flow.METATRAINER:  # the driver was slow: a status read meanwhile ended the job
            monkeypatch.setattr(store, "server_time", lambda: deadline + 1)
            assert records.read_status(store, job_id)["state"] == "failed"
        return work(function, body)
    with pytest.raises(FaasgdError, match="did not end by its deadline"):
        flow.drive(store, job_id, config, call, sleep=lambda s: None)
    assert records.read_status(store, job_id)["state"] == "failed"


def test_a_job_within_its_deadline_is_left_running():
    store, config, job_id = new_job()
    assert records.read_status(store, job_id)["state"] == "running"
