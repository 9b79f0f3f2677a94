"""A default stacking job with its objects in a real redis-server and a real memcached (chunked blobs: the
neighbours model is larger than one chunk), and a pickle written into the real store refused."""

from __future__ import annotations

import pickle
import uuid

import pytest
from support.stacking_drive import in_process

from faasgd.stacking import flow, records, safe_format
from faasgd.stacking.config import load_stacking
from faasgd.stacking.safe_format import UnsafeObject
from faasgd.store import open_store
from faasgd.store.blobs import BLOB_CHUNK_BYTES

pytestmark = pytest.mark.integration


@pytest.fixture(params=["redis", "memcached"])
def store(request):
    server = request.getfixturevalue(f"{request.param}_server")
    with open_store(server.url, timeout_s=5.0) as store:
        yield store


def test_a_default_job_keeps_its_objects_in_the_real_store(store):
    config = load_stacking({}, {"transfer": "store", "concurrent_training": False})
    job_id = records.create_job(store, config)
    result = flow.drive(store, job_id, config, in_process(store, job_id, config))
    assert result["state"] == "done" and len(result["base_scores"]) == 4 and 0.5 < result["ensemble_score"] <= 1
    neighbours = store.get_blob(job_id, "model:3")
    assert len(neighbours) > BLOB_CHUNK_BYTES  # crossed the store in more than one chunk
    model = safe_format.load_model(neighbours, flow.shape_of(config), "model:3")
    assert model.kind == "KNeighborsRegressor"
    store.put_blob(job_id, "model:3", pickle.dumps({"x": uuid.uuid4()}))
    with pytest.raises(UnsafeObject, match="model:3: refused \\(it is a pickle\\)"):
        flow.reduce(store, job_id, config, [{"model": f"model:{i}", "predictions": f"pred:{i}"} for i in range(4)])
