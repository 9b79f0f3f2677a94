"""Resume from a model file (issue "Job control", item 3): the file carries the job's configuration and what it had
trained; emnist-setup's POST ?job_id=J&restore=1 (faasgd.job.restore_job) puts its parameters back in a store that
lost J, and a job resuming J starts from exactly them, counting on from the file. Refused with nothing written: a
job still in the store, a file of another job or another network, a query or body that does not
check out; a second restore writes nothing and answers the first."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from faasgd import job
from faasgd.config import load_config
from faasgd.errors import ConfigError
from faasgd.functions import replica_cache
from faasgd.functions.emnist_setup import restore_request
from faasgd.job import model_file
from faasgd.store import keys, open_store

JOB = {"dataset": "synthetic", "train_samples": 600, "hidden_sizes": [16], "number_of_workers": 2}


@pytest.fixture
def ended():
    """A job that ended (its result written as a cancelled one's would be), its model file, and an empty store."""
    url, empty_url = (f"memory://restore{uuid.uuid4().hex[:8]}" for _ in range(2))
    store, empty = open_store(url), open_store(empty_url)
    replica_cache.keep_store(empty_url, empty)
    config = load_config({}, {**JOB, "store_url": url, "learning_rate": 0.07})
    job_id = job.create_job(store, config)
    store.push_update(job_id, np.full(store.get_weights(job_id)[0].size, 0.25, np.float32))
    store.put_record(job_id, keys.JOB, {**job.read_job(store, job_id)[1],
                                        "resumed_from": {"job_id": "j0", "samples": 100, "epochs": 1.0, "wall_s": 2.0}})
    model_file.keep_last_params(store, job_id)
    store.add_record(job_id, keys.RESULT, {"state": "cancelled", "samples": 540, "epochs": 1.0, "wall_s": 3.5,
                                           "model_version": 1, "final_validation_accuracy": 0.5,
                                           "final_test_accuracy": 0.5})
    try:
        yield store, empty, job_id, model_file.to_npz(model_file.read_model(store, job_id)), {"store_url": empty_url}
    finally:
        replica_cache.forget()


def test_the_model_file_carries_the_configuration_and_what_the_chain_had_trained(ended):
    store, _, job_id, raw, _ = ended
    found = model_file.from_npz(raw)
    assert found.trained == {"samples": 640, "epochs": 2.0, "wall_s": 5.5}  # the job's own plus what it resumed
    assert found.config["learning_rate"] == 0.07 and found.config["hidden_sizes"] == [16]
    assert "store_url" not in found.config and "local_store_url" not in found.config
    assert np.array_equal(found.params, store.get_weights(job_id)[0])


def test_a_restored_job_is_resumed_from_exactly_the_files_parameters_counting_on(ended):
    _, empty, job_id, raw, env = ended
    status, answer = restore_request({"job_id": job_id, "restore": "1"}, raw, env)
    assert status == 201 and answer["restored"]["trained"]["samples"] == 640
    config = load_config({}, {**JOB, "store_url": env["store_url"], "resume_from": job_id})
    new_id = job.create_job(empty, config)
    assert np.array_equal(empty.get_weights(new_id)[0], model_file.from_npz(raw).params)
    resumed = job.read_job(empty, new_id)[1]["resumed_from"]
    assert resumed == {"job_id": job_id, "restored": True, "samples": 640, "epochs": 2.0, "wall_s": 5.5}


def test_a_restore_is_refused_with_nothing_written_where_it_does_not_belong(ended):
    store, empty, job_id, raw, env = ended
    written = sorted(empty.client._values)  # the memory store's keyspace (a fake's inside: a unit test may look)
    with pytest.raises(ConfigError, match="is in this store"):  # still there: resume it from there
        job.restore_job(store, job_id, model_file.from_npz(raw).params, [20, 16, 2], {"samples": 0}, 600)
    for query, body, field in (
            ({"job_id": job_id, "restore": "1", "wait": "1"}, raw, "wait"),
            ({"job_id": job_id, "restore": "yes"}, raw, "restore"),
            ({"job_id": "../x", "restore": "1"}, raw, "job_id"),
            ({"job_id": job_id, "restore": "1"}, b"", "body"),
            ({"job_id": job_id, "restore": "1"}, b"PK\x03\x04 not a zip", "model"),
            ({"job_id": "j" + "0" * 15, "restore": "1"}, raw, "job_id")):  # a file of another job
        with pytest.raises(ConfigError) as error:
            restore_request(query, body, env)
        assert error.value.field == field, (query, error.value)
    assert empty.get_record(job_id, keys.RESTORED) is None and empty.read_copy(job_id, keys.RESTORED_COPY) is None
    assert sorted(empty.client._values) == written
    first = restore_request({"job_id": job_id, "restore": "1"}, raw, env)
    assert first[0] == 201 and not first[1]["restored"].get("again")
    written = sorted(empty.client._values)
    again = restore_request({"job_id": job_id, "restore": "1"}, raw, env)  # once is enough: the first one answers
    assert again[0] == 200 and again[1]["restored"] == {**first[1]["restored"], "again": True}
    assert sorted(empty.client._values) == written


def test_a_job_of_another_network_is_refused_naming_resume_from(ended):
    _, empty, job_id, raw, env = ended
    restore_request({"job_id": job_id, "restore": "1"}, raw, env)
    config = load_config({}, {**JOB, "hidden_sizes": [8], "store_url": env["store_url"], "resume_from": job_id})
    with pytest.raises(ConfigError) as error:
        job.create_job(empty, config)
    assert error.value.field == "resume_from" and "model file holds another network" in str(error.value)
