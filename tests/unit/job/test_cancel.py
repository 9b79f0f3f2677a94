"""Cancel's rules on a store (faasgd.job.cancel_job, emnist-setup's POST ?job_id=J&cancel=1, `faasgd train --detach`'s
refusal with --direct): a running job gets one `cancelled` record and is then ended for every worker's check; an
unknown or ended job is refused with nothing written; a query that does not check out writes nothing either."""

from __future__ import annotations

import uuid

import pytest

from faasgd import job
from faasgd.cli.main import main
from faasgd.config import load_config
from faasgd.errors import ConfigError, JobEnded, JobNotFound
from faasgd.functions import replica_cache
from faasgd.functions.emnist_setup import cancel_request
from faasgd.store import keys, open_store


@pytest.fixture
def running():
    url = f"memory://cancel{uuid.uuid4().hex[:8]}"
    store = open_store(url)
    replica_cache.keep_store(url, store)
    config = load_config({}, {"dataset": "synthetic", "train_samples": 600, "number_of_workers": 2, "store_url": url})
    try:
        yield store, job.create_job(store, config), {"store_url": url}
    finally:
        replica_cache.forget()


def test_a_cancel_is_recorded_once_and_ends_the_job_for_its_workers(running):
    store, job_id, _ = running
    assert not job.has_ended(store, job_id)
    first = job.cancel_job(store, job_id, by="cli")
    assert first["by"] == "cli" and job.has_ended(store, job_id)
    assert job.cancel_job(store, job_id, by="http") == first  # once is enough
    assert job.read_status(store, job_id)["cancelled"] == first
    assert [e["event"] for e in store.events(job_id)].count("cancelled") == 1


def test_an_ended_or_unknown_job_is_refused_and_nothing_is_written(running):
    store, job_id, _ = running
    store.put_record(job_id, keys.RESULT, {"state": "done"})
    with pytest.raises(JobEnded) as ended:
        job.cancel_job(store, job_id)
    assert ended.value.field == "job_id" and "has ended (done)" in str(ended.value) and ended.value.http_status == 409
    assert store.get_record(job_id, keys.CANCELLED) is None
    with pytest.raises(JobNotFound):
        job.cancel_job(store, "j0000000000000000")
    assert store.get_record("j0000000000000000", keys.CANCELLED) is None


@pytest.mark.parametrize("query, field", [({"cancel": "yes"}, "cancel"), ({"cancel": "1", "model": "npz"}, "model"),
                                          ({"cancel": "1", "job_id": "bad:id"}, "job_id")])
def test_the_http_form_names_what_does_not_check_out_and_writes_nothing(running, query, field):
    store, job_id, env = running
    with pytest.raises(ConfigError) as refused:
        cancel_request({"job_id": job_id, **query}, env)
    assert refused.value.field == field
    assert store.get_record(job_id, keys.CANCELLED) is None


def test_the_http_form_cancels_and_answers_the_status(running):
    store, job_id, env = running
    code, status = cancel_request({"job_id": job_id, "cancel": "1"}, env)
    assert code == 200 and status["state"] == "running" and status["cancelled"]["by"] == "http"


def test_detach_is_refused_with_direct_before_anything_starts(capsys):
    assert main(["train", "--direct", "--detach", "--dataset", "synthetic"]) == 2
    assert "--detach" in capsys.readouterr().err


def test_resume_is_refused_naming_resume_from_and_nothing_is_written(running):
    store, job_id, env = running
    base = {"dataset": "synthetic", "train_samples": 600, "number_of_workers": 2, "store_url": env["store_url"]}
    for given, says in (({"resume_from": job_id}, "still running"),
                        ({"resume_from": "j0000000000000000"}, "no job"),):
        with pytest.raises(ConfigError) as refused:
            job.create_job(store, load_config({}, {**base, **given}), job_id="jnew")
        assert refused.value.field == "resume_from" and says in str(refused.value)
        assert store.get_record("jnew", keys.CONFIG) is None and store.get_record("jnew", keys.JOB) is None
    store.put_record(job_id, keys.RESULT, {"state": "cancelled", "samples": 100, "epochs": 0.2, "wall_s": 1.0})
    with pytest.raises(ConfigError) as other:
        job.create_job(store, load_config({}, {**base, "hidden_sizes": [7], "resume_from": job_id}), job_id="jnew")
    assert "another network" in str(other.value) and store.get_record("jnew", keys.CONFIG) is None
    resumed = job.create_job(store, load_config({}, {**base, "resume_from": job_id}), job_id="jnew")
    assert store.get_record(resumed, keys.JOB)["resumed_from"] == {"job_id": job_id, "samples": 100, "epochs": 0.2,
                                                                  "wall_s": 1.0}
    assert __import__("numpy").array_equal(store.get_weights(resumed)[0], store.get_weights(job_id)[0])
