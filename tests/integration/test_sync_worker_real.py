"""The synchronous worker on real stores: a real redis-server and memcached (the session's fixtures), S3 (moto,
the `s3_endpoint` fixture) and DynamoDB (moto, `dynamodb_endpoint`) give the same bits as memory://, and a worker
killed mid-round resumes to them."""

from __future__ import annotations

import numpy as np
import pytest

from faasgd.channels import configured
from faasgd.lambdaml import sync_worker
from support.sync_drive import config_of, killing_first_space, train_job, train_with_worker_1_killed

pytestmark = pytest.mark.integration


@pytest.fixture(params=["redis", "memcached", "s3", "dynamodb"])
def channel(request, monkeypatch, tmp_path):
    """(store URL, channel): the job's store on a real server, or its rounds on S3 or DynamoDB (records in memory://)."""
    if request.param in ("redis", "memcached"):
        return request.getfixturevalue(f"{request.param}_server").url, "store"
    if request.param == "dynamodb":
        monkeypatch.setenv("FAASGD_SECRETS_DIR", request.getfixturevalue("dynamodb_endpoint").write_secrets(tmp_path))
        configured._spaces.clear()
        return None, "dynamodb"
    endpoint = request.getfixturevalue("s3_endpoint")
    monkeypatch.setenv("FAASGD_SECRETS_DIR", endpoint.write_secrets(tmp_path))
    monkeypatch.setenv("s3_url", f"s3://{endpoint.bucket}/sync-worker")
    configured._spaces.clear()
    return None, "s3"


@pytest.mark.parametrize("algorithm, sync", [("grad_avg", "reduce_scatter"), ("model_avg", "reduce"),
                                             ("admm", "reduce_scatter")])
def test_real_channels_give_the_bits_of_memory(channel, algorithm, sync):
    url, where = channel
    kwargs = {"algorithm": algorithm, "sync": sync, "local_steps": 2, "max_epochs": 1}
    real_store, real_job = train_job(config_of(f"real-{algorithm}-{where}", url, channel=where, **kwargs))
    mem_store, mem_job = train_job(config_of(f"mem-{algorithm}-{where}", **kwargs))
    assert real_store.get_weights(real_job)[0].tobytes() == mem_store.get_weights(mem_job)[0].tobytes()
    result = real_store.get_record(real_job, "result")
    assert result["state"] == "done" and result["round_bytes_read"] > 0


def test_a_worker_killed_mid_round_on_a_real_channel_resumes_to_the_same_bits(channel, monkeypatch):
    url, where = channel
    config = config_of(f"killed-{where}", url, channel=where, max_epochs=1, sync="reduce_scatter")
    whole_store, whole = train_job(config_of(f"whole-{where}", sync="reduce_scatter", max_epochs=1))
    monkeypatch.setattr(sync_worker, "channel_space", killing_first_space(sync_worker.channel_space, 9))
    store, job_id = train_with_worker_1_killed(config)
    np.testing.assert_array_equal(store.get_weights(job_id)[0], whole_store.get_weights(whole)[0])
    assert store.get_record(job_id, "result")["state"] == "done"
