"""A stacking job with transfer s3, in-process, its objects in moto's S3 server and its records in a real Redis:
the same scores as transfer store, every object in the bucket and none in the store, tampered objects refused."""

from __future__ import annotations

import os
import pickle
import uuid

import pytest

from support.stacking_drive import SMALL as STACKING_SMALL
from support.stacking_drive import in_process
from faasgd.channels import configured_space
from faasgd.errors import ConfigError, StateLost
from faasgd.stacking import flow, records
from faasgd.stacking.config import load_stacking
from faasgd.stacking.safe_format import UnsafeObject
from faasgd.store import open_store
from faasgd.testing.s3_server import boto_client

pytestmark = pytest.mark.integration

SMALL = {**STACKING_SMALL, "trainers_num": 4}
OBJECTS = ["dataset", "full-model", "meta-features", "model:0", "model:1", "model:2", "model:3", "models",
           "pred:0", "pred:1", "pred:2", "pred:3"]


@pytest.fixture
def s3_function(s3_endpoint, tmp_path, monkeypatch):
    """This process as a function configured for S3: env s3_url and the secret files (FAASGD_SECRETS_DIR)."""
    prefix = "stacking-" + uuid.uuid4().hex[:8]
    monkeypatch.setenv("s3_url", f"s3://{s3_endpoint.bucket}/{prefix}")
    monkeypatch.setenv("FAASGD_SECRETS_DIR", s3_endpoint.write_secrets(tmp_path))
    return prefix


@pytest.fixture
def store(redis_server):
    with open_store(redis_server.url, timeout_s=5.0) as store:
        yield store


def run(store, body):
    config = load_stacking(os.environ, body)
    job_id = records.create_job(store, config)
    return job_id, config, flow.drive(store, job_id, config, in_process(store, job_id, config))


@pytest.mark.parametrize("concurrent", [True, False])
def test_a_job_over_s3_scores_as_over_the_store(s3_function, store, concurrent):
    job_id, config, result = run(store, {**SMALL, "transfer": "s3", "concurrent_training": concurrent})
    _, _, reference = run(store, {**SMALL, "transfer": "store", "concurrent_training": concurrent})
    assert result["state"] == "done" and result["transfer"] == "s3"
    assert result["base_scores"] == reference["base_scores"] and result["ensemble_score"] == reference["ensemble_score"]
    space = configured_space(os.environ)
    assert space.list_names(job_id) == OBJECTS
    assert all(store.get_blob(job_id, name) is None for name in OBJECTS)  # nothing went through the store
    assert records.read_status(store, job_id)["state"] == "done"
    print(f"\ns3 job {job_id}: base {result['base_scores']} ensemble {result['ensemble_score']} "
          f"phases {result['phases']}")
    assert space.delete_job(job_id) == len(OBJECTS)


def test_tampered_objects_in_s3_are_refused(s3_function, s3_endpoint, store):
    job_id, config, _ = run(store, {**SMALL, "transfer": "s3"})
    trainers = [{"model": f"model:{i}", "predictions": f"pred:{i}"} for i in range(config.trainers_num)]
    space = configured_space(os.environ)
    space.put_blob(job_id, "model:1", pickle.dumps({"x": 1}))  # a whole object with its digest: content is checked
    with pytest.raises(UnsafeObject, match="model:1: refused \\(it is a pickle\\)"):
        flow.reduce(store, job_id, config, trainers)
    boto_client(s3_endpoint.settings).put_object(Bucket=s3_endpoint.bucket, Key=f"{s3_function}/{job_id}/model:1",
                                                 Body=b"garbage without a digest")
    with pytest.raises(StateLost, match="model:1"):
        flow.reduce(store, job_id, config, trainers)
    with pytest.raises(ConfigError) as e:
        flow.reduce(store, job_id, config, [{"model": "../other/model:1", "predictions": "pred:0"}] * 4)
    assert e.value.field == "model:0"


def test_s3_without_the_functions_settings_is_a_400_before_anything_is_written(s3_endpoint, tmp_path, monkeypatch):
    monkeypatch.delenv("s3_url", raising=False)
    monkeypatch.setenv("FAASGD_SECRETS_DIR", str(tmp_path))
    for env in ({}, {"s3_url": f"s3://{s3_endpoint.bucket}/p"}, {"s3_url": "s3://Bad_Bucket/p"}):
        with pytest.raises(ConfigError) as e:
            load_stacking({**env, "FAASGD_SECRETS_DIR": str(tmp_path)}, {"transfer": "s3"})
        assert e.value.field == "transfer" and "not available" in str(e.value)
    with pytest.raises(ConfigError) as e:
        load_stacking({}, {"transfer": "s3", "s3_url": "s3://attacker-bucket/p"})
    assert e.value.field == "s3_url" and "never from a request" in str(e.value)
