"""The cnn trained by the same workers as the MLP, through the memory:// store: Downpour and grad_avg."""

import numpy as np
import pytest

from faasgd import data, job
from faasgd.job import model_file
from faasgd.config import load_config
from faasgd.errors import ConfigError
from faasgd.functions.workloads import run_worker
from faasgd.worker.invocation import Call
from faasgd.store import open_store

pytestmark = pytest.mark.usefixtures("tensorflow")  # tests/unit/model/conftest.py: imported when they run


def cnn_config(name, **overrides):
    values = {"model": "cnn", "cnn_arch": "lenet", "dataset": "synthetic", "train_samples": 660,
              "validation_samples": 60, "test_samples": 100, "batch_size": 30, "learning_rate": 0.05,
              "number_of_workers": 1, "n_fetch": 2, "n_push": 2, "max_epochs": 2, "target_accuracy": 1.0,
              "store_url": f"memory://{name}", "store_timeout_s": 1.0, "profile_hz": 0}
    values.update(overrides)
    return load_config({}, values)


def training_loss(config, weights):
    shard = data.load_shard(config.dataset, "train", 0, 1, config.train_samples, holdout=job.holdout(config)[1])
    return job.network(config).loss_and_grads(weights, shard.x, shard.y)[0]


@pytest.mark.parametrize("algorithm", ["downpour", "grad_avg"])
def test_one_worker_trains_the_cnn_through_the_store(algorithm):
    """The lenet: the synthetic set's random-pixel prototypes are no task for the mobilenet's global pooling
    (its gradients are checked on the tiny net of test_cnn_model.py, which has every layer kind)."""
    config = cnn_config(f"cnn-{algorithm}", algorithm=algorithm)
    store = open_store(config.store_url)
    job_id = job.create_job(store, config)
    initial = store.get_weights(job_id)[0].copy()
    record = run_worker(Call(config, store, job_id, 0))
    final, version = store.get_weights(job_id)
    result = store.get_record(job_id, "result")
    assert record["state"] == "finished" and result["state"] == "done", result["error"]
    assert version > 0 and final.dtype == np.float32 and final.size == initial.size
    assert training_loss(config, final) < 0.8 * training_loss(config, initial)
    assert result["final_validation_accuracy"] is not None and result["final_test_accuracy"] is not None


def test_a_cnn_jobs_model_file_reads_back_and_evaluates_to_the_reported_accuracy():
    config = cnn_config("cnn-model-file", max_epochs=1, cnn_arch="mobilenet")
    store = open_store(config.store_url)
    job_id = job.create_job(store, config)
    run_worker(Call(config, store, job_id, 0))
    found = model_file.read_model(store, job_id)
    back = model_file.from_npz(model_file.to_npz(found))
    assert back.cnn_arch == "mobilenet" and back.params.tobytes() == found.params.tobytes()
    answer = model_file.evaluate_file(back)
    assert answer["test_accuracy"] == answer["reported_test_accuracy"] == found.test_accuracy
    mlp_file = model_file.to_npz(model_file.ModelFile(**{**vars(found), "cnn_arch": ""}))
    with pytest.raises(ConfigError) as caught:  # the same params read as an MLP's do not fit its sizes
        model_file.from_npz(mlp_file)
    assert caught.value.field == "model"

